#!/bin/sh
# Subtitles for a video file from its own speech, two ways:
#
#   examples/subtitle-video.sh IN.webm OUT_BURNED.webm OUT_TRACK.mkv [gpudecoder properties...]
#
# 1. OUT_BURNED: the recognised words drawn onto the picture (textoverlay),
#    re-encoded as VP8 + Vorbis in WebM.
# 2. OUT_TRACK: the original streams re-encoded into Matroska with the words
#    as a subtitle track (matroskamux subtitle_%u, text/x-raw utf8), which
#    players show or hide (mpv, VLC: the "Subtitles" menu).
# For a .srt next to the video instead:
#   gst-launch-1.0 filesrc location=IN ! decodebin ! audioconvert ! audioresample \
#     ! gpufeatures ! gpudecoder output-format=srt \
#     ! filesink location=IN.srt
set -eu
if [ $# -lt 3 ]; then
  echo "usage: $0 IN OUT_BURNED.webm OUT_TRACK.mkv [gpudecoder properties...]" >&2
  exit 2
fi
in=$1 burned=$2 track=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$here/build/gst" ]; then
  GST_PLUGIN_PATH=$here/build/gst
  export GST_PLUGIN_PATH
fi
# No front-end property: the decoder's model's front end (live CMN, noise
# subtraction).
features="gpufeatures"

# The audio is split (tee): one copy is recognised, one is encoded. The
# text reaches textoverlay / the muxer after its audio (by default an
# utterance's words when it ends, from the decoder's second pass;
# cue-timing=stable pushes them as they become stable, sooner), so the
# queues in front of them are large.
big_queue="queue max-size-time=30000000000 max-size-buffers=0 max-size-bytes=0"

gst-launch-1.0 -e filesrc location="$in" ! decodebin name=d \
  d. ! $big_queue ! videoconvert ! overlay.video_sink \
  d. ! audioconvert ! audioresample ! tee name=a \
  a. ! queue ! $features ! gpudecoder output-format=text "$@" ! overlay.text_sink \
  textoverlay name=overlay valignment=bottom font-desc="Sans 24" \
  ! videoconvert ! vp8enc deadline=1 ! $big_queue ! mux. \
  a. ! $big_queue ! audioconvert ! vorbisenc ! queue ! mux. \
  webmmux name=mux ! filesink location="$burned"

gst-launch-1.0 -e filesrc location="$in" ! decodebin name=d \
  d. ! $big_queue ! videoconvert ! vp8enc deadline=1 ! mux. \
  d. ! audioconvert ! audioresample ! tee name=a \
  a. ! queue ! $features ! gpudecoder output-format=text "$@" ! $big_queue ! mux.subtitle_0 \
  a. ! $big_queue ! audioconvert ! vorbisenc ! mux. \
  matroskamux name=mux ! filesink location="$track"
