#!/bin/bash
# One run on a GPU machine (Ubuntu 24.04, CUDA, PyTorch + torchaudio, cmake,
# ninja; no meson, gtest or GStreamer, no network): build with the CUDA
# backend, run the test suites with cuda required, generate the
# torchaudio Kaldi references, and benchmark against torchaudio's MFCC.
#
# Carried from the checkout (ignored by git):
#   .debs/meson_*.deb  Debian's meson, used when the machine has none
#   .gtest-src/        googletest sources (Debian's /usr/src/googletest)
#   .refaudio/         a copy of /usr/share/pocketsphinx/test/data
# Writes logs and results under $OUT (default /tmp/gpuspeech-out).
#
# usage: tests/gpu/device_run.sh [all|build|test|refs|bench|profile|profile_bands|peer|decode|streams|memory|gpus|batch|ab|ab_build|lanes_ncu|soak|dtw|fmllr|rescore|adapt_live]...
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/gpuspeech-out}
mkdir -p "$OUT"
BUILD=build-device
STEPS=${*:-all}
export GPUSPEECH_AUDIO_DIR=$ROOT/.refaudio
# .refmodel/: a copy of /usr/share/pocketsphinx/model/en-us (en-us/, the
# dictionary and en-us.lm.bin).
export GPUSPEECH_MODEL_DIR=$ROOT/.refmodel
status=0

