#!/bin/bash
# Clipped audio, guarded in CI (issue 15): sentences pushed 12 dB past full
# scale (tests/bench/degraded_set.sh, "clipped"), decoded by
# gpuspeech-transcribe with its defaults, with --no-declip, and by
# pocketsphinx_batch with its defaults; sclite scores them
# (tests/bench/noisy_wer.sh makes the set and runs the three). Fails unless
#   - the defaults' WER <= pocketsphinx_batch's (issue 15's "done" for this
#     condition), and
#   - the defaults' WER <= 0.6 x --no-declip's: restoring the peaks
#     (common/features/declipper.h) is what wins it (20 sentences, four
#     voices: 19.4 against 49.6 %, docs/benchmarks.md).
# and prints the table.
#
# The set: the first N sentences of tests/data/fmllr_dev/sentences.txt by
# the flite voices VOICES (default 8 by slt and awb). Deterministic: flite,
# and sox -R everywhere.
#
# Usage: test_wer_clipped.sh TRANSCRIBE NOISY_WER_SH [CACHE_DIR [N [VOICES]]]
# Needs flite, sox, sctk, pocketsphinx_batch and pocketsphinx-en-us.
set -u
TRANSCRIBE=$1
NOISY_WER=$2
CACHE=${3:-}
N=${4:-8}
VOICES=${5:-"slt awb"}
T=$(mktemp -d /tmp/gpuspeech-wer-clipped-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -n "$CACHE" ] || CACHE=$T/cache
fail() { echo "FAIL $*"; exit 1; }
. "$(dirname "$0")/wer_util.sh"

DEGRADED_CONDITIONS=clipped GPUSPEECH_GRAPH_CACHE=$CACHE \
  bash "$NOISY_WER" "$T/work" "$N" "$VOICES" "defaults=$TRANSCRIBE" \
  "nodeclip=$TRANSCRIBE --no-declip" >"$T/table" 2>"$T/log" ||
  { cat "$T/log"; fail "noisy_wer.sh exited with status $?"; }
cat "$T/table"
# | clipped | defaults | nodeclip | pocketsphinx_batch |
wer_bench_row "$T/table" "$T/log" clipped
ours=${WER_ROW[0]} plain=${WER_ROW[1]} ps=${WER_ROW[2]}
failed=0
wer_expect "clipped: gpuspeech-transcribe" "$ours" "<=" "$ps" "(pocketsphinx_batch)"
status=$failed
if awk -v a="$ours" -v b="$plain" 'BEGIN { exit !(a <= 0.6 * b) }'; then
  echo "ok   clipped: $ours% <= 0.6 x --no-declip's $plain%"
else
  echo "FAIL clipped: $ours% > 0.6 x --no-declip's $plain%: declipping no longer wins it"; status=1
fi
exit $status
