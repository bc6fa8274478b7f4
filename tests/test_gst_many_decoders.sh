#!/bin/bash
# Many decoders, one model (issue 14): eight gpudecoder elements with the
# default en-us model, dictionary and LM in one gst-launch pipeline (CPU
# backend, one LibriVox file through a tee) share one copy of the model,
# graph and LMs. Checks that
#   - the pipeline's peak resident memory is at most 1.5x that of the same
#     pipeline with one decoder;
#   - each of the eight decoders writes exactly the text the one decoder
#     writes;
#   - the bound can fail: three decoders with sharing turned off
#     (GPUSPEECH_SHARE_RESOURCES=0) peak above 1.5x one decoder.
# Prints the three peaks.
#
# Usage: test_gst_many_decoders.sh GST_LAUNCH GPUSPEECH_TRANSCRIBE CACHE_DIR
# CACHE_DIR holds the en-us graph (the WER tests' cache; compiled here
# first, by gpuspeech-transcribe, if absent). Needs GST_PLUGIN_PATH to
# find the plugin, pocketsphinx-testdata and pocketsphinx-en-us.
set -u
LAUNCH=$1
TRANSCRIBE=$2
CACHE=$3
D=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}/librivox
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
WAV=$D/sense_and_sensibility_01_austen_64kb-0870.wav
T=$(mktemp -d /tmp/gpuspeech-many-XXXXXX)
trap 'rm -rf "$T"' EXIT
for f in "$WAV" "$M/en-us/mdef" "$M/cmudict-en-us.dict" "$M/en-us.lm.bin"; do
  [ -f "$f" ] || { echo "FAIL missing $f"; exit 1; }
done

# The graph, so that the pipelines below only read it.
"$TRANSCRIBE" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
  --lm "$M/en-us.lm.bin" --cache "$CACHE" "$WAV" >"$T/transcribe.trn" 2>"$T/transcribe.log" ||
  { echo "FAIL gpuspeech-transcribe:"; tail -5 "$T/transcribe.log"; exit 1; }

# Runs gst-launch with N decoders behind a tee, decoder k's text in
# $T/$2-k.txt; prints the peak resident set in KiB (wait4's ru_maxrss).
peak_kib() {  # N, name
  local n=$1 name=$2 desc k
  desc="filesrc location=$WAV ! wavparse ! audioconvert ! audioresample ! tee name=t"
  for ((k = 0; k < n; k++)); do
    desc+=" t. ! queue ! gpufeatures ! gpudecoder name=dec$k backend=cpu hmm=$M/en-us"
    desc+=" dict=$M/cmudict-en-us.dict lm=$M/en-us.lm.bin cache-dir=$CACHE"
    desc+=" ! filesink location=$T/$name-$k.txt"
  done
  python3 - "$T/$name.log" "$LAUNCH" -q $desc <<'PY'
import os, subprocess, sys
log = open(sys.argv[1], "w")
p = subprocess.Popen(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
_, status, usage = os.wait4(p.pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(1)
print(usage.ru_maxrss)
PY
}

one=$(peak_kib 1 one) || { echo "FAIL one decoder:"; tail -5 "$T/one.log"; exit 1; }
eight=$(peak_kib 8 eight) || { echo "FAIL eight decoders:"; tail -5 "$T/eight.log"; exit 1; }
three=$(GPUSPEECH_SHARE_RESOURCES=0 peak_kib 3 unshared) ||
  { echo "FAIL three unshared decoders:"; tail -5 "$T/unshared.log"; exit 1; }
echo "peak RSS: one decoder $((one / 1024)) MiB, eight sharing $((eight / 1024)) MiB," \
  "three not sharing $((three / 1024)) MiB"

status=0
[ -s "$T/one-0.txt" ] || { echo "FAIL the one decoder wrote no text"; status=1; }
echo "text: $(tr '\n' ' ' <"$T/one-0.txt")"
for ((k = 0; k < 8; k++)); do
  cmp -s "$T/one-0.txt" "$T/eight-$k.txt" ||
    { echo "FAIL decoder $k of eight wrote other text: $(tr '\n' ' ' <"$T/eight-$k.txt")"; status=1; }
done
if [ $((eight * 2)) -gt $((one * 3)) ]; then
  echo "FAIL eight decoders peak above 1.5x one"; status=1
fi
if [ $((three * 2)) -le $((one * 3)) ]; then
  echo "FAIL three decoders without sharing stay within 1.5x one: the bound checks nothing"
  status=1
fi
[ $status -eq 0 ] && echo "PASS"
exit $status
