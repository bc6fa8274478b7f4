#!/usr/bin/env bash
# CPU decoding speed and accuracy, gpuspeech against pocketsphinx_batch, on
# the same files on the same machine in one command (issue 3, "Speed"):
# the LibriVox utterances of pocketsphinx-testdata with the en-us model,
# dictionary and LM. Each decoder runs REPEAT times, alternating, and the
# median wall time is reported; WER is scored by `sctk sclite` after the same
# normalisation of reference and hypotheses (lower case, <s> </s> and
# punctuation dropped). docs/benchmarks.md records the results.
#
# usage: tests/bench/cpu_vs_pocketsphinx.sh [TRANSCRIBE [EXTRA-ARGS...]]
#   TRANSCRIBE  the gpuspeech-transcribe binary (default build/tools/gpuspeech-transcribe)
#   EXTRA-ARGS  more options for it (e.g. --topn 0 for exact mixtures)
# env: GPUSPEECH_AUDIO_DIR (default /usr/share/pocketsphinx/test/data),
#      GPUSPEECH_MODEL_DIR (default /usr/share/pocketsphinx/model),
#      REPEAT (default 3), KEEP=dir to keep the hypotheses and logs there.
set -euo pipefail

audio_dir=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}
model_root=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}
repeat=${REPEAT:-3}
transcribe=${1:-build/tools/gpuspeech-transcribe}
shift || true

D=$audio_dir/librivox
M=$model_root/en-us
for f in "$D/fileids" "$D/transcription" "$M/en-us/mdef" "$M/cmudict-en-us.dict" "$M/en-us.lm.bin"; do
  [ -r "$f" ] || { echo "cpu_vs_pocketsphinx: cannot read $f" >&2; exit 2; }
done
[ -x "$transcribe" ] || { echo "cpu_vs_pocketsphinx: $transcribe is not an executable" >&2; exit 2; }
command -v pocketsphinx_batch >/dev/null || { echo "cpu_vs_pocketsphinx: pocketsphinx_batch not found" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "cpu_vs_pocketsphinx: needs GNU time (/usr/bin/time)" >&2; exit 2; }
command -v sctk >/dev/null || { echo "cpu_vs_pocketsphinx: sctk (sclite) not found" >&2; exit 2; }

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

wavs=()
while read -r id; do
  [ -n "$id" ] && wavs+=("$D/$id.wav")
done < "$D/fileids"
audio_s=$(for w in "${wavs[@]}"; do soxi -D "$w" 2>/dev/null || echo 0; done | awk '{s += $1} END {printf "%.2f", s}')

# wer_normalise: the WER tests' normalisation (tests/wer_util.sh).
. "$(cd "$(dirname "$0")/.." && pwd)/wer_util.sh"
# pocketsphinx_batch reads the samples after the WAV header (wav_header_bytes).
ps_header=$(wav_header_bytes "${wavs[@]}") || exit 2

wer() {  # hyp.trn -> "WER% (errors/words: sub del ins)", from sclite's raw counts
  wer_normalise "$1" > "$1.norm"
  sctk sclite -r "$work/ref.norm" trn -h "$1.norm" trn -i rm -o rsum stdout 2>/dev/null |
    awk -F'|' '/^\|[=-]+\|$/ { next } NF > 3 && $3 ~ /[0-9]/ && !seen { seen = 1;
      split($3, c, " "); split($4, e, " ");
      printf "%.1f%% (%d/%d: sub %d del %d ins %d)", 100 * e[5] / c[2], e[5], c[2], e[2], e[3], e[4] }'
}
wer_normalise "$D/transcription" > "$work/ref.norm"

now() { date +%s.%N; }

