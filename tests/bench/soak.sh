#!/bin/bash
# A soak of long-lived decoding streams (issue 14's reliability check, run
# by hand): gpuspeech-bench decode with --repeat, its resident memory and,
# where nvidia-smi answers, the first GPU's memory in use sampled every
# INTERVAL seconds. Memory should stay flat once every stream has met its
# largest utterance: the summary compares the sample at a tenth of the run
# (after warm-up) with the last and the largest.
#
# usage: tests/bench/soak.sh BENCH INTERVAL_S LOG [gpuspeech-bench decode args...]
#   e.g. tests/bench/soak.sh build/tools/gpuspeech-bench 30 /tmp/soak.log \
#          --backend cpu --streams 1 --repeat 1500 --hmm ... --lm ... FILE...
set -u
[ $# -ge 4 ] || { sed -n '2,10p' "$0"; exit 2; }
bench=$1 interval=$2 log=$3
shift 3
start=$(date +%s)
"$bench" decode "$@" >"$log.out" 2>&1 &
pid=$!
: >"$log"
while kill -0 $pid 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print int($2 / 1024)}' /proc/$pid/status 2>/dev/null)
  gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
  [ -n "$rss" ] && echo "$(( $(date +%s) - start )) $rss ${gpu:--1}" >>"$log"
  sleep "$interval"
done
wait $pid
status=$?
cat "$log.out"
awk -v status=$status '
  { t[NR] = $1; m[NR] = $2; g[NR] = $3; if ($2 > max) max = $2; if ($3 > gmax) gmax = $3 }
  END {
    if (NR < 3) { print "soak: too few samples"; exit 1 }
    w = int(NR / 10); if (w < 1) w = 1
    printf "soak: %d s, %d samples; RSS %d MiB at %d s (after warm-up), %d MiB at the end, %d MiB at most",
           t[NR], NR, m[w], t[w], m[NR], max
    if (g[NR] >= 0)
      printf "; GPU memory in use %d MiB at %d s, %d MiB at the end, %d MiB at most", g[w], t[w], g[NR], gmax
    printf "; exit %d\n", status
  }' "$log"
exit $status
