#!/bin/sh
# The main job of this stage of gpuspeech: build, then run a GStreamer
# pipeline that turns a speech recording into the features of Debian's
# pocketsphinx en-us acoustic model, on the best backend this machine has
# (backend=auto: CUDA, else an OpenCL GPU, else the CPU), and show them.
#
#   sh tools/demo.sh [AUDIO_FILE]
#
# AUDIO_FILE defaults to a LibriVox recording from pocketsphinx-testdata.
set -eu
cd "$(dirname "$0")/.."
audio=${1:-/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav}
model=/usr/share/pocketsphinx/model/en-us/en-us

[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

out=$(mktemp /tmp/gpuspeech-demo.XXXXXX.feat)
trap 'rm -f "$out"' EXIT
echo "== gst-launch-1.0 ... ! gpufeatures backend=auto feat-params=$model/feat.params ! filesink"
GST_PLUGIN_PATH=$PWD/build/gst gst-launch-1.0 -m \
  filesrc location="$audio" ! decodebin ! audioconvert ! audioresample ! \
  gpufeatures backend=auto feat-params="$model/feat.params" ! \
  filesink location="$out" 2>&1 |
  grep -E 'gpufeatures-(backend|utterance)|ERROR|error' || true

# The feature file is raw float32 frames; the caps say dim (39 here:
# 13 cepstra + deltas + accelerations after batch CMN, as the model wants).
python3 - "$out" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
dim = 39
frames = len(data) // (4 * dim)
vals = struct.unpack(f"<{frames * dim}f", data[: frames * dim * 4])
print(f"== {frames} frames of {dim} features ({frames / 100:.2f} s of speech at 100 frames/s)")
for t in (0, frames // 2, frames - 1):
    row = vals[t * dim : t * dim + 13]
    print(f"frame {t:5d}  c0..c12: " + " ".join(f"{v:7.2f}" for v in row))
PY
echo "== the same file with gpuspeech-features (all backends it can open):"
./build/tools/gpuspeech-features --list-backends