run_ps() {  # $1 = run index
  local t0 t1
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$work/ps.$1.time" pocketsphinx_batch -adcin yes -adchdr "$ps_header" \
    -cepdir "$D" -cepext .wav -ctl "$D/fileids" \
    -hmm "$M/en-us" -dict "$M/cmudict-en-us.dict" -lm "$M/en-us.lm.bin" \
    -hyp "$work/ps.hyp" > "$work/ps.$1.log" 2>&1
  t1=$(now)
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' > "$work/ps.$1.wall"
  # Its own decoding time (files read and decoded, models loaded before).
  sed -nE 's/.*TOTAL .* seconds CPU, ([0-9.]+) seconds wall.*/\1/p' "$work/ps.$1.log" > "$work/ps.$1.decode"
}

run_gs() {
  local t0 t1
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$work/gs.$run.time" \
    "$transcribe" --backend cpu -v "$@" "${wavs[@]}" > "$work/gs.hyp" 2> "$work/gs.$run.log"
  t1=$(now)
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' > "$work/gs.$run.wall"
  # "N file(s), A s audio, W s wall (L s loading), ...": W is recognition
  # alone (features, scoring, search), the loading not counted.
  sed -nE 's/.* ([0-9.]+) s wall \(([0-9.]+) s loading\).*/\1/p' "$work/gs.$run.log" > "$work/gs.$run.decode"
  sed -nE 's/.*features ([0-9.]+) s, scoring ([0-9.]+) s, search ([0-9.]+) s.*/\1 \2 \3/p' \
    "$work/gs.$run.log" > "$work/gs.$run.split"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq 1 "$repeat"); do
  if [ $((run % 2)) = 1 ]; then run_ps "$run"; run_gs "$@"; else run_gs "$@"; run_ps "$run"; fi
done

median() { sort -g | awk '{v[NR] = $1} END {printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ps_wall=$(cat "$work"/ps.*.wall | tr ' ' '\n' | median)
ps_dec=$(cat "$work"/ps.*.decode | median)
gs_wall=$(cat "$work"/gs.*.wall | median)
gs_dec=$(cat "$work"/gs.*.decode | median)
cpu_of() { cat "$work"/$1.*.time | awk '{print $1 + $2}' | median; }
ps_cpu=$(cpu_of ps)
gs_cpu=$(cpu_of gs)
gs_score=$(awk '{print $2}' "$work"/gs.*.split | median)
gs_search=$(awk '{print $3}' "$work"/gs.*.split | median)
rtf() { awk -v t="$1" -v a="$audio_s" 'BEGIN {printf "%.3f", t / a}'; }

echo "CPU decoding, $((${#wavs[@]})) LibriVox files, $audio_s s audio, median of $repeat runs"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average before: $load0"
echo "gpuspeech options: --backend cpu $*"
# wall: the whole process (loading included); cpu: its user + system time
# (robust when the machine is shared); decode: the decoder's own count of
# the time spent decoding, models loaded.
printf '%-22s %9s %7s %8s %11s %7s  %s\n' decoder "wall (s)" RTF "cpu (s)" "decode (s)" RTF WER
printf '%-22s %9s %7s %8s %11s %7s  %s\n' pocketsphinx_batch "$ps_wall" "$(rtf "$ps_wall")" \
  "$ps_cpu" "$ps_dec" "$(rtf "$ps_dec")" "$(wer "$work/ps.hyp")"
printf '%-22s %9s %7s %8s %11s %7s  %s\n' gpuspeech-transcribe "$gs_wall" "$(rtf "$gs_wall")" \
  "$gs_cpu" "$gs_dec" "$(rtf "$gs_dec")" "$(wer "$work/gs.hyp")"
echo "gpuspeech decode split: scoring $gs_score s, search $gs_search s"
awk -v a="$gs_wall" -v b="$ps_wall" -v c="$gs_dec" -v d="$ps_dec" 'BEGIN {
  printf "ratio gpuspeech / pocketsphinx: wall %.2f, decode %.2f", a / b, c / d }'
awk -v a="$gs_cpu" -v b="$ps_cpu" 'BEGIN { printf ", cpu %.2f\n", a / b }'
