#!/bin/bash
# Accuracy against pocketsphinx (issue 3's bound): the five LibriVox
# utterances of pocketsphinx-testdata decoded by pocketsphinx_batch and by
# gpuspeech-transcribe (CPU backend, default en-us model, dictionary and
# LM, word-end rescoring on), both scored by `sctk sclite` against the
# reference transcription after the same normalisation (lower case, no
# punctuation, <s> </s> and ids' scores dropped). Prints both WERs and
# fails unless ours <= pocketsphinx's. Then the same five recordings with
# 0.4 s of digital silence (exact zeros, sox pad) before each, where a
# scorer without pocketsphinx's density floor inserts a word over the zeros
# in every utterance (docs/acoustic-scoring.md, "Density floor"): fails
# unless ours <= pocketsphinx's there too. gpuspeech-transcribe runs with
# its defaults (two-pass fMLLR, the word-lattice pass); one decoding
# (--one-pass) and the lattice pass alone (--fmllr none) are held to the
# same bar on the clean files; the defaults and the lattice pass may not
# lose to one decoding there, and the pass's own word cost must change its
# lines; two-pass fMLLR whose every speaker keeps the identity transform
# must give --fmllr none's lines exactly.
#
# Usage: test_wer_librivox.sh PATH/TO/gpuspeech-transcribe [CACHE_DIR]
# CACHE_DIR keeps the compiled graph between runs (the first build of the
# en-us graph takes minutes). Needs pocketsphinx (pocketsphinx_batch),
# sctk, sox, pocketsphinx-testdata and pocketsphinx-en-us
# (GPUSPEECH_AUDIO_DIR, GPUSPEECH_MODEL_DIR override where they are).
set -u
TOOL=$1
CACHE=${2:-}
D=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}/librivox
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
T=$(mktemp -d /tmp/gpuspeech-wer-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -n "$CACHE" ] || CACHE=$T/cache

for f in "$D/fileids" "$D/transcription" "$M/en-us/mdef" "$M/cmudict-en-us.dict" "$M/en-us.lm.bin"; do
  [ -f "$f" ] || { echo "FAIL missing $f"; exit 1; }
done
command -v pocketsphinx_batch >/dev/null || { echo "FAIL missing pocketsphinx_batch"; exit 1; }
command -v sctk >/dev/null || { echo "FAIL missing sctk (sclite)"; exit 1; }
command -v sox >/dev/null || { echo "FAIL missing sox"; exit 1; }
# wer_normalise (lower case, punctuation and <s> </s> <sil> [noise]
# dropped, "(id)" kept) and wer_or_fail (sclite).
. "$(dirname "$0")/wer_util.sh"

wer_normalise "$D/transcription" >"$T/ref.trn"

# decode_both NAME DIR: pocketsphinx_batch and gpuspeech-transcribe (CPU,
# -v) on DIR's copies of the five utterances; writes $T/ps-NAME.trn and
# $T/ours-NAME.trn (normalised, five lines each) and the logs beside them.
decode_both() {
  local name=$1 dir=$2 files=() id f n
  while read -r id; do [ -n "$id" ] && files+=("$dir/$id.wav"); done <"$D/fileids"
  # The samples after the WAV header, as gpuspeech reads them (wer_util.sh).
  local hdr
  hdr=$(wav_header_bytes "${files[@]}") || { echo "FAIL WAV headers ($name)"; exit 1; }
  pocketsphinx_batch -adcin yes -adchdr "$hdr" -cepdir "$dir" -cepext .wav -ctl "$D/fileids" -hmm "$M/en-us" \
    -dict "$M/cmudict-en-us.dict" -lm "$M/en-us.lm.bin" -hyp "$T/ps-$name.hyp" >"$T/ps-$name.log" 2>&1 ||
    { echo "FAIL pocketsphinx_batch ($name):"; tail -20 "$T/ps-$name.log"; exit 1; }
  "$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
    --lm "$M/en-us.lm.bin" --cache "$CACHE" -v "${files[@]}" >"$T/ours-$name.hyp" 2>"$T/ours-$name.log" ||
    { echo "FAIL gpuspeech-transcribe ($name):"; tail -20 "$T/ours-$name.log"; exit 1; }
  grep -q "word-end rescoring" "$T/ours-$name.log" ||
    { echo "FAIL no word-end rescoring ($name):"; cat "$T/ours-$name.log"; exit 1; }
  for f in ps-$name ours-$name; do
    wer_normalise "$T/$f.hyp" >"$T/$f.trn"
    n=$(grep -c . "$T/$f.trn")
    [ "$n" -eq 5 ] || { echo "FAIL $f: $n utterances, expected 5"; cat "$T/$f.trn"; exit 1; }
  done
}

# check_not_worse WHAT OURS PS: fails the test (failed=1) unless OURS <= PS.
failed=0
check_not_worse() {
  [ -n "$2" ] && [ -n "$3" ] || { echo "FAIL could not read the WERs ($1)"; exit 1; }
  wer_expect "$1: WER" "$2" "<=" "$3" "(pocketsphinx's)"
}

