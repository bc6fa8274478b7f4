#!/bin/bash
# Makes the DTW projection maps shipped in data/dtw-projection
# (common/dtw/projection_catalog.h; docs/dtw.md, "A projection learnt from
# other voices"): one for gpuspeech-dtw's and gpudtw's default features
# (PLP), one for the same features cut at 4 kHz (band matching's set for
# 8 kHz audio).
#
# Each map is learnt from corpus set 1 of tests/dtw/make_projection_corpus.sh
# (323 English words by 24 espeak-ng voices) and its rejection threshold
# calibrated on set 2 (the same words by 24 other voices): the score that
# keeps 95 % of the words in simulated libraries of 12 words by 1, 2, ... 8
# template voices, a threshold for each (a word takes the one of its count
# of templates).
# Both corpora are made afresh (about 8 minutes each on two cores); the
# maps come out byte for byte the same on every run.
#
# Usage: make-dtw-projections.sh OUTDIR
# env: GPUSPEECH_BUILD (the build directory, default ./build).
# data/dtw-projection is this script's output (`make-dtw-projections.sh
# data/dtw-projection`).
set -eu
[ $# -eq 1 ] || { echo "usage: make-dtw-projections.sh OUTDIR" >&2; exit 2; }
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${GPUSPEECH_BUILD:-build}" && pwd)
TOOL=$BUILD/tools/gpuspeech-dtw
[ -x "$TOOL" ] || { echo "make-dtw-projections.sh: $TOOL not found (build first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$SRC/tests/dtw/make_projection_corpus.sh" "$work/corpus1" 1
"$SRC/tests/dtw/make_projection_corpus.sh" "$work/corpus2" 2
# Relative corpus names: the maps' comments must not carry a temporary path.
cd "$work"
"$TOOL" --backend cpu --cache "$work/cache" --templates corpus1 --calibrate-projection corpus2 \
  --learn-projection "$OUT/plp.projection"
"$TOOL" --backend cpu --cache "$work/cache" --templates corpus1 --calibrate-projection corpus2 \
  --learn-band-limited --learn-projection "$OUT/plp-4khz.projection"
echo "make-dtw-projections.sh: maps in $OUT" >&2
