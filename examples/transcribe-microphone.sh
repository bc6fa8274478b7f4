#!/bin/sh
# Live speech recognition from the default microphone (autoaudiosrc:
# PulseAudio/PipeWire or ALSA): partial hypotheses every 300 ms, a final one
# after each pause of a second (endpoint-silence), until Ctrl-C.
#
#   examples/transcribe-microphone.sh [gpudecoder properties...]
#   examples/transcribe-microphone.sh kws=keyphrases.txt      # keyword spotting
#
# With no model properties: the installed en-us model and language model.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$here/build/gst" ]; then
  GST_PLUGIN_PATH=$here/build/gst
  export GST_PLUGIN_PATH
fi

# -e: Ctrl-C sends EOS, so the last utterance still gets its final result.
# The text on the src pad goes to the terminal too (fdsink), one line per
# group of stable words.
gst-launch-1.0 -e -m autoaudiosrc ! audioconvert ! audioresample ! \
  gpufeatures ! \
  gpudecoder partial-interval=300 endpoint-silence=1000 "$@" ! \
  fdsink fd=2 sync=false 2>&1 | grep -E 'gpudecoder, |ERROR|WARNING'
