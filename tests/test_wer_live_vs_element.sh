#!/bin/bash
# Issue 15's headline condition for the live chain, guarded in CI: far-field
# speech (reverberation, pink noise 20 dB below the speech, 0.4 s of digital
# zeros first; tests/bench/degraded_set.sh) in long recordings, several
# sentences with 1.2 s pauses as a microphone or a stream gives them,
# decoded live by
#   filesrc ! decodebin ! audioconvert ! audioresample ! gpufeatures ! gpudecoder
# with the elements' defaults (CPU backend), against Debian's pocketsphinx
# GStreamer element with its defaults, and against gpuspeech-transcribe on
# the same degraded audio cut into its sentences (its default: each
# sentence adapted with all the sentences of its speaker, found by
# clustering). tests/bench/live_wer.sh makes the recordings and runs them;
# sclite scores them. Fails unless
#   - the live chain's WER <= the pocketsphinx element's, and
#   - the live chain's WER <= 1.2 x gpuspeech-transcribe's on the cut
#     audio,
# issue 15's two bounds, and prints the table. From 2026-12-01 to
# 2026-12-02 the second bound was not met against transcribe's default
# (then new: clustered speakers) and this test bounded the live chain by
# transcribe with each sentence its own speaker instead; gpudecoder's
# utterance-cmn (a stream's first sentence normalised with its own mean)
# took the live chain from 33.9 % to 26.6 % here, 1.16 x the clustered cut
# (docs/benchmarks.md, "Each utterance normalised again").
#
# The set: the first N sentences of tests/data/fmllr_dev/sentences.txt by
# the flite voices VOICES (default 8 sentences by slt and awb, ~100 words,
# one recording a voice). Deterministic: flite, and sox -R everywhere.
#
# CONDITION (default farfield) runs another condition of degraded_set.sh
# under the same two bounds: CI runs gsm too (the GSM 06.10 telephone
# codec, where gpudecoder's default channel library decides the first
# sentences: docs/benchmarks.md, "Channel priors chosen per stream").
#
# Usage: test_wer_live_vs_element.sh BUILD_DIR LIVE_WER_SH [CACHE_DIR [N [VOICES [CONDITION]]]]
# Needs flite, sox, sctk, gst-launch-1.0, the pocketsphinx element
# (gstreamer1.0-pocketsphinx) and pocketsphinx-en-us.
set -u
BUILD=$1
LIVE_WER=$2
CACHE=${3:-}
N=${4:-8}
VOICES=${5:-"slt awb"}
COND=${6:-farfield}
T=$(mktemp -d /tmp/gpuspeech-wer-live-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -n "$CACHE" ] || CACHE=$T/cache
fail() { echo "FAIL $*"; exit 1; }
. "$(dirname "$0")/wer_util.sh"

LIVE_WER_COLUMNS="ours element cut" DEGRADED_CONDITIONS=$COND GPUSPEECH_BUILD=$BUILD GPUSPEECH_GRAPH_CACHE=$CACHE \
  bash "$LIVE_WER" "$T/work" "$N" "$VOICES" >"$T/table" 2>"$T/log" ||
  { cat "$T/log"; fail "live_wer.sh exited with status $?"; }
cat "$T/table"
# | COND | live | pocketsphinx element | transcribe, cut |
wer_bench_row "$T/table" "$T/log" "$COND"
[ ${#WER_ROW[@]} -eq 3 ] || fail "expected three WERs: ${WER_ROW[*]}"
live=${WER_ROW[0]} element=${WER_ROW[1]} cut=${WER_ROW[2]}
status=0
if awk -v a="$live" -v b="$element" 'BEGIN { exit !(a <= b) }'; then
  echo "ok   $COND: live chain $live% <= pocketsphinx element $element%"
else
  echo "FAIL $COND: live chain $live% > pocketsphinx element $element%"; status=1
fi
if awk -v a="$live" -v b="$cut" 'BEGIN { exit !(a <= 1.2 * b) }'; then
  echo "ok   $COND: live chain $live% <= 1.2 x transcribe on the cut audio ($cut%)"
else
  echo "FAIL $COND: live chain $live% > 1.2 x transcribe on the cut audio ($cut%)"; status=1
fi
echo "note: live / cut: $(awk -v a="$live" -v b="$cut" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
exit $status
