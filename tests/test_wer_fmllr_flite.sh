#!/bin/bash
# Two-pass fMLLR by WER on more words than the LibriVox set's 71: the first
# 10 sentences of tests/data/fmllr_dev/sentences.txt spoken by four flite
# voices (awb, rms, slt, kal16; each voice one speaker, 536 words), as
# synthesised and through the telephone-like channel of
# tests/data/make_mismatched_librivox.sh, decoded by gpuspeech-transcribe
# (CPU backend, default en-us model and LM) without adaptation and with
# --fmllr two-pass at its defaults, scored by `sctk sclite`
# (tests/bench/fmllr_dev_wer.sh does the work). Fails unless two-pass
# lowers the WER on the telephone channel and does not raise it as
# synthesised. Synthetic voices are not people (docs/transcribe.md).
#
# Usage: test_wer_fmllr_flite.sh PATH/TO/gpuspeech-transcribe PATH/TO/fmllr_dev_wer.sh [CACHE_DIR]
# Needs flite, sox, sctk and pocketsphinx-en-us.
set -u
TOOL=$1
DEV=$2
CACHE=${3:-}
for c in flite sox sctk; do command -v $c >/dev/null || { echo "FAIL missing $c"; exit 1; }; done
. "$(dirname "$0")/wer_util.sh"
T=$(mktemp -d /tmp/gpuspeech-wer-flite-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -n "$CACHE" ] && export GPUSPEECH_GRAPH_CACHE=$CACHE
"$DEV" "$TOOL" "$T/set" 10 "awb rms slt kal16" none full >"$T/out" 2>&1
cat "$T/out"
wer() { awk -v s="$1" -v c="$2" '$1 == s && $2 == c && $3 == "WER" { print $4 }' "$T/out"; }
failed=0
for set in clean phone; do
  none=$(wer $set none) two=$(wer $set full)
  if [ -z "$none" ] || [ -z "$two" ]; then echo "FAIL $set: no WER read"; failed=1; continue; fi
  if [ $set = phone ]; then op='<'; else op='<='; fi
  wer_expect "$set: two-pass WER" "$two" "$op" "$none" "without adaptation"
done
exit $failed