decode_both clean "$D"
ps_wer=$(wer_or_fail "$T/ref.trn" "$T/ps-clean.trn")
ours_wer=$(wer_or_fail "$T/ref.trn" "$T/ours-clean.trn")
echo "pocketsphinx_batch:"; sed 's/^/  /' "$T/ps-clean.trn"
echo "gpuspeech-transcribe:"; sed 's/^/  /' "$T/ours-clean.trn"
grep -E "RTF|rescor" "$T/ours-clean.log" | tail -3
echo "WER pocketsphinx_batch: $ps_wer%  gpuspeech (cpu, rescored): $ours_wer%"
check_not_worse "clean" "$ours_wer" "$ps_wer"

# The same recordings after 0.4 s of digital silence.
mkdir -p "$T/padded"
while read -r id; do
  [ -n "$id" ] || continue
  sox "$D/$id.wav" "$T/padded/$id.wav" pad 0.4 0 || { echo "FAIL sox pad $id"; exit 1; }
done <"$D/fileids"
decode_both padded "$T/padded"
ps_pad=$(wer_or_fail "$T/ref.trn" "$T/ps-padded.trn")
ours_pad=$(wer_or_fail "$T/ref.trn" "$T/ours-padded.trn")
echo "gpuspeech-transcribe, 0.4 s of zeros first:"; sed 's/^/  /' "$T/ours-padded.trn"
echo "WER with 0.4 s of zeros first: pocketsphinx_batch $ps_pad%  gpuspeech $ours_pad%"
check_not_worse "zeros first" "$ours_pad" "$ps_pad"

# The defaults above are two-pass fMLLR with the word-lattice pass at its
# own word cost. Lighter configurations held to the same bar on the clean
# files: one decoding (--one-pass: what the gpudecoder element does), the
# lattice pass without fMLLR (--fmllr none), and that pass at the search's
# word cost (--lattice-wip 0.65). Then two-pass fMLLR with a minimum of
# statistics that no file reaches: every speaker keeps the identity
# transform, and its result is pass 1's search with the lattice pass run on
# it after all (not a second decoding), so line for line --fmllr none's.
# (-v: the per-speaker reports, which say so; --no-cluster-speakers: each
# file its own speaker, where the pass-1 result is taken.)
files=()
while read -r id; do [ -n "$id" ] && files+=("$D/$id.wav"); done <"$D/fileids"
decode_clean() {  # NAME FLAGS...: decodes the clean files into $T/ours-NAME.hyp, its WER on stdout
  local name=$1
  shift
  "$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
    --lm "$M/en-us.lm.bin" --cache "$CACHE" "$@" "${files[@]}" >"$T/ours-$name.hyp" \
    2>"$T/ours-$name.log" || { echo "FAIL gpuspeech-transcribe $*:" >&2; tail -20 "$T/ours-$name.log" >&2; exit 1; }
  wer_normalise "$T/ours-$name.hyp" >"$T/ours-$name.trn"
  wer_or_fail "$T/ref.trn" "$T/ours-$name.trn"
}
for config in "onepass --one-pass" "lattice --fmllr none" "graphwip --fmllr none --lattice-wip 0.65"; do
  name=${config%% *}
  wer=$(decode_clean $config) || { echo "$wer"; exit 1; }
  eval "ours_${name}=$wer"
  echo "gpuspeech-transcribe ${config#* }:"; sed 's/^/  /' "$T/ours-$name.trn"
  echo "WER with ${config#* }: pocketsphinx_batch $ps_wer%  gpuspeech $wer%"
  check_not_worse "$name" "$wer" "$ps_wer"
done
# check_le WHAT A B: fails the test unless A <= B.
check_le() { wer_expect "$1:" "$2" "<=" "$3" ""; }
# What each default buys on these real recordings (measured 18.3 % with
# both, 19.7 % with the lattice pass alone, 23.9 % in one decoding): neither
# may cost accuracy here.
check_le "the defaults against --one-pass" "$ours_wer" "$ours_onepass"
check_le "the lattice pass (--fmllr none) against --one-pass" "$ours_lattice" "$ours_onepass"
# The pass's own word cost must be in force: at the search's (0.65) the
# words differ (measured 23.9 %, with insertions).
if cmp -s "$T/ours-lattice.hyp" "$T/ours-graphwip.hyp"; then
  echo "FAIL the lattice pass gives the same lines at --lattice-wip 0.65 as at its default"; failed=1
else
  echo "ok   the lattice pass's word cost changes its lines (--lattice-wip 0.65: $ours_graphwip%)"
fi
out=$(decode_clean identity -v --no-cluster-speakers --fmllr-min-frames 1000000) || { echo "$out"; exit 1; }
kept=$(grep -c 'fmllr speaker .*too few frames, identity kept' "$T/ours-identity.log")
if [ "$kept" -eq "${#files[@]}" ] && diff -u "$T/ours-lattice.hyp" "$T/ours-identity.hyp" >"$T/identity.diff"; then
  echo "PASS two-pass fMLLR, identity kept for all ${#files[@]} files: --fmllr none's lines"
else
  echo "FAIL two-pass fMLLR with the identity kept ($kept of ${#files[@]} reported) differs from --fmllr none:"
  cat "$T/identity.diff"
  failed=1
fi
exit $failed
