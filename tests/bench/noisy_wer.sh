#!/bin/bash
# Recognition on degraded audio (issue 15): WER per condition of
# gpuspeech-transcribe (one or more builds or flag sets) and of
# pocketsphinx_batch with its defaults, on a set made here from audio on
# this machine.
#
# The set: the first N sentences of tests/data/fmllr_dev/sentences.txt,
# spoken by the VOICES in turn (flite voices, or espeak-NAME for
# espeak-ng's: degraded_set.sh's make_clean_set), under each condition of
# tests/bench/degraded_set.sh (clean, far field, pink, white and brown
# noise at 20 and 10 dB, a telephone band), each utterance with 0.4 s of
# digital silence before it.
# Synthetic voices are not people: this is for comparing front ends with
# the same words behind each number.
#
# Usage: noisy_wer.sh WORKDIR N "VOICE..." NAME=COMMAND...
#   NOISY_FIRST=K (default 1): use sentences K..N only, for a development
#   set held out from the usual first 20 (for example K=21 with N=40).
#   NOISY_SOURCE=librivox: the clean set is the real speech of
#   pocketsphinx-testdata's five LibriVox utterances (71 words, one
#   reader) instead of flite sentences; N and VOICES are then ignored
#   (GPUSPEECH_AUDIO_DIR overrides where the test data is).
#   Each NAME=COMMAND is a column: COMMAND (split on spaces) is a
#   gpuspeech-transcribe with any flags, run as
#   COMMAND --backend cpu --search cpu --cache CACHE FILES...
#   A pocketsphinx_batch column (its defaults, -adcin yes, and -adchdr
#   the WAV header's size, so that it decodes the same samples) is always
#   added. Before 2026-11-29 the header was decoded as audio (see
#   docs/benchmarks.md, "The WAV header pocketsphinx_batch decoded").
# Both are scored by `sctk sclite` after the normalisation of
# tests/wer_util.sh (as in test_wer_librivox.sh). Prints a Markdown table: WER % per condition.
# Not part of the test suite (minutes of CPU decoding).
set -u
[ $# -ge 4 ] || { echo "usage: noisy_wer.sh WORKDIR N \"VOICE...\" NAME=COMMAND..." >&2; exit 2; }
W=$1 N=$2 VOICES=($3)
shift 3
SYSTEMS=("$@")
HERE=$(cd "$(dirname "$0")/.." && pwd)
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
CACHE=${GPUSPEECH_GRAPH_CACHE:-$HOME/.cache/gpuspeech}
. "$HERE/bench/degraded_set.sh"
CONDITIONS=$DEGRADED_CONDITIONS
for t in flite sox sctk pocketsphinx_batch; do
  command -v $t >/dev/null || degraded_die "missing $t"
done

if [ "${NOISY_SOURCE:-flite}" = librivox ]; then
  make_librivox_set "${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}/librivox"
  N=$(grep -c . "$W/fileids"); VOICES=(librivox)
else
  make_clean_set "$N" "${VOICES[@]}"
fi
FIRST=${NOISY_FIRST:-1}
if [ "$FIRST" -gt 1 ]; then  # keep sentences FIRST..N (ids uttII-VOICE count from 1)
  awk -v f="$FIRST" 'NR >= f' "$W/fileids" >"$W/fileids.kept" && mv "$W/fileids.kept" "$W/fileids"
  awk -v f="$FIRST" 'NR >= f' "$W/ref.trn" >"$W/ref.kept" && mv "$W/ref.kept" "$W/ref.trn"
fi
make_noises
degrade_all "$W/clean" "$W" 4.7 100 $(cat "$W/fileids")

. "$HERE/wer_util.sh"
wer_normalise "$W/ref.trn" >"$W/ref.norm"

header="| condition |"; rule="| --- |"
for sys in "${SYSTEMS[@]}"; do header="$header ${sys%%=*} |"; rule="$rule ---: |"; done
header="$header pocketsphinx_batch |"; rule="$rule ---: |"
rows=()
for cond in $CONDITIONS; do
  row="| $cond |"
  files=()
  while read -r id; do files+=("$W/$cond/$id.wav"); done <"$W/fileids"
  for sys in "${SYSTEMS[@]}"; do
    name=${sys%%=*}; cmd=(${sys#*=})
    hyp="$W/$cond.$name.hyp"
    "${cmd[@]}" --backend cpu --search cpu --cache "$CACHE" --hmm "$M/en-us" \
      --dict "$M/cmudict-en-us.dict" --lm "$M/en-us.lm.bin" "${files[@]}" >"$hyp" 2>"$hyp.log" ||
      { echo "noisy_wer.sh: $name failed on $cond:" >&2; tail -3 "$hyp.log" >&2; }
    wer_normalise "$hyp" >"$hyp.trn"
    row="$row $(wer_percent "$W/ref.norm" "$hyp.trn" || echo "?") |"
  done
  hyp="$W/$cond.pocketsphinx.hyp"
  # Its samples start after the WAV header (wer_util.sh, wav_header_bytes).
  hdr=$(wav_header_bytes "${files[@]}") || degraded_die "$cond: WAV headers"
  pocketsphinx_batch -adcin yes -adchdr "$hdr" -cepdir "$W/$cond" -cepext .wav -ctl "$W/fileids" -hmm "$M/en-us" \
    -dict "$M/cmudict-en-us.dict" -lm "$M/en-us.lm.bin" -hyp "$hyp" >"$hyp.log" 2>&1 ||
    { echo "noisy_wer.sh: pocketsphinx_batch failed on $cond:" >&2; tail -3 "$hyp.log" >&2; }
  wer_normalise "$hyp" >"$hyp.trn"
  row="$row $(wer_percent "$W/ref.norm" "$hyp.trn" || echo "?") |"
  rows+=("$row")
  echo "$row" >&2
done
words=$(awk '{ n += NF - 1 } END { print n }' "$W/ref.norm")
echo "WER % ($N utterances, $words words, voices: ${VOICES[*]})"
echo "$header"; echo "$rule"
printf '%s\n' "${rows[@]}"
