#!/usr/bin/env bash
# gpuspeech-transcribe with several streams against one, on the same files
# in one command (issue 14, "CPU"): the LibriVox utterances of
# pocketsphinx-testdata, COPIES times over (each copy its own utterance id),
# en-us model, dictionary and LM, CPU backend. Runs `--streams 1` and
# `--streams N` alternately REPEAT times, checks that their outputs are
# identical, and prints each run's whole-process wall time (GNU time,
# loading included), the medians and their ratio. docs/benchmarks.md
# records the results.
#
# usage: tests/bench/transcribe_streams.sh [TRANSCRIBE [N [EXTRA-ARGS...]]]
#   TRANSCRIBE  the gpuspeech-transcribe binary (default build/tools/gpuspeech-transcribe)
#   N           streams to compare with one (default: the number of cores)
#   EXTRA-ARGS  more options for both (default --backend cpu)
# env: GPUSPEECH_AUDIO_DIR, GPUSPEECH_MODEL_DIR, COPIES (default 4),
#      REPEAT (default 3).
set -euo pipefail

audio_dir=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}
model_root=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}
transcribe=${1:-build/tools/gpuspeech-transcribe}
streams=${2:-$(nproc)}
shift 2 || shift $# || true
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--backend cpu)
copies=${COPIES:-4}
repeat=${REPEAT:-3}

D=$audio_dir/librivox
M=$model_root/en-us
[ -r "$D/fileids" ] || { echo "transcribe_streams: cannot read $D/fileids" >&2; exit 2; }
[ -x "$transcribe" ] || { echo "transcribe_streams: $transcribe is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "transcribe_streams: needs GNU time (/usr/bin/time)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=()
for ((c = 1; c <= copies; c++)); do
  while read -r id; do
    [ -n "$id" ] || continue
    ln -s "$D/$id.wav" "$work/$id-copy$c.wav"
    files+=("$work/$id-copy$c.wav")
  done <"$D/fileids"
done

run() {  # streams, output name; prints the wall seconds
  /usr/bin/time -f '%e' -o "$work/$2.time" "$transcribe" "${extra[@]}" --streams "$1" \
    --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" --lm "$M/en-us.lm.bin" \
    "${files[@]}" >"$work/$2.trn" 2>"$work/$2.log" ||
    { echo "transcribe_streams: --streams $1 failed:" >&2; tail -5 "$work/$2.log" >&2; exit 1; }
  cat "$work/$2.time"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

one=() many=()
for ((r = 1; r <= repeat; r++)); do
  one+=("$(run 1 one)")
  many+=("$(run "$streams" many)")
  cmp -s "$work/one.trn" "$work/many.trn" ||
    { echo "transcribe_streams: --streams $streams printed other results than --streams 1" >&2; exit 1; }
  echo "round $r: --streams 1 ${one[-1]} s, --streams $streams ${many[-1]} s"
done
m1=$(printf '%s\n' "${one[@]}" | median)
mn=$(printf '%s\n' "${many[@]}" | median)
audio=$(sed -n 's/.* \([0-9.]*\) s audio.*/\1/p' "$work/one.log" | tail -1)
echo "files: ${#files[@]}, audio: $audio s; outputs identical"
echo "median wall: --streams 1 $m1 s, --streams $streams $mn s, ratio $(awk -v a="$mn" -v b="$m1" 'BEGIN { printf "%.3f", a / b }')"
grep -h 'RTF' "$work/one.log" "$work/many.log"
