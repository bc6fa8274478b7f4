#!/bin/bash
# One run on a GPU machine (Ubuntu 24.04, CUDA, PyTorch + torchaudio, cmake,
# ninja; no meson, gtest or GStreamer, no network): build with the CUDA
# backend, run the test suites with cuda required, generate the
# torchaudio Kaldi references, and benchmark against torchaudio's MFCC.
#
# Carried from the checkout (ignored by git):
#   .debs/meson_*.deb  Debian's meson, used when the machine has none
#   .gtest-src/        googletest sources (Debian's /usr/src/googletest)
#   .refaudio/         goforward.raw and librivox/*.wav from
#                      /usr/share/pocketsphinx/test/data
# Writes logs and results under $OUT (default /tmp/gpuspeech-out).
#
# usage: tests/gpu/device_run.sh [all|build|test|refs|bench|profile]...
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/gpuspeech-out}
mkdir -p "$OUT"
BUILD=build-device
STEPS=${*:-all}
export GPUSPEECH_AUDIO_DIR=$ROOT/.refaudio
# .refmodel/: /usr/share/pocketsphinx/model/en-us (en-us/ and cmudict).
export GPUSPEECH_MODEL_DIR=$ROOT/.refmodel
status=0

want() { [[ " $STEPS " == *" all "* || " $STEPS " == *" $1 "* ]]; }
note() { echo "=== $* ($(date +%T))"; }

find_meson() {
  if command -v meson >/dev/null 2>&1; then MESON=(meson)
  elif python3 -c 'import mesonbuild' 2>/dev/null; then MESON=(python3 -m mesonbuild.mesonmain)
  else
    rm -rf /tmp/meson-deb && dpkg -x .debs/meson_*.deb /tmp/meson-deb || return 1
    export PYTHONPATH=/tmp/meson-deb/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
    MESON=(python3 /tmp/meson-deb/usr/bin/meson)
  fi
  "${MESON[@]}" --version
}

if want build; then
  note "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  /usr/local/cuda/bin/nvcc --version | tail -2
  g++ --version | head -1
  find_meson || { echo "no meson"; exit 1; }
  if [ ! -f /usr/local/lib/libgtest.a ] && [ ! -f /usr/local/lib64/libgtest.a ]; then
    note "googletest"
    cmake -S .gtest-src -B /tmp/gtest-build -G Ninja -DBUILD_GMOCK=OFF \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr/local \
      -DCMAKE_POSITION_INDEPENDENT_CODE=ON >"$OUT/gtest-build.log" 2>&1 &&
      cmake --build /tmp/gtest-build >>"$OUT/gtest-build.log" 2>&1 &&
      cmake --install /tmp/gtest-build >>"$OUT/gtest-build.log" 2>&1 ||
      { echo "googletest build failed"; tail -20 "$OUT/gtest-build.log"; }
  fi
  note "configure + build"
  [ -d $BUILD ] || "${MESON[@]}" setup $BUILD -Dgstreamer=disabled -Dopencl=disabled \
    -Dcuda=enabled -Dtests=enabled -Dfuzzers=disabled -Dbuildtype=release \
    >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  # -k 0: build every target that can be built, so one broken target
  # does not hide the results of the others; the failure is still reported.
  ninja -k 0 -C $BUILD >>"$OUT/build.log" 2>&1 || { status=1; echo "BUILD FAILED (continuing)";
    grep -B2 -A12 -m3 'error' "$OUT/build.log"; }
  grep -c warning "$OUT/build.log" | sed 's/^/compiler warnings: /'
fi

if want refs; then
  note "Kaldi references (torchaudio)"
  python3 tests/data/kaldi/gen_kaldi_refs.py .refaudio tests/data/kaldi /tmp/kaldi-debug ||
    status=1
  tar czf "$OUT/kaldi_refs.tar.gz" -C tests/data/kaldi . -C /tmp kaldi-debug
fi

if want test; then
  note "tests (cuda required)"
  find_meson >/dev/null
  GPUSPEECH_REQUIRE_BACKENDS=cuda "${MESON[@]}" test -C $BUILD --no-rebuild --print-errorlogs \
    --num-processes 4 >"$OUT/tests.log" 2>&1 || status=1
  grep -E '^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:|^Timeout:' "$OUT/tests.log"
  cp $BUILD/meson-logs/testlog.txt "$OUT/testlog.txt" 2>/dev/null
  grep -hE '^\[ .* \] ' $BUILD/meson-logs/testlog.txt | grep -E 'cuda' | head -60
fi

if want bench; then
  note "benchmark: gpuspeech-bench, then torchaudio, same machine"
  B=$BUILD/tools/gpuspeech-bench
  $B features --backend all --utts 512 --seconds 30 --reps 20 || status=1
  echo "--- the same with cuFFT + a separate power kernel (GPUSPEECH_CUDA_FFT=cufft)"
  GPUSPEECH_CUDA_FFT=cufft $B features --backend cuda --utts 512 --seconds 30 --reps 20 || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --warps 8 || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour kaldi --kind fbank || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour kaldi --kind plp || status=1
  PYTHONUNBUFFERED=1 python3 tests/bench/torchaudio_mfcc.py --utts 512 --seconds 30 --reps 20 || status=1
  echo "--- gpuspeech again after torchaudio (run-to-run spread)"
  $B features --backend cuda --utts 512 --seconds 30 --reps 20 || status=1
fi

if want profile; then
  note "per-kernel times (ncu, 128 x 30 s)"
  timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum \
    --print-summary per-kernel $BUILD/tools/gpuspeech-bench features --backend cuda \
    --utts 128 --seconds 30 --reps 1 --warmup 1 >"$OUT/ncu.log" 2>&1
  grep -vE '^==PROF==|^ *$' "$OUT/ncu.log" | grep -E '\(|gpu__time_duration' | cut -c1-150 | head -60
fi
exit $status