want() { [[ " $STEPS " == *" all "* || " $STEPS " == *" $1 "* ]]; }
# librivox_copies DIR N: DIR holds the LibriVox files N times over (links
# named FILE-c.wav), the input of the many-stream steps.
librivox_copies() {
  rm -rf "$1" && mkdir -p "$1"
  for ((c = 1; c <= $2; c++)); do
    for f in $GPUSPEECH_AUDIO_DIR/librivox/*.wav; do ln -s "$f" "$1/$(basename "$f" .wav)-$c.wav"; done
  done
}
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

# OpenFst (the graph compiler) from Debian's .debs when the machine has none.
if [ ! -f /usr/include/fst/fstlib.h ] && ls .debs/libfst*.deb >/dev/null 2>&1; then
  if [ ! -f /tmp/fst/usr/include/fst/fstlib.h ]; then
    for d in .debs/libfst*.deb; do dpkg -x "$d" /tmp/fst; done
    ln -sf libfst.so.22 /tmp/fst/usr/lib/x86_64-linux-gnu/libfst.so 2>/dev/null
  fi
  export CPLUS_INCLUDE_PATH=/tmp/fst/usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
  export LIBRARY_PATH=/tmp/fst/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=/tmp/fst/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# OpenCL on the GPU: NVIDIA's driver library as the ICD, with Debian's ICD
# loader, headers and clFFT (.debs/ocl-icd-*, opencl-c-headers, libclfft*)
# when the machine has no loader of its own. Without the driver's library
# the build leaves OpenCL out, as before.
OPENCL_OPT=disabled
NV_OPENCL=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 /{print $NF; exit}')
[ -n "$NV_OPENCL" ] || NV_OPENCL=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
  /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
if [ -n "$NV_OPENCL" ] && ls .debs/libclfft-dev_*.deb .debs/ocl-icd-*.deb >/dev/null 2>&1; then
  if [ ! -f /tmp/ocl/usr/include/clFFT.h ]; then
    for d in .debs/ocl-icd-*.deb .debs/opencl-c-headers_*.deb .debs/libclfft*.deb; do
      dpkg -x "$d" /tmp/ocl
    done
    sed -i 's#^prefix=/usr#prefix=/tmp/ocl/usr#' /tmp/ocl/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc
    mkdir -p /tmp/ocl/vendors && echo "$NV_OPENCL" >/tmp/ocl/vendors/nvidia.icd
  fi
  export PKG_CONFIG_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CPATH=/tmp/ocl/usr/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OCL_ICD_VENDORS=/tmp/ocl/vendors
  OPENCL_OPT=enabled
fi

# ab: an earlier tree's gpuspeech-bench against this one's, alternating,
# for a change to the search. AB_BASE (default .peer/base.tar.gz, carried:
# .peer/ is ignored by git) is `git archive <commit> | gzip` of the earlier
# tree; its bench is built in build-ab-base while this tree builds, and
# kept between warm calls like build-device. The step ab_build only builds
# it (waited for at the end), for an ab run in a later warm call.
AB_BUILD_PID=
# Waits for the base build started below, if one runs, and reports a failure.
wait_ab_base() {
  [ -n "$AB_BUILD_PID" ] || return 0
  wait $AB_BUILD_PID || { echo "base build failed"; tail -30 "$OUT/ab-base-build.log"; status=1; }
  AB_BUILD_PID=
}
if [[ " $STEPS " == *" ab "* || " $STEPS " == *" ab_build "* ]]; then
  AB_TAR=${AB_BASE:-.peer/base.tar.gz}
  [ -f "$AB_TAR" ] || { echo "ab: no base tree $AB_TAR"; exit 1; }
  # A build of another base (an earlier warm call) is replaced.
  ab_sum=$(md5sum <"$AB_TAR" | cut -d' ' -f1)
  [ "$(cat build-ab-base/.base-sum 2>/dev/null)" = "$ab_sum" ] || rm -rf build-ab-base
  if [ ! -x build-ab-base/tools/gpuspeech-bench ]; then
    note "ab: building $AB_TAR's gpuspeech-bench (background)"
    rm -rf /tmp/ab-base-src && mkdir -p /tmp/ab-base-src && tar xzf "$AB_TAR" -C /tmp/ab-base-src ||
      { echo "ab: cannot unpack $AB_TAR"; exit 1; }
    ( find_meson >/dev/null && "${MESON[@]}" setup "$ROOT/build-ab-base" /tmp/ab-base-src \
        -Dgstreamer=disabled -Dopencl=disabled -Dcuda=enabled -Dtests=disabled -Dfuzzers=disabled \
        -Dbuildtype=release && ninja -C "$ROOT/build-ab-base" tools/gpuspeech-bench &&
        echo "$ab_sum" >"$ROOT/build-ab-base/.base-sum" ) >"$OUT/ab-base-build.log" 2>&1 &
    AB_BUILD_PID=$!
  fi
fi

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
  echo "OpenCL: $OPENCL_OPT (${NV_OPENCL:-no libnvidia-opencl.so.1})"
  note "configure + build"
  [ -d $BUILD ] || "${MESON[@]}" setup $BUILD -Dgstreamer=disabled -Dopencl=$OPENCL_OPT \
    -Dcuda=enabled -Dtests=enabled -Dfuzzers=disabled -Dbuildtype=release \
    >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  # -k 0: build every target that can be built, so one broken target
  # does not hide the results of the others; the failure is still reported.
  ninja -k 0 -C $BUILD >>"$OUT/build.log" 2>&1 || { status=1; echo "BUILD FAILED (continuing)";
    grep -B2 -A12 -m3 'error' "$OUT/build.log"; }
  grep -c warning "$OUT/build.log" | sed 's/^/compiler warnings: /'
fi

# The en-us graph (automatically pruned LM) takes minutes to compile: start
# it as soon as the tool is built and let the tests run meanwhile.
GRAPH_CACHE=/tmp/gpuspeech-graph-cache
# The en-us model, dictionary and LM with that graph, decoded on CUDA (the
# many-stream steps' common arguments).
EN_US_CUDA=(--hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict --cache $GRAPH_CACHE
            --lm .refmodel/en-us/en-us.lm.bin --backend cuda --search cuda)
if (want decode || want fmllr || want streams || want memory || want gpus || want batch || want ab ||
    [[ " $STEPS " == *" rescore "* ]]) && [ -x $BUILD/tools/gpuspeech-mkgraph ]; then
  note "en-us graph compile (background)"
  TIMEV=(); [ -x /usr/bin/time ] && TIMEV=(/usr/bin/time -v)
  ( "${TIMEV[@]}" $BUILD/tools/gpuspeech-mkgraph --hmm .refmodel/en-us/en-us \
      --dict .refmodel/en-us/cmudict-en-us.dict --lm .refmodel/en-us/en-us.lm.bin \
      --cache $GRAPH_CACHE >"$OUT/mkgraph.log" 2>&1; echo "mkgraph status $?" >>"$OUT/mkgraph.log" ) &
  MKGRAPH_PID=$!
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
  REQUIRE=cuda; [ "$OPENCL_OPT" = enabled ] && REQUIRE=cuda,opencl
  GPUSPEECH_REQUIRE_BACKENDS=$REQUIRE "${MESON[@]}" test -C $BUILD --no-rebuild --print-errorlogs \
    --num-processes 4 >"$OUT/tests.log" 2>&1 || status=1
  grep -E '^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:|^Timeout:' "$OUT/tests.log"
  cp $BUILD/meson-logs/testlog.txt "$OUT/testlog.txt" 2>/dev/null
  grep -hE '^\[ .* \] ' $BUILD/meson-logs/testlog.txt | grep -E 'cuda' | head -60
fi

if want bench; then
  note "benchmark: gpuspeech-bench, then torchaudio, same machine"
  B=$BUILD/tools/gpuspeech-bench
  $B features --backend all --utts 512 --seconds 30 --reps 20 || status=1
  echo "--- the same before the fused front end: frame_signal, FFT + power, GEMM, log (GPUSPEECH_CUDA_FUSED_BANDS=0)"
  GPUSPEECH_CUDA_FUSED_BANDS=0 $B features --backend cuda --utts 512 --seconds 30 --reps 20 || status=1
  echo "--- OpenCL composed (GPUSPEECH_OPENCL_FUSED_BANDS=0), against its fused kernel in --backend all above"
  GPUSPEECH_OPENCL_FUSED_BANDS=0 $B features --backend opencl --utts 512 --seconds 30 --reps 20 || status=1
  echo "--- the same with cuFFT + a separate power kernel (GPUSPEECH_CUDA_FFT=cufft)"
  GPUSPEECH_CUDA_FFT=cufft $B features --backend cuda --utts 512 --seconds 30 --reps 20 || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --warps 8 || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour kaldi --kind fbank || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour kaldi --kind plp || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour kaldi --kind mfcc || status=1
  $B features --backend cuda --utts 512 --seconds 30 --reps 10 --flavour htk --kind mfcc || status=1
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

# The fused front-end kernel under every ncu section, with its source-level
# counters (kernels are built with -lineinfo) written as CSV for reading
# off the machine.
if want profile_bands; then
  note "spectral_bands kernel, full ncu sections (128 x 30 s)"
  timeout 200 ncu --set full --import-source yes -k regex:spectral_bands_kernel -c 1 \
    -o "$OUT/bands" $BUILD/tools/gpuspeech-bench features --backend cuda \
    --utts 128 --seconds 30 --reps 1 --warmup 0 >"$OUT/ncu-bands.log" 2>&1 || status=1
  tail -3 "$OUT/ncu-bands.log"
  ncu -i "$OUT/bands.ncu-rep" --page details >"$OUT/bands-details.txt" 2>&1
  ncu -i "$OUT/bands.ncu-rep" --page source --csv --print-source sass >"$OUT/bands-sass.csv" 2>&1
  ncu -i "$OUT/bands.ncu-rep" --page source --csv --print-source cuda >"$OUT/bands-cuda.csv" 2>&1
  grep -E 'Duration|Executed Ipc|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Bank' "$OUT/bands-details.txt" | head -40
fi
# peer: .peer/tree.tar (git archive of another commit, e.g. the one before
# a change) built alone (the transcriber), for DECODE_MODES=peer.
if [[ " $STEPS " == *" peer "* ]] && [ -f .peer/tree.tar ]; then
  note "peer build"
  find_meson >/dev/null
  rm -rf /tmp/peer && mkdir -p /tmp/peer && tar xf .peer/tree.tar -C /tmp/peer
  (cd /tmp/peer && "${MESON[@]}" setup build -Dgstreamer=disabled -Dopencl=$OPENCL_OPT -Dcuda=enabled \
     -Dtests=disabled -Dfuzzers=disabled -Dbuildtype=release >/tmp/peer.log 2>&1 &&
   ninja -C build tools/gpuspeech-transcribe >>/tmp/peer.log 2>&1) || { echo "peer build failed"; tail -20 /tmp/peer.log; }
fi

if want decode; then
  note "decoding: cuda (scoring + search) against cpu, same files, same graphs"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  tail -4 "$OUT/mkgraph.log"
  T=$BUILD/tools/gpuspeech-transcribe
  M=(--hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict --cache $GRAPH_CACHE)
  D=$GPUSPEECH_AUDIO_DIR
  decode_set() {  # NAME ARGS... : cpu then cuda (twice: the second is warm), trn files compared
    local name=$1; shift
    for b in cpu cuda cuda; do
      $T "${M[@]}" --backend $b --search $b --times "$@" >"$OUT/$name.$b.trn" 2>"$OUT/$name.$b.err" || status=1
      echo "$name $b: $(tail -1 "$OUT/$name.$b.err")"
    done
    if [ ! -s "$OUT/$name.cpu.trn" ]; then
      echo "$name: no output"; status=1
    elif cmp -s <(grep -v '^#' "$OUT/$name.cpu.trn") <(grep -v '^#' "$OUT/$name.cuda.trn"); then
      echo "$name: cpu and cuda give identical words"
    else
      echo "$name: cpu and cuda DIFFER"; diff "$OUT/$name.cpu.trn" "$OUT/$name.cuda.trn" | head -20; status=1
    fi
    if cmp -s "$OUT/$name.cpu.trn" "$OUT/$name.cuda.trn"; then echo "$name: word times identical too"; fi
  }
  decode_set goforward --jsgf $D/goforward.gram $D/goforward.raw
  decode_set cards --jsgf $D/cards/cards.gram $D/cards/*.wav
  # One decoding a file (the search alone: the reference of the runs below),
  # then transcribe's defaults with the LM (two-pass fMLLR, the lattice pass).
  decode_set librivox --one-pass --lm .refmodel/en-us/en-us.lm.bin $D/librivox/*.wav
  decode_set librivox-defaults --lm .refmodel/en-us/en-us.lm.bin $D/librivox/*.wav
  decode_set librivox-norescore --one-pass --no-rescore --lm .refmodel/en-us/en-us.lm.bin $D/librivox/*.wav
  decode_set tidigits --mfc --hmm $D/tidigits/hmm --dict $D/tidigits/lm/tidigits.dic \
    --fsg $D/tidigits/lm/tidigits.fsg $D/tidigits/*.mfc
  for m in 10000 5000; do
    $T "${M[@]}" --one-pass --lm .refmodel/en-us/en-us.lm.bin --backend cuda --search cuda --maxactive $m \
      $D/librivox/*.wav >"$OUT/librivox.cuda.max$m.trn" 2>"$OUT/librivox.cuda.max$m.err"
    echo "librivox cuda maxactive $m: $(tail -1 "$OUT/librivox.cuda.max$m.err")"
    cmp -s "$OUT/librivox.cuda.max$m.trn" <(grep -v '^#' "$OUT/librivox.cuda.trn") &&
      echo "  same words as maxactive 30000" || echo "  words differ from maxactive 30000"
  done
  # DECODE_MODES: chained (default), unchained (GPUSPEECH_CUDA_CHAIN=0),
  # passes (a kernel launch per step and pass), blocksN (N round-kernel
  # blocks), peer (the peer step's build of another commit).
  MODES=${DECODE_MODES:-chained unchained passes}
  echo "--- librivox, cuda, alternating: $MODES; words compared with the default run's"
  for r in $(seq ${DECODE_ROUNDS:-3}); do
    for mode in $MODES; do
      TT=$T once=(--one-pass)
      case $mode in
        chained) envs=() ;;
        unchained) envs=(GPUSPEECH_CUDA_CHAIN=0) ;;
        blocks*) envs=(GPUSPEECH_CUDA_ROUND_BLOCKS=${mode#blocks}) ;;
        passes) envs=(GPUSPEECH_CUDA_CLOSURE=passes) ;;
        # A peer from before 2026-12-01 decodes once by default and knows no --one-pass.
        peer) envs=(); TT=/tmp/peer/build/tools/gpuspeech-transcribe
              $TT --help 2>&1 | grep -q -- --one-pass || once=() ;;
      esac
      env "${envs[@]}" $TT "${M[@]}" "${once[@]}" --lm .refmodel/en-us/en-us.lm.bin --backend cuda \
        --search cuda --times -v $D/librivox/*.wav 2>"$OUT/alt.err" >"$OUT/alt.trn"
      grep -E "RTF|search" "$OUT/alt.err" | grep -v "\.wav" | sed "s/^/$mode $r: /"
      cmp -s <(grep -v '^#' "$OUT/alt.trn") <(grep -v '^#' "$OUT/librivox.cuda.trn") ||
        { echo "$mode $r: words or times DIFFER"; status=1; }
    done
  done
  echo "--- librivox, cuda, per stage (-v)"
  $T "${M[@]}" --one-pass --lm .refmodel/en-us/en-us.lm.bin --backend cuda --search cuda -v \
    $D/librivox/*.wav 2>&1 >/dev/null | tail -8
  mkdir -p /tmp/decode-out && mv "$OUT"/*.trn "$OUT"/*.err "$OUT/mkgraph.log" /tmp/decode-out/ 2>/dev/null
  tar czf "$OUT/decode.tar.gz" -C /tmp/decode-out .
fi
# adapt_live: live adapting streams (the gpudecoder element's default
# adaptation) with their utterances' ends spread, fed the batch front end's
# features and then the live chain's with live CMN's trace
# (--live-features: each utterance normalised again, a stream's first
# decoded again with its own mean, as gpudecoder's utterance-cmn does).
# ADAPT_LIVE_STREAMS (default 384) streams for ADAPT_LIVE_SECONDS (60) of
# audio each. Builds gpuspeech-bench alone (no tests) in build-bench, so
# it needs no other step. ADAPT_LIVE_FRONT_ENDS: "batch live" (default) or
# either alone. With ab_build among the steps, the base tree's bench runs
# each front end too, after this tree's: a same-host A/B. ADAPT_LIVE_ALT_ARGS
# (e.g. "--adapt-young-frames 0"): this tree's bench runs each front end a
# second time with those options added (side "alt"), an A/B of one option
# on one host. ADAPT_LIVE_REPEATS (default 1): the sides run in turn that
# many times (logs -new, -alt, ... then -new.2, -alt.2, ...), so that the
# spread between runs of one side shows beside the difference between
# sides.
if [[ " $STEPS " == *" adapt_live "* ]]; then
  note "adapt_live: build gpuspeech-bench and gpuspeech-mkgraph"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  find_meson >/dev/null || { echo "no meson"; exit 1; }
  [ -d build-bench ] || "${MESON[@]}" setup build-bench -Dgstreamer=disabled -Dopencl=disabled \
    -Dcuda=enabled -Dtests=disabled -Dfuzzers=disabled -Dbuildtype=release >"$OUT/bench-build.log" 2>&1 ||
    { tail -30 "$OUT/bench-build.log"; exit 1; }
  ninja -C build-bench tools/gpuspeech-bench tools/gpuspeech-mkgraph >>"$OUT/bench-build.log" 2>&1 ||
    { grep -B2 -A12 -m3 error "$OUT/bench-build.log"; exit 1; }
  note "adapt_live: en-us graph"
  build-bench/tools/gpuspeech-mkgraph --hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict \
    --lm .refmodel/en-us/en-us.lm.bin --cache $GRAPH_CACHE >"$OUT/mkgraph.log" 2>&1 ||
    { tail -20 "$OUT/mkgraph.log"; exit 1; }
  [[ ${ADAPT_LIVE_REPEATS:-1} =~ ^[1-9][0-9]*$ ]] ||
    { echo "adapt_live: ADAPT_LIVE_REPEATS must be a count >= 1, not '$ADAPT_LIVE_REPEATS'"; exit 1; }
  sides=(new)
  [ -n "${ADAPT_LIVE_ALT_ARGS:-}" ] && sides+=(alt)
  if [[ " $STEPS " == *" ab_build "* ]]; then
    wait_ab_base
    [ -x build-ab-base/tools/gpuspeech-bench ] && sides+=(base)
  fi
  for fe in ${ADAPT_LIVE_FRONT_ENDS:-batch live}; do
    case $fe in
      batch) f="" ;;
      live) f=--live-features ;;
      *) echo "adapt_live: ADAPT_LIVE_FRONT_ENDS takes batch and live, not '$fe'"; status=1; continue ;;
    esac
    for ((rep = 1; rep <= ${ADAPT_LIVE_REPEATS:-1}; ++rep)); do
      for side in "${sides[@]}"; do
        B=build-bench/tools/gpuspeech-bench; [ $side = base ] && B=build-ab-base/tools/gpuspeech-bench
        alt=(); [ $side = alt ] && read -r -a alt <<<"$ADAPT_LIVE_ALT_ARGS"
        log="$OUT/adapt_live${f}-$side$([ $rep -gt 1 ] && echo .$rep).log"
        note "adapt_live ($side${alt[*]:+: ${alt[*]}}, run $rep): ${ADAPT_LIVE_STREAMS:-384} streams ${f:-(batch front end)}"
        $B decode "${EN_US_CUDA[@]}" --streams ${ADAPT_LIVE_STREAMS:-384} --live \
          --seconds ${ADAPT_LIVE_SECONDS:-60} --adapt --spread-starts $f "${alt[@]}" \
          $GPUSPEECH_AUDIO_DIR/librivox/*.wav >"$log" 2>&1 || status=1
        grep -vE '^RESULT' "$log" | grep -E '^(decode|host CPU|adaptation|live)[:,]'
      done
    done
  done
fi

if want streams; then
  # Issue 14: N files decoded at once by one process (--streams N), the
  # model, graph and (on cuda) the device graph shared; the LibriVox files
  # STREAM_COPIES times over. Device memory: nvidia-smi's memory.used,
  # sampled every 100 ms, its peak less the idle reading before the run.
  note "streams: gpuspeech-transcribe --streams N, aggregate speed and device memory"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  T=$BUILD/tools/gpuspeech-transcribe
  M=(--hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict --cache $GRAPH_CACHE
     --lm .refmodel/en-us/en-us.lm.bin)
  librivox_copies /tmp/streams ${STREAM_COPIES:-8}
  stream_run() {  # backend streams [VAR=value...]
    local idle peak b=$1 n=$2
    shift 2
    local envs=("$@")
    idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >/tmp/mem.log 2>/dev/null &
    local sampler=$!
    env "${envs[@]}" /usr/bin/time -f '%e s wall, %M KB peak RSS, %P CPU' -o /tmp/time.log $T "${M[@]}" --one-pass \
      --backend $b --search $b --streams $n /tmp/streams/*.wav >"/tmp/streams.$b.$n.trn" \
      2>"/tmp/streams.$b.$n.err" || status=1
    kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
    peak=$(sort -n /tmp/mem.log | tail -1)
    echo "$b streams $n ${envs[*]}: $(tail -1 /tmp/streams.$b.$n.err | sed 's/^gpuspeech-transcribe: //')"
    echo "    process: $(cat /tmp/time.log); device memory: peak $((peak - idle)) MiB above idle"
    if [ "$n" != 1 ] || [ ${#envs[@]} -gt 0 ]; then
      cmp -s "/tmp/streams.$b.1.trn" "/tmp/streams.$b.$n.trn" && echo "    output identical to --streams 1" ||
        { echo "    output DIFFERS from --streams 1"; status=1; }
    fi
  }
  for n in ${STREAMS_CUDA:-1 2 4 8}; do stream_run cuda $n; done
  # STREAMS_CUDA_BLOCKS="N:B ...": N streams with B blocks a round kernel
  # (GPUSPEECH_CUDA_ROUND_BLOCKS), so that several streams' round kernels
  # fit on the device at once.
  for nb in ${STREAMS_CUDA_BLOCKS:-}; do
    stream_run cuda ${nb%%:*} GPUSPEECH_CUDA_ROUND_BLOCKS=${nb##*:}
  done
  for n in ${STREAMS_CPU:-1 4 8 16}; do stream_run cpu $n; done
  # gpuspeech-bench decode --live: each stream fed at real time (BENCH_LIVE
  # "backend:streams ..."), lag of its partial results.
  for bs in ${BENCH_LIVE:-}; do
    idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >/tmp/mem.log 2>/dev/null &
    sampler=$!
    $BUILD/tools/gpuspeech-bench decode "${M[@]}" --backend ${bs%%:*} --search ${bs%%:*} \
      --streams ${bs##*:} --live --seconds ${LIVE_SECONDS:-20} $GPUSPEECH_AUDIO_DIR/librivox/*.wav \
      2>&1 | grep -vE '^RESULT' | sed "s/^/live ${bs}: /" || status=1
    kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
    echo "    device memory: peak $(( $(sort -n /tmp/mem.log | tail -1) - idle )) MiB above idle"
  done
  cmp -s /tmp/streams.cpu.1.trn /tmp/streams.cuda.1.trn && echo "cpu and cuda outputs identical" ||
    { echo "cpu and cuda outputs DIFFER"; status=1; }
fi
if want memory; then
  # Issue 14: device memory of the first stream (with the shared resources)
  # and of each added one, from gpuspeech-bench decode's cudaMemGetInfo
  # readings. MEMORY_RUNS: "backend:streams[@VAR=value]...", on the
  # LibriVox files MEMORY_COPIES times over (at least as many as streams).
  note "memory: device memory per stream (gpuspeech-bench decode)"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  librivox_copies /tmp/memfiles ${MEMORY_COPIES:-8}
  for spec in ${MEMORY_RUNS:-cuda:1 cuda:8 cuda:32}; do
    run=${spec%%@*}; envs=(); [ "$run" != "$spec" ] && envs=("${spec#*@}")
    env "${envs[@]}" $BUILD/tools/gpuspeech-bench decode --hmm .refmodel/en-us/en-us \
      --dict .refmodel/en-us/cmudict-en-us.dict --lm .refmodel/en-us/en-us.lm.bin --cache $GRAPH_CACHE \
      --backend ${run%%:*} --search ${run%%:*} --streams ${run##*:} /tmp/memfiles/*.wav 2>&1 |
      grep -E '^decode: [0-9]|^device memory|error' | sed "s|^|$spec: |" || status=1
  done
fi
if want gpus; then
  # Issue 18: streams placed over every GPU of the machine (--device-id -1)
  # against the same per-card load on one GPU (CUDA_VISIBLE_DEVICES=0):
  # gpuspeech-bench decode with S streams on one card, then 2S (one per
  # card per S) on all, alternating, for each S of GPUS_STREAMS; the
  # LibriVox files GPUS_COPIES times over. Then the words: gpuspeech-transcribe
  # with GPUS_IDENTITY_STREAMS streams over every card against one stream.
  note "gpus: streams over every GPU against one GPU"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  NGPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  echo "$NGPU GPUs"
  M=(--hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict --cache $GRAPH_CACHE
     --lm .refmodel/en-us/en-us.lm.bin --backend cuda --search cuda --device-id -1)
  librivox_copies /tmp/gpufiles ${GPUS_COPIES:-64}
  for r in $(seq ${GPUS_ROUNDS:-1}); do
    for s in ${GPUS_STREAMS:-8 32 128}; do
      CUDA_VISIBLE_DEVICES=0 $BUILD/tools/gpuspeech-bench decode "${M[@]}" --streams $s /tmp/gpufiles/*.wav \
        2>&1 | grep -E '^decode: [0-9]|^device [0-9]|^RESULT|error' | sed "s/^/1 gpu, $s streams: /" || status=1
      $BUILD/tools/gpuspeech-bench decode "${M[@]}" --streams $((s * NGPU)) /tmp/gpufiles/*.wav \
        2>&1 | grep -E '^decode: [0-9]|^device [0-9]|^RESULT|error' |
        sed "s/^/$NGPU gpus, $((s * NGPU)) streams: /" || status=1
    done
  done
  T=$BUILD/tools/gpuspeech-transcribe
  n=${GPUS_IDENTITY_STREAMS:-64}
  CUDA_VISIBLE_DEVICES=0 $T "${M[@]}" --one-pass --times --streams 1 /tmp/gpufiles/*.wav >/tmp/gpus.1.trn 2>/tmp/gpus.1.err || status=1
  echo "1 gpu, 1 stream: $(tail -1 /tmp/gpus.1.err)"
  $T "${M[@]}" --one-pass --times -v --streams $n /tmp/gpufiles/*.wav >/tmp/gpus.$n.trn 2>/tmp/gpus.$n.err || status=1
  echo "$NGPU gpus, $n streams: $(tail -1 /tmp/gpus.$n.err)"
  grep "streams per device" /tmp/gpus.$n.err
  if [ -s /tmp/gpus.1.trn ] && cmp -s /tmp/gpus.1.trn /tmp/gpus.$n.trn; then
    echo "words and times of $n streams over $NGPU gpus identical to one stream's ($(wc -l </tmp/gpus.1.trn) lines)"
  else echo "words or times DIFFER between $n streams over $NGPU gpus and one stream"; status=1; fi
fi
if want batch; then
  # Issue 14, the batched search: every stream's rounds as lanes of shared
  # launches (GPUSPEECH_CUDA_BATCH=1, cuda_round_batcher.h) against a launch
  # per stream, gpuspeech-bench decode with each of BATCH_STREAMS streams on
  # the LibriVox files BATCH_COPIES times over; then the words and times of
  # BATCH_IDENTITY_STREAMS batched streams against one stream alone.
  note "batch: the batched search against a launch per stream"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  M=("${EN_US_CUDA[@]}")
  librivox_copies /tmp/batchfiles ${BATCH_COPIES:-64}
  for s in ${BATCH_STREAMS:-1 16 64 256}; do
    for mode in ${BATCH_MODES:-0 1}; do
      GPUSPEECH_CUDA_BATCH=$mode $BUILD/tools/gpuspeech-bench decode "${M[@]}" --streams $s \
        /tmp/batchfiles/*.wav 2>&1 | grep -E '^decode: [0-9]|^device memory|^batched search|^stages|rror' |
        sed "s/^/batch=$mode, $s streams: /" || status=1
    done
  done
  # BATCH_RUNS "streams@VAR=value,--flag=value,... ...": more batched runs
  # with other settings: environment variables (GPUSPEECH_SCORES_VIA_HOST,
  # GPUSPEECH_CUDA_WAIT, ...) and bench options (--maxactive=10000, --live).
  for spec in ${BATCH_RUNS:-}; do
    s=${spec%%@*}; sets=(); [ "$s" != "$spec" ] && IFS=, read -ra sets <<<"${spec#*@}"
    envs=(); args=()
    for v in "${sets[@]}"; do
      if [[ $v == --*=* ]]; then args+=("${v%%=*}" "${v#*=}")
      elif [[ $v == --* ]]; then args+=("$v")
      else envs+=("$v"); fi
    done
    env GPUSPEECH_CUDA_BATCH=1 "${envs[@]}" $BUILD/tools/gpuspeech-bench decode "${M[@]}" "${args[@]}" \
      --streams $s /tmp/batchfiles/*.wav 2>&1 |
      grep -E '^decode: [0-9]|^batched search|^stages|^device memory|^live:|^lanes kernel|^  [a-z-]+ +[0-9.]+ %|rror' |
      sed "s|^|$spec: |" || status=1
  done
  T=$BUILD/tools/gpuspeech-transcribe
  n=${BATCH_IDENTITY_STREAMS:-64}
  [ "$n" = 0 ] || {
  $T "${M[@]}" --one-pass --times --streams 1 /tmp/batchfiles/*.wav >/tmp/batch.1.trn 2>/tmp/batch.1.err || status=1
  echo "one stream alone: $(tail -1 /tmp/batch.1.err)"
  $T "${M[@]}" --one-pass --batched-search on --times --streams $n /tmp/batchfiles/*.wav >/tmp/batch.$n.trn \
    2>/tmp/batch.$n.err || status=1
  echo "$n batched streams: $(tail -1 /tmp/batch.$n.err)"
  if [ -s /tmp/batch.1.trn ] && cmp -s /tmp/batch.1.trn /tmp/batch.$n.trn; then
    echo "words and times of $n batched streams identical to one stream's ($(wc -l </tmp/batch.1.trn) lines)"
  else echo "words or times DIFFER between $n batched streams and one stream"; status=1
    diff /tmp/batch.1.trn /tmp/batch.$n.trn | head -20; fi
  # No --streams: the default fills the device (stream_count.h), batched.
  $T "${M[@]}" --one-pass --times /tmp/batchfiles/*.wav >/tmp/batch.default.trn 2>/tmp/batch.default.err || status=1
  echo "default streams: $(tail -1 /tmp/batch.default.err)"
  if [ -s /tmp/batch.1.trn ] && cmp -s /tmp/batch.1.trn /tmp/batch.default.trn; then
    echo "words and times of the default streams identical to one stream's"
  else echo "words or times DIFFER between the default streams and one stream"; status=1; fi
  }
fi
# Not part of "all": where word ends are rescored (docs/benchmarks.md,
# "N-gram lookups by hash, and word ends on the device by default"), the
# commands of that section's runs. RESCORE_REPS rounds, alternating, of
# 256 batched streams on 16 fibers (LibriVox x205): the host's rescoring,
# the device's through the n-gram hashes (the default) and through the
# tries; then the lanes profile of each; a stream alone on 200 files,
# host against device; 256 streams fed live for 20 s, host against device.
if [[ " $STEPS " == *" rescore "* ]]; then
  note "rescore: word ends on the host, on the device by hash, on the device by trie"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  M=("${EN_US_CUDA[@]}" --maxactive 10000)
  librivox_copies /tmp/rescorefiles 205
  librivox_copies /tmp/rescorefiles1 40
  B=$BUILD/tools/gpuspeech-bench
  SIDES=("host GPUSPEECH_CUDA_RESCORE=host" "device-hash GPUSPEECH_CUDA_RESCORE=device"
         "device-trie GPUSPEECH_CUDA_RESCORE=device GPUSPEECH_CUDA_LM_LOOKUP=trie")
  for ((r = 1; r <= ${RESCORE_REPS:-2}; r++)); do
    for side in "${SIDES[@]}"; do
      read -ra kv <<<"$side"
      env GPUSPEECH_CUDA_BATCH=1 "${kv[@]:1}" $B decode "${M[@]}" --streams 256 --fibers 16 \
        /tmp/rescorefiles/*.wav 2>&1 | grep -E '^decode: [0-9]|^batched search|^device memory|rror' |
        sed "s|^|${kv[0]}, rep $r: |" || status=1
    done
  done
  for side in "${SIDES[@]}"; do
    read -ra kv <<<"$side"
    env GPUSPEECH_CUDA_BATCH=1 GPUSPEECH_LANES_PROFILE=1 "${kv[@]:1}" $B decode "${M[@]}" --streams 256 \
      --fibers 16 /tmp/rescorefiles/*.wav 2>&1 |
      grep -E '^decode: [0-9]|^lanes kernel|^  [a-z-]+ +[0-9.]+ %|rror' | sed "s|^|${kv[0]}, profiled: |" || status=1
  done
  for side in "${SIDES[@]:0:2}"; do
    read -ra kv <<<"$side"
    env "${kv[@]:1}" $B decode "${M[@]}" --streams 1 /tmp/rescorefiles1/*.wav 2>&1 |
      grep -E '^decode: [0-9]|rror' | sed "s|^|${kv[0]}, a stream alone: |" || status=1
    env "${kv[@]:1}" $B decode "${M[@]}" --streams 256 --live --seconds 20 /tmp/rescorefiles/*.wav 2>&1 |
      grep -E '^decode: [0-9]|^live|rror' | sed "s|^|${kv[0]}, live 256: |" || status=1
  done
fi

# Not part of "all" (see the ab note above): AB_REPS rounds of the base
# build then this one, each without and with the lanes profile, AB_STREAMS
# batched streams with AB_ARGS, on the LibriVox files BATCH_COPIES times
# over. Compare within one command only.
if [[ " $STEPS " == *" ab "* ]]; then
  note "ab: $AB_TAR against this tree"
  wait_ab_base
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  [ -d /tmp/batchfiles ] || librivox_copies /tmp/batchfiles ${BATCH_COPIES:-64}
  M=("${EN_US_CUDA[@]}")
  read -ra ab_args <<<"${AB_ARGS:---maxactive 10000}"
  for ((r = 1; r <= ${AB_REPS:-2}; r++)); do
    for side in base new; do
      B=$BUILD/tools/gpuspeech-bench; [ $side = base ] && B=build-ab-base/tools/gpuspeech-bench
      for prof in 0 1; do
        env GPUSPEECH_CUDA_BATCH=1 GPUSPEECH_LANES_PROFILE=$prof $B decode "${M[@]}" "${ab_args[@]}" \
          --streams ${AB_STREAMS:-256} /tmp/batchfiles/*.wav 2>&1 |
          grep -E '^decode: [0-9]|^device memory|^lanes kernel|^  [a-z-]+ +[0-9.]+ %|rror' |
          sed "s|^|$side, rep $r, profile $prof: |" || status=1
      done
    done
  done
fi
# Not part of "all": the lanes kernel under ncu (LANES_NCU_STREAMS batched
# streams, LANES_NCU_SKIP launches skipped, then LANES_NCU_COUNT profiled;
# the program is stopped after them), its sections written to lanes.txt.
if [[ " $STEPS " == *" lanes_ncu "* ]]; then
  note "lanes kernel under ncu"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  [ -d /tmp/batchfiles ] || librivox_copies /tmp/batchfiles ${BATCH_COPIES:-64}
  # LANES_NCU_KERNEL: the kernel's name pattern (the cluster kernel on
  # sm_90, lanes_round_kernel with GPUSPEECH_LANES_CLUSTER=0).
  GPUSPEECH_CUDA_BATCH=1 timeout 300 ncu --clock-control none -k regex:${LANES_NCU_KERNEL:-lanes_cluster_round_kernel} \
    --launch-skip ${LANES_NCU_SKIP:-400} --launch-count ${LANES_NCU_COUNT:-2} --kill yes \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats --section SchedulerStats \
    $BUILD/tools/gpuspeech-bench decode --hmm .refmodel/en-us/en-us \
    --dict .refmodel/en-us/cmudict-en-us.dict --lm .refmodel/en-us/en-us.lm.bin --cache $GRAPH_CACHE \
    --backend cuda --search cuda --streams ${LANES_NCU_STREAMS:-256} /tmp/batchfiles/*.wav \
    >"$OUT/lanes.txt" 2>&1
  echo "ncu status $?"
  grep -vE '^==PROF==|^ *$|^ *-+ *$' "$OUT/lanes.txt" | grep -E 'lanes_|Duration|Throughput|Hit Rate|Occupancy|Warp Cycles|Stall|Eligible|Issued Warp|No Eligible|Block Limit|Registers|Busy|Grid Size|Mem Pipes|L1/TEX|L2 |DRAM' | cut -c1-140 | head -80
fi
# Not part of "all": a soak of long-lived batched CUDA streams
# (tests/bench/soak.sh), SOAK_STREAMS streams decoding the LibriVox files
# SOAK_REPEAT times over, host and device memory sampled.
if [[ " $STEPS " == *" soak "* ]]; then
  note "soak: long-lived batched CUDA streams, host and device memory"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  M=("${EN_US_CUDA[@]}")
  GPUSPEECH_CUDA_BATCH=1 bash tests/bench/soak.sh $BUILD/tools/gpuspeech-bench ${SOAK_INTERVAL:-20} \
    "$OUT/soak.log" "${M[@]}" --streams ${SOAK_STREAMS:-64} --repeat ${SOAK_REPEAT:-3600} \
    $GPUSPEECH_AUDIO_DIR/librivox/*.wav | grep -E '^decode: [0-9]|^stages|^soak|rror' || status=1
fi
if want fmllr; then
  note "fMLLR: statistics, estimation and application, every backend"
  $BUILD/tools/gpuspeech-bench fmllr --backend all || status=1
  note "fMLLR two-pass (one speaker, default re-estimation): cpu against cuda"
  [ -n "${MKGRAPH_PID:-}" ] && wait $MKGRAPH_PID
  echo "reader $(cd .refaudio/librivox && ls *.wav | sed 's/\.wav$//' | tr '\n' ' ')" >/tmp/reader.spk2utt
  for b in cpu cuda; do
    $BUILD/tools/gpuspeech-transcribe --hmm .refmodel/en-us/en-us --dict .refmodel/en-us/cmudict-en-us.dict \
      --lm .refmodel/en-us/en-us.lm.bin --cache $GRAPH_CACHE --backend $b --search $b --fmllr two-pass \
      --spk2utt /tmp/reader.spk2utt .refaudio/librivox/*.wav >"$OUT/fmllr.$b.trn" 2>"$OUT/fmllr.$b.err" || status=1
    grep -E "fmllr speaker|RTF" "$OUT/fmllr.$b.err" | sed "s/^/$b: /" | cut -c1-220
  done
  if cmp -s "$OUT/fmllr.cpu.trn" "$OUT/fmllr.cuda.trn"; then echo "two-pass: cpu and cuda give identical words"
  else echo "two-pass: cpu and cuda DIFFER"; diff "$OUT/fmllr.cpu.trn" "$OUT/fmllr.cuda.trn"; status=1; fi
fi
if want dtw; then
  note "DTW: one utterance against N templates, cuda against the cpu engine"
  # The table of docs/benchmarks.md (one DTW per template), then the
  # recogniser's defaults since issue 16 (plp, symmetric, five test warps).
  $BUILD/tools/gpuspeech-dtw --bench 10,30,100,300,1000,3000,10000 --backend cuda \
    --features mfcc --pattern itakura --warps 1 || status=1
  $BUILD/tools/gpuspeech-dtw --bench 10,100,1000,10000 --backend cuda --features mfcc --pattern symmetric \
    --warps 1 || status=1
  $BUILD/tools/gpuspeech-dtw --bench 10,100,1000,3000,10000 --backend cuda || status=1
fi

wait_ab_base  # ab_build alone: the background build must end before the script
exit $status
