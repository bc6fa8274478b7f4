#!/bin/bash
# Cross-speaker accuracy and out-of-vocabulary rejection of gpuspeech-dtw
# on the set of tests/dtw/make_speaker_set.sh: 12 command words, templates
# by six voices (flite rms, slt; four espeak-ng voices), tests by six others
# (flite awb, kal16, kal at 8 kHz; three espeak-ng voices), each as spoken
# and twice perturbed (tempo +-10 %, pitch +-100 cents, -20 dB, noise): 216
# tests, chance 8.3 %; and 60 two-syllable and 60 one-syllable
# out-of-vocabulary words by the test voices.
#
# Prints accuracy per test voice and perturbation and the confusions with
# the defaults, then checks bounds a few points below what was measured
# (docs/dtw.md): accuracy with the defaults, that they beat plain nearest
# neighbour without warping and the first pass alone (--rescore 0, no
# re-ranking by the path power mean), rejection learnt from the
# templates (--reject auto at its default scale) and by the shipped map
# (--reject mapped). The set is deterministic (flite,
# espeak-ng, sox -R, seeded dither).
#
# Usage: test_dtw_speakers.sh PATH/TO/gpuspeech-dtw PATH/TO/make_speaker_set.sh
# Needs flite, espeak-ng and sox (exit 77, a skip, without them).
set -u
TOOL=$1
MAKE=$2
T=$(mktemp -d /tmp/gpuspeech-dtw-spk-XXXXXX)
trap 'rm -rf "$T"' EXIT
for tool in flite espeak-ng sox; do command -v $tool >/dev/null || { echo "missing $tool"; exit 77; }; done

sh "$MAKE" "$T/set" || exit 1
failures=0

# recognise OUT OPTIONS...: hypotheses of the in-vocabulary tests in OUT,
# of the out-of-vocabulary files in OUT.oov.
recognise() {
  local out=$1
  shift
  "$TOOL" --backend cpu --cache "$T/cache" --templates "$T/set/templates" "$@" "$T/set"/tests/*.wav \
    > "$out" 2> "$T/err" || { cat "$T/err"; return 1; }
  "$TOOL" --backend cpu --cache "$T/cache" --templates "$T/set/templates" "$@" "$T/set"/oov/*.wav \
    > "$out.oov" 2> "$T/err" || { cat "$T/err"; return 1; }
}

# percent HYP: tests whose label is the reference's, in percent (integer).
percent() {
  awk 'FNR == NR { ref[$NF] = $1; next }
       { n++; if (NF == 2 && $1 == ref[$NF]) c++ }
       END { printf "%d\n", n ? 100 * c / n : 0 }' "$T/set/ref.trn" "$1"
}
# rejected FILE: lines with an empty label, in percent (integer).
rejected() {
  awk '{ n++; if (NF == 1) r++ } END { printf "%d\n", n ? 100 * r / n : 0 }' "$1"
}

check() {  # NAME GOT OP BOUND
  if [ "$2" "$3" "$4" ]; then echo "ok   $1: $2 % ($3 $4 %)"
  else echo "FAIL $1: $2 % (wanted $3 $4 %)"; failures=$((failures + 1)); fi
}

recognise "$T/default" || exit 1
# Accuracy per test voice and per perturbation; the confusions.
awk 'FNR == NR { ref[$NF] = $1; next }
     { id = $NF; gsub(/[()]/, "", id); split(id, p, "_"); ok = (NF == 2 && $1 == ref[$NF])
       nv[p[2]]++; cv[p[2]] += ok; nc[p[3]]++; cc[p[3]] += ok
       if (!ok) conf[ref[$NF] " -> " (NF == 2 ? $1 : "(rejected)")]++ }
     END { printf "per voice:"; for (v in nv) printf "  %s %.0f %%", v, 100 * cv[v] / nv[v]; print ""
           printf "per perturbation:"; for (c in nc) printf "  %s %.0f %%", c, 100 * cc[c] / nc[c]; print ""
           printf "confusions:"; for (c in conf) printf "  %s: %d", c, conf[c]; print "" }' \
  "$T/set/ref.trn" "$T/default"
default=$(percent "$T/default")
recognise "$T/plain" --warps 1 --k 1 || exit 1
plain=$(percent "$T/plain")
recognise "$T/first" --rescore 0 || exit 1
first=$(percent "$T/first")
recognise "$T/nobands" --band-match off || exit 1
nobands=$(percent "$T/nobands")
recognise "$T/auto" --reject auto || exit 1
"$TOOL" --backend cpu --cache "$T/cache" --templates "$T/set/templates" --reject auto "$T/set"/oov1/*.wav \
  > "$T/auto.oov1" 2> "$T/err" || { cat "$T/err"; exit 1; }
"$TOOL" --backend cpu --cache "$T/cache" --templates "$T/set/templates" --reject auto --syllable-check off \
  "$T/set"/oov/*.wav > "$T/auto-nosyl.oov" 2> "$T/err" || { cat "$T/err"; exit 1; }
recognise "$T/mapped" --reject mapped || exit 1
"$TOOL" --backend cpu --cache "$T/cache" --templates "$T/set/templates" --reject mapped "$T/set"/oov1/*.wav \
  > "$T/mapped.oov1" 2> "$T/err" || { cat "$T/err"; exit 1; }

# Measured (Debian 12, flite 2.2, espeak-ng 1.51, sox 14.4.2; docs/dtw.md):
# defaults (with their rejection, --reject mapped, which rejects none of
# the 216) 95.4 % (206 of 216), --band-match off 94.0 %, --rescore 0
# 93.1 %, --warps 1 --k 1 85.6 %; --reject auto (with its syllable check):
# 0.5 % of the in-vocabulary tests, 96.7 % of the two-syllable and 30.0 %
# of the one-syllable out-of-vocabulary words rejected; without the
# syllable check 56.7 % of the two-syllable ones; --reject mapped (the
# shipped map and its threshold): 0.0 %, 96.7 % and 26.7 %. The defaults'
# bound is issue 16's goal itself (95 %: 206 of 216, no slack); the others
# leave two to four files: 90 % is 54 of 60, 28 % 17 of 60, 20 % 12.
check "defaults" "$default" -ge 95
check "band matching off (must stay below the defaults)" "$nobands" -lt "$default"
check "nearest neighbour without warping (must stay below the defaults)" "$plain" -lt "$default"
check "first pass only, --rescore 0 (must stay below the defaults)" "$first" -lt "$default"
check "--reject auto: in-vocabulary rejected" "$(rejected "$T/auto")" -le 5
check "--reject auto: out-of-vocabulary rejected" "$(rejected "$T/auto.oov")" -ge 90
check "--reject auto --syllable-check off (must stay below the check)" "$(rejected "$T/auto-nosyl.oov")" -lt \
  "$(rejected "$T/auto.oov")"
check "--reject auto: one-syllable out-of-vocabulary rejected" "$(rejected "$T/auto.oov1")" -ge 28
check "--reject mapped: in-vocabulary rejected" "$(rejected "$T/mapped")" -le 5
check "--reject mapped: out-of-vocabulary rejected" "$(rejected "$T/mapped.oov")" -ge 90
check "--reject mapped: one-syllable out-of-vocabulary rejected" "$(rejected "$T/mapped.oov1")" -ge 20
exit $((failures > 0))
