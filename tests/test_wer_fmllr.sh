#!/bin/bash
# Two-pass fMLLR against no adaptation, by WER (issue 5): the five LibriVox
# utterances of pocketsphinx-testdata, as recorded and through a telephone-
# like channel (tests/data/make_mismatched_librivox.sh: 300-3400 Hz band,
# a spectral tilt, -10 dB), decoded by gpuspeech-transcribe (CPU backend,
# default en-us model, dictionary and LM) with --fmllr none and
# --fmllr two-pass (at its defaults: full update, one re-estimation from
# the adapted decoding), both with the word-lattice pass of transcribe's
# defaults in the final decoding, the latter with each file its own
# speaker (--no-cluster-speakers), with the speakers found by clustering
# (the default) and with all five as one speaker (they are one reader: one
# LibriVox chapter, sense_and_sensibility_01). Every hypothesis is scored by `sctk sclite`
# against the reference transcription after test_wer_librivox.sh's
# normalisation. Prints the table of WERs and fails unless, with all five
# as one speaker (about 20 s of speech: enough for a full 39 x 40
# transform),
#   - on the mismatched set, two-pass WER < no-adaptation WER, and
#   - on the clean set, two-pass WER <= no-adaptation WER,
# and the one-speaker transform was really estimated ("updated") on both,
# and on the mismatched set the clustered speakers' WER < no-adaptation WER.
#
# Usage: test_wer_fmllr.sh PATH/TO/gpuspeech-transcribe PATH/TO/make_mismatched_librivox.sh [CACHE_DIR]
# Needs sox, sctk, pocketsphinx-testdata and pocketsphinx-en-us
# (GPUSPEECH_AUDIO_DIR, GPUSPEECH_MODEL_DIR override where they are).
set -u
TOOL=$1
MAKE_MISMATCHED=$2
CACHE=${3:-}
D=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}/librivox
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
T=$(mktemp -d /tmp/gpuspeech-wer-fmllr-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -n "$CACHE" ] || CACHE=$T/cache

for f in "$D/fileids" "$D/transcription" "$M/en-us/mdef" "$M/cmudict-en-us.dict" "$M/en-us.lm.bin"; do
  [ -f "$f" ] || { echo "FAIL missing $f"; exit 1; }
done
command -v sctk >/dev/null || { echo "FAIL missing sctk (sclite)"; exit 1; }
command -v sox >/dev/null || { echo "FAIL missing sox"; exit 1; }
# wer_normalise and wer_or_fail: test_wer_librivox.sh's normalisation and
# scoring.
. "$(dirname "$0")/wer_util.sh"

wer_normalise "$D/transcription" >"$T/ref.trn"
"$MAKE_MISMATCHED" "$D" "$T/phone" || { echo "FAIL $MAKE_MISMATCHED"; exit 1; }

ids=()
while read -r id; do [ -n "$id" ] && ids+=("$id"); done <"$D/fileids"
echo "reader ${ids[*]}" >"$T/one-reader.spk2utt"

# decode NAME DIR ARGS...: transcribe DIR's five files into $T/NAME.trn.
decode() {
  local name=$1 dir=$2
  shift 2
  local files=()
  for id in "${ids[@]}"; do files+=("$dir/$id.wav"); done
  "$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
    --lm "$M/en-us.lm.bin" --cache "$CACHE" "$@" "${files[@]}" >"$T/$name.hyp" 2>"$T/$name.log" ||
    { echo "FAIL gpuspeech-transcribe ($name):"; tail -20 "$T/$name.log"; exit 1; }
  wer_normalise "$T/$name.hyp" >"$T/$name.trn"
  local n
  n=$(grep -c . "$T/$name.trn")
  [ "$n" -eq 5 ] || { echo "FAIL $name: $n utterances, expected 5"; cat "$T/$name.trn"; exit 1; }
}

declare -A W
for set in clean phone; do
  dir=$D
  [ $set = phone ] && dir=$T/phone
  decode "$set-none" "$dir" --fmllr none
  decode "$set-file" "$dir" --fmllr two-pass --no-cluster-speakers
  decode "$set-cluster" "$dir" --fmllr two-pass
  decode "$set-reader" "$dir" --fmllr two-pass --spk2utt "$T/one-reader.spk2utt"
  for cond in none file cluster reader; do W[$set-$cond]=$(wer_or_fail "$T/ref.trn" "$T/$set-$cond.trn"); done
  echo "$set, each file its own speaker:"
  grep 'fmllr speaker' "$T/$set-file.log" | sed 's/^gpuspeech-transcribe: /  /'
  echo "$set, speakers found by clustering:"
  grep 'fmllr speaker' "$T/$set-cluster.log" | sed 's/^gpuspeech-transcribe: /  /'
  echo "$set, one speaker:"
  grep 'fmllr speaker' "$T/$set-reader.log" | sed 's/^gpuspeech-transcribe: /  /'
done
for set in clean phone; do
  for cond in none reader; do
    echo "$set $cond:"
    sed 's/^/  /' "$T/$set-$cond.trn"
  done
done
echo "WER (%)                 no adaptation   two-pass, per file   two-pass, clustered   two-pass, one speaker"
for set in clean phone; do
  printf '%-22s  %13s   %18s   %19s   %21s\n' "$set" "${W[$set-none]}" "${W[$set-file]}" \
    "${W[$set-cluster]}" "${W[$set-reader]}"
done

failed=0
for key in "${!W[@]}"; do
  [ -n "${W[$key]}" ] || { echo "FAIL could not read the WER of $key"; exit 1; }
done
for set in clean phone; do
  if grep -q 'fmllr speaker reader: 5 file(s), .*: updated' "$T/$set-reader.log"; then
    echo "ok   $set: the one-speaker transform was estimated"
  else
    echo "FAIL $set: no one-speaker transform: $(grep 'fmllr speaker' "$T/$set-reader.log")"
    failed=1
  fi
done
wer_expect "mismatched channel: two-pass WER" "${W[phone-reader]}" "<" "${W[phone-none]}" \
  "without adaptation"
wer_expect "clean: two-pass WER" "${W[clean-reader]}" "<=" "${W[clean-none]}" "without adaptation"
wer_expect "mismatched channel: two-pass WER, speakers clustered" "${W[phone-cluster]}" "<" "${W[phone-none]}" \
  "without adaptation"
exit $failed
