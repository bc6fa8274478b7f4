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
# unless ours <= pocketsphinx's there too.
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

pocketsphinx_batch -adcin yes -cepdir "$D" -cepext .wav -ctl "$D/fileids" -hmm "$M/en-us" \
  -dict "$M/cmudict-en-us.dict" -lm "$M/en-us.lm.bin" -hyp "$T/ps.hyp" >"$T/ps.log" 2>&1 ||
  { echo "FAIL pocketsphinx_batch:"; tail -20 "$T/ps.log"; exit 1; }
wer_normalise "$T/ps.hyp" >"$T/ps.trn"

files=()
while read -r id; do [ -n "$id" ] && files+=("$D/$id.wav"); done <"$D/fileids"
"$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
  --lm "$M/en-us.lm.bin" --cache "$CACHE" -v "${files[@]}" >"$T/ours.hyp" 2>"$T/ours.log" ||
  { echo "FAIL gpuspeech-transcribe:"; tail -20 "$T/ours.log"; exit 1; }
grep -q "word-end rescoring" "$T/ours.log" || { echo "FAIL no word-end rescoring:"; cat "$T/ours.log"; exit 1; }
wer_normalise "$T/ours.hyp" >"$T/ours.trn"

for f in ps ours; do
  n=$(grep -c . "$T/$f.trn")
  [ "$n" -eq 5 ] || { echo "FAIL $f: $n utterances, expected 5"; cat "$T/$f.trn"; exit 1; }
done

ps_wer=$(wer_or_fail "$T/ref.trn" "$T/ps.trn")
ours_wer=$(wer_or_fail "$T/ref.trn" "$T/ours.trn")
echo "pocketsphinx_batch:"; sed 's/^/  /' "$T/ps.trn"
echo "gpuspeech-transcribe:"; sed 's/^/  /' "$T/ours.trn"
grep -E "RTF|rescor" "$T/ours.log" | tail -3
echo "WER pocketsphinx_batch: $ps_wer%  gpuspeech (cpu, rescored): $ours_wer%"
[ -n "$ps_wer" ] && [ -n "$ours_wer" ] || { echo "FAIL could not read the WERs"; exit 1; }
failed=0
if awk -v a="$ours_wer" -v b="$ps_wer" 'BEGIN { exit !(a <= b) }'; then
  echo "ok   WER $ours_wer% <= pocketsphinx's $ps_wer%"
else
  echo "FAIL WER $ours_wer% > pocketsphinx's $ps_wer%"
  failed=1
fi

# The same recordings after 0.4 s of digital silence.
mkdir -p "$T/padded"
padded=()
while read -r id; do
  [ -n "$id" ] || continue
  sox "$D/$id.wav" "$T/padded/$id.wav" pad 0.4 0 || { echo "FAIL sox pad $id"; exit 1; }
  padded+=("$T/padded/$id.wav")
done <"$D/fileids"
pocketsphinx_batch -adcin yes -cepdir "$T/padded" -cepext .wav -ctl "$D/fileids" -hmm "$M/en-us" \
  -dict "$M/cmudict-en-us.dict" -lm "$M/en-us.lm.bin" -hyp "$T/ps-padded.hyp" >"$T/ps-padded.log" 2>&1 ||
  { echo "FAIL pocketsphinx_batch (padded):"; tail -20 "$T/ps-padded.log"; exit 1; }
"$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
  --lm "$M/en-us.lm.bin" --cache "$CACHE" "${padded[@]}" >"$T/ours-padded.hyp" 2>"$T/ours-padded.log" ||
  { echo "FAIL gpuspeech-transcribe (padded):"; tail -20 "$T/ours-padded.log"; exit 1; }
for f in ps-padded ours-padded; do
  wer_normalise "$T/$f.hyp" >"$T/$f.trn"
  n=$(grep -c . "$T/$f.trn")
  [ "$n" -eq 5 ] || { echo "FAIL $f: $n utterances, expected 5"; cat "$T/$f.trn"; exit 1; }
done
ps_pad=$(wer_or_fail "$T/ref.trn" "$T/ps-padded.trn")
ours_pad=$(wer_or_fail "$T/ref.trn" "$T/ours-padded.trn")
echo "gpuspeech-transcribe, 0.4 s of zeros first:"; sed 's/^/  /' "$T/ours-padded.trn"
echo "WER with 0.4 s of zeros first: pocketsphinx_batch $ps_pad%  gpuspeech $ours_pad%"
[ -n "$ps_pad" ] && [ -n "$ours_pad" ] || { echo "FAIL could not read the padded WERs"; exit 1; }
if awk -v a="$ours_pad" -v b="$ps_pad" 'BEGIN { exit !(a <= b) }'; then
  echo "ok   zeros first: WER $ours_pad% <= pocketsphinx's $ps_pad%"
else
  echo "FAIL zeros first: WER $ours_pad% > pocketsphinx's $ps_pad%"
  failed=1
fi
exit $failed
