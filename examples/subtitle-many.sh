#!/bin/sh
# One process subtitling many inputs at once, the media-server shape: each
# input (a file or any URI uridecodebin plays: http://, rtsp://, ...) gets
# its own gpufeatures ! gpudecoder branch and its own subtitle file, all in
# one gst-launch pipeline. The decoders share one copy of the model, graph
# and language model (docs/gpudecoder.md, "Many decoders in one process"),
# so N inputs cost little more memory than one.
#
#   examples/subtitle-many.sh OUT_DIR srt|webvtt INPUT... [-- gpudecoder properties...]
#
# OUT_DIR/NAME.srt (or .vtt) per input, NAME its base name without the
# extension (inputs with the same name overwrite each other). For live
# network sources, add is-live handling as your server needs; for files the
# pipeline ends when the last input ends. With several GPUs,
# `-- device-id=-1` spreads the decoders over them.
set -eu
if [ $# -lt 3 ]; then
  echo "usage: $0 OUT_DIR srt|webvtt INPUT... [-- gpudecoder properties...]" >&2
  exit 2
fi
out=$1 format=$2
shift 2
case $format in
  srt) ext=srt ;;
  webvtt) ext=vtt ;;
  *) echo "$0: format must be srt or webvtt, got '$format'" >&2; exit 2 ;;
esac
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$here/build/gst" ]; then
  GST_PLUGIN_PATH=$here/build/gst
  export GST_PLUGIN_PATH
fi

# Inputs up to "--", then the decoder's properties.
inputs="" props=""
seen_dashes=no
for a in "$@"; do
  if [ "$seen_dashes" = yes ]; then props="$props $a"
  elif [ "$a" = "--" ]; then seen_dashes=yes
  else inputs="$inputs
$a"
  fi
done

# One branch per input. A plain path becomes a file:// URI.
pipeline=""
n=0
while IFS= read -r in; do
  [ -n "$in" ] || continue
  case $in in
    *://*) uri=$in ;;
    /*) uri="file://$in" ;;
    *) uri="file://$PWD/$in" ;;
  esac
  name=$(basename "$in"); name=${name%.*}
  [ -e "$in" ] || case $in in *://*) ;; *) echo "$0: no such file: $in" >&2; exit 1 ;; esac
  pipeline="$pipeline uridecodebin uri=\"$uri\" caps=audio/x-raw ! audioconvert ! audioresample"
  pipeline="$pipeline ! gpufeatures ! gpudecoder output-format=$format $props"
  pipeline="$pipeline ! filesink location=\"$out/$name.$ext\""
  n=$((n + 1))
done <<EOF_INPUTS
$inputs
EOF_INPUTS
[ $n -gt 0 ] || { echo "$0: no inputs" >&2; exit 2; }
echo "$0: $n inputs, one process" >&2
eval gst-launch-1.0 -q -e $pipeline
