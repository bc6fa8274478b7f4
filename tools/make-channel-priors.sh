#!/bin/bash
# Makes a channel prior library for gpudecoder's adapt-channels
# (common/fmllr/channel_priors.h): the fMLLR statistics of one set of real
# recordings as they are (reference.stats) and through each channel
# (NAME.stats), and the acoustic model they were taken with (model).
#
# The recordings: pocketsphinx-testdata's real speech (its five LibriVox
# sentences, five cards recordings and three raw files: 13 files, 44 s,
# several speakers and microphones), adapted as one speaker, unsupervised
# (gpuspeech-transcribe's two passes, the first pass's words). The
# statistics are the model's own, so a library is made for one model;
# gpudecoder refuses one made with another.
#
# Usage: make-channel-priors.sh OUTDIR [CHANNEL[:WEIGHT]...]
#   WEIGHT (0 to 1, default 1) goes to the library's `weights` file: how
#   much of its prior a stream that takes the channel gets (0: recognised,
#   no prior; common/fmllr/channel_priors.h).
#   CHANNEL (default: gsm):
#     gsm    GSM 06.10 full rate at 8 kHz (sox), back to 16 kHz: what
#            tests/bench/degraded_set.sh's gsm condition does
#     mulaw  G.711 mu-law at 8 kHz (sox), back to 16 kHz
#     telephone  the 300-3400 Hz band at 8 kHz, back to 16 kHz: degraded_set.sh's
#            phone condition without its noise
# env: GPUSPEECH_BUILD (the build directory, default ./build),
#   GPUSPEECH_MODEL_DIR (default /usr/share/pocketsphinx/model; en-us under
#   it), GPUSPEECH_TESTDATA (default /usr/share/pocketsphinx/test/data).
# data/channel-priors/en-us is this script's output for the default model
# (`make-channel-priors.sh data/channel-priors/en-us gsm mulaw:0`).
set -eu
[ $# -ge 1 ] || { echo "usage: make-channel-priors.sh OUTDIR [CHANNEL[:WEIGHT]...]" >&2; exit 2; }
OUT=$1
shift
CHANNELS=("$@")
[ ${#CHANNELS[@]} -gt 0 ] || CHANNELS=(gsm)
WEIGHTS=()
for i in "${!CHANNELS[@]}"; do
  c=${CHANNELS[$i]}
  if [[ $c == *:* ]]; then
    w=${c#*:}
    awk -v w="$w" 'BEGIN { exit !(w ~ /^([0-9]+[.]?[0-9]*|[.][0-9]+)$/ && w + 0 <= 1) }' ||
      { echo "make-channel-priors.sh: $c: the weight must be a number from 0 to 1" >&2; exit 2; }
    CHANNELS[$i]=${c%%:*}
    WEIGHTS+=("${c%%:*} $w")
  fi
done
BUILD=${GPUSPEECH_BUILD:-build}
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
DATA=${GPUSPEECH_TESTDATA:-/usr/share/pocketsphinx/test/data}
TRANSCRIBE=$BUILD/tools/gpuspeech-transcribe
die() { echo "make-channel-priors.sh: $*" >&2; exit 1; }
[ -x "$TRANSCRIBE" ] || die "no $TRANSCRIBE (GPUSPEECH_BUILD)"
[ -f "$M/en-us/means" ] || die "no acoustic model at $M/en-us (GPUSPEECH_MODEL_DIR)"
[ -d "$DATA/librivox" ] || die "no pocketsphinx-testdata at $DATA (GPUSPEECH_TESTDATA)"
command -v sox >/dev/null || die "missing sox"
for c in "${CHANNELS[@]}"; do
  case $c in gsm | mulaw | telephone) ;; reference) die "'reference' is the library's own name" ;;
    *) die "unknown channel '$c' (gsm, mulaw, telephone)" ;; esac
done

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/reference"
n=0
for f in "$DATA"/librivox/*.wav "$DATA"/cards/*.wav; do
  n=$((n + 1))
  sox "$f" -r 16000 -c 1 -b 16 "$T/reference/r$n.wav"
done
for f in goforward numbers something; do
  n=$((n + 1))
  sox -t raw -r 16000 -e signed -b 16 -c 1 "$DATA/$f.raw" "$T/reference/r$n.wav"
done
[ $n = 13 ] || die "expected 13 recordings in $DATA, found $n"

# One channel's recordings through it.
through() {
  local c=$1 in out
  mkdir -p "$T/$c"
  for in in "$T"/reference/*.wav; do
    out=$T/$c/$(basename "$in")
    case $c in
      gsm) sox -R "$in" -r 8000 "$T/tmp.gsm" && sox -R "$T/tmp.gsm" -r 16000 -b 16 "$out" ;;
      mulaw) sox -R "$in" -r 8000 -e mu-law "$T/tmp.wav" && sox -R "$T/tmp.wav" -r 16000 -e signed -b 16 "$out" ;;
      telephone) sox -R "$in" "$T/tmp.wav" sinc 300-3400 rate 8000 && sox -R "$T/tmp.wav" -b 16 "$out" rate 16000 ;;
    esac
  done
}

# The statistics of a directory's recordings as one speaker, 9 significant
# digits (the sums are float32 on the device anyway). The noise estimate
# starts as in gpufeatures' default front end (--noise-start first-frame),
# which the library's streams use, and as when data/channel-priors/en-us
# was made (transcribe's default then).
statistics() {
  local dir=$1 to=$2
  echo "chan $(for f in "$dir"/*.wav; do basename "$f" .wav; done | tr '\n' ' ')" >"$T/spk2utt"
  "$TRANSCRIBE" --hmm "$M/en-us" --noise-start first-frame --spk2utt "$T/spk2utt" --fmllr-dir "$T/fmllr" \
    "$dir"/*.wav >/dev/null 2>"$T/log" ||
    { cat "$T/log" >&2; die "gpuspeech-transcribe failed on $dir"; }
  awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^[-0-9.]/) $i = sprintf("%.9g", $i); print }' \
    "$T/fmllr/chan.stats" >"$to"
  # The model the statistics were taken with (the same for every run).
  mv "$T/fmllr/model" "$OUT/model" || die "gpuspeech-transcribe wrote no $T/fmllr/model"
  rm -rf "$T/fmllr"
}

mkdir -p "$OUT"
rm -f "$OUT/weights"
if [ ${#WEIGHTS[@]} -gt 0 ]; then
  { echo "# NAME WEIGHT: the share of adapt-prior-frames a stream taking the channel gets"
    printf '%s\n' "${WEIGHTS[@]}"; } >"$OUT/weights"
fi
statistics "$T/reference" "$OUT/reference.stats"
for c in "${CHANNELS[@]}"; do
  through "$c"
  statistics "$T/$c" "$OUT/$c.stats"
done
echo "make-channel-priors.sh: $OUT: reference ${CHANNELS[*]}"
