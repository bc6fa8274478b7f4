#!/bin/sh
# Speech features from any audio file GStreamer can decode, written as raw
# float32 frames (docs/feature-caps.md says how to read them).
#
#   examples/features-from-file.sh IN OUT [gpufeatures properties...]
#
# e.g. the front end of Debian's pocketsphinx en-us model, with live CMN:
#   examples/features-from-file.sh speech.wav speech.feat \
#       feat-params=/usr/share/pocketsphinx/model/en-us/en-us/feat.params cmn=live
#
# Without an installed plugin, point GST_PLUGIN_PATH at a build's gst/
# folder; by default this script uses ./build/gst when it exists.
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 IN OUT [gpufeatures properties...]" >&2
  exit 2
fi
in=$1
out=$2
shift 2

here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$here/build/gst" ]; then
  GST_PLUGIN_PATH=$here/build/gst
  export GST_PLUGIN_PATH
fi

# decodebin: any container/codec; audioconvert + audioresample: whatever
# rate and channels the file has become what gpufeatures is configured for.
# -m prints the element messages: which backend was used, and per utterance
# how many frames were written.
exec gst-launch-1.0 -m filesrc location="$in" ! decodebin ! audioconvert ! \
  audioresample ! gpufeatures "$@" ! filesink location="$out"
