#!/bin/sh
# Transcribes any audio (or video) file GStreamer can decode; prints the
# gpudecoder messages (partial and final hypotheses, word times).
#
#   examples/transcribe-file.sh IN [gpudecoder properties...]
#   examples/transcribe-file.sh speech.wav jsgf=/usr/share/pocketsphinx/test/data/goforward.gram
#
# With no model properties: the installed en-us model and language model
# (the first run compiles the graph, about 4 minutes; cached after that).
# Without an installed plugin, point GST_PLUGIN_PATH at a build's gst/
# folder; by default this script uses ./build/gst when it exists.
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 IN [gpudecoder properties...]" >&2
  exit 2
fi
in=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$here/build/gst" ]; then
  GST_PLUGIN_PATH=$here/build/gst
  export GST_PLUGIN_PATH
fi

# decodebin + audioconvert + audioresample: whatever the file holds becomes
# 16 kHz mono. gpufeatures with no front-end property takes the decoder's
# model's front end, with live CMN (partial results while the file plays)
# and noise subtraction, as pocketsphinx does.
gst-launch-1.0 -m filesrc location="$in" ! decodebin ! audioconvert ! \
  audioresample ! gpufeatures ! \
  gpudecoder "$@" ! fakesink 2>&1 | grep -E '^(Got message.*gpudecoder|ERROR|WARNING)'
