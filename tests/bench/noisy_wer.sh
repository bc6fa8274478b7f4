#!/bin/bash
# Recognition on degraded audio (issue 15): WER per condition of
# gpuspeech-transcribe (one or more builds or flag sets) and of
# pocketsphinx_batch with its defaults, on a set made here from audio on
# this machine.
#
# The set: the first N sentences of tests/data/fmllr_dev/sentences.txt,
# spoken by the flite VOICES in turn (sentence i by voice i mod #voices),
# 16 kHz 16-bit, then degraded by sox:
#   clean      as synthesised
#   farfield   reverb 50 50 100, pink noise 20 dB below the speech, 0.4 s of
#              digital silence (zeros) before it (the issue's far-field set)
#   pink20 pink10 white20 white10 brown20 brown10
#              that noise colour at that SNR, 0.4 s of zeros before
#   phone      300-3400 Hz band at 8 kHz, resampled back to 16 kHz, white
#              noise at 20 dB, 0.4 s of zeros before
# SNR is the ratio of the RMS of the speech file (as synthesised, with
# flite's short pauses) to the RMS of the noise added. Noise comes from one
# 120 s recording per colour made by `sox -R` (repeatable), each utterance
# taking a different stretch of it, so the set is the same on every run.
# Synthetic voices are not people: this is for comparing front ends with
# the same words behind each number.
#
# Usage: noisy_wer.sh WORKDIR N "VOICE..." NAME=COMMAND...
#   Each NAME=COMMAND is a column: COMMAND (split on spaces) is a
#   gpuspeech-transcribe with any flags, run as
#   COMMAND --backend cpu --search cpu --cache CACHE FILES...
#   A pocketsphinx_batch column (its defaults, -adcin yes) is always added.
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
CONDITIONS="clean farfield pink20 pink10 white20 white10 brown20 brown10 phone"
die() { echo "noisy_wer.sh: $*" >&2; exit 1; }
for t in flite sox sctk pocketsphinx_batch; do
  command -v $t >/dev/null || die "missing $t"
done
mkdir -p "$W/clean" "$W/noise" || die "cannot create $W"

# The clean set and the reference.
: >"$W/fileids"; : >"$W/ref.trn"
i=0
while read -r s && [ $i -lt "$N" ]; do
  v=${VOICES[$((i % ${#VOICES[@]}))]}
  i=$((i + 1)); id=$(printf 'utt%02d-%s' $i "$v")
  if [ ! -f "$W/clean/$id.wav" ]; then
    flite -voice "$v" -t "$s" -o "$W/tmp.wav" &&
      sox -R -D "$W/tmp.wav" -r 16000 -b 16 -c 1 "$W/clean/$id.wav" ||
      die "flite/sox failed for $id"
  fi
  echo "$id" >>"$W/fileids"
  echo "$s ($id)" >>"$W/ref.trn"
done <"$HERE/data/fmllr_dev/sentences.txt"

rms() { sox "$1" -n stat 2>&1 | awk '/RMS +amplitude/ { print $3 }'; }

for c in pink white brown; do
  [ -f "$W/noise/$c.wav" ] ||
    sox -R -n -r 16000 -b 16 -c 1 "$W/noise/$c.wav" synth 120 ${c}noise vol 0.3 ||
    die "sox could not make $c noise"
done

# degrade IN OUT COLOUR SNR_DB OFFSET_S: adds noise at the SNR, then 0.4 s
# of zeros before.
degrade() {
  local in=$1 out=$2 colour=$3 snr=$4 offset=$5 dur s_rms n_rms gain
  dur=$(soxi -D "$in")
  sox "$W/noise/$colour.wav" "$W/tmp-noise.wav" trim "$offset" "$dur" || return 1
  s_rms=$(rms "$in"); n_rms=$(rms "$W/tmp-noise.wav")
  gain=$(awk -v s="$s_rms" -v n="$n_rms" -v snr="$snr" 'BEGIN { print s / (n * 10 ^ (snr / 20)) }')
  sox -m -v 1 "$in" -v "$gain" "$W/tmp-noise.wav" -b 16 "$W/tmp-mix.wav" &&
    sox "$W/tmp-mix.wav" "$out" pad 0.4 0
}

for cond in $CONDITIONS; do
  [ "$cond" = clean ] && continue
  mkdir -p "$W/$cond"
  k=0
  while read -r id; do
    k=$((k + 1))
    out="$W/$cond/$id.wav"; in="$W/clean/$id.wav"
    [ -f "$out" ] && continue
    offset=$(awk -v k=$k 'BEGIN { print (k * 4.7) % 100 }')
    case $cond in
      farfield)
        sox "$in" "$W/tmp-rev.wav" reverb 50 50 100 &&
          degrade "$W/tmp-rev.wav" "$out" pink 20 "$offset" ;;
      phone)
        sox "$in" "$W/tmp-8k.wav" sinc 300-3400 rate 8000 && sox "$W/tmp-8k.wav" -b 16 "$W/tmp-tel.wav" rate 16000 &&
          degrade "$W/tmp-tel.wav" "$out" white 20 "$offset" ;;
      *) degrade "$in" "$out" "${cond%[0-9][0-9]}" "${cond#"${cond%[0-9][0-9]}"}" "$offset" ;;
    esac || die "could not make $out"
  done <"$W/fileids"
done

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
  pocketsphinx_batch -adcin yes -cepdir "$W/$cond" -cepext .wav -ctl "$W/fileids" -hmm "$M/en-us" \
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
