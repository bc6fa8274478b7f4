#!/bin/bash
# gpuspeech-dtw on good input (chirp "words" made with sox: rising, falling
# and warbling tones, recognised at other tempos and levels; trn lines;
# template lists; the feature cache; --reject) and on bad input (each must
# exit non-zero, by status and not by a signal, with a "gpuspeech-dtw:
# error:" line naming the file and the problem).
#
# Usage: test_dtw_cli.sh PATH/TO/gpuspeech-dtw
# Needs sox.
set -u
TOOL=$1
source "$(dirname "$0")/cli_util.sh"
ERROR_PREFIX="gpuspeech-dtw: error: "
cli_setup dtw

command -v sox >/dev/null || { echo "missing sox"; exit 1; }

# Tones are no speech: rejection (on by default, by the installed map and
# the syllable count) is off unless a check asks for it.
run() { "$TOOL" --backend cpu --cache "$T/cache" --reject off "$@"; }

# word NAME DURATION SYNTH-ARGS [EFFECTS...]: a tone "word" between silences.
word() {
  local out=$1 dur=$2 type=$3 freq=$4
  shift 4
  sox -R -n -r 16000 -b 16 -c 1 "$out" synth "$dur" "$type" "$freq" "$@" vol 0.5 pad 0.3 0.3
}

mkdir -p "$T/tpl" "$T/test"
word "$T/tpl/up_a.wav" 0.5 sine 300-1500
word "$T/tpl/up_b.wav" 0.6 sine 350-1400
word "$T/tpl/down_a.wav" 0.5 sine 1500-300
word "$T/tpl/wobble_a.wav" 0.5 sine 800 tremolo 8 60
echo "not a template" > "$T/tpl/readme.txt"   # not *.wav: ignored
word "$T/test/t1.wav" 0.7 sine 320-1450       # slow up
word "$T/test/t2.wav" 0.35 sine 1450-320      # fast down
word "$T/test/t3.wav" 0.6 sine 820 tremolo 6 60
sox "$T/test/t1.wav" "$T/test/t4.wav" vol 0.3  # quiet up

# --- good input ---------------------------------------------------------------

if run --templates "$T/tpl" "$T"/test/t1.wav "$T"/test/t2.wav "$T"/test/t3.wav "$T"/test/t4.wav \
     >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "$(printf 'up (t1)\ndown (t2)\nwobble (t3)\nup (t4)')" ]; then
  pass "directory of templates: labels from names, trn lines"
else
  fail "directory of templates: status $?, got '$(cat "$T/out")': $(cat "$T/err")"
fi
# The test tones have nothing above 4 kHz, so band matching also made the
# templates' features cut at 4 kHz: an entry per template and band.
if ls "$T/cache/dtw/"dtw-*.feat >/dev/null 2>&1 && [ "$(ls "$T/cache/dtw/" | wc -l)" -eq 8 ]; then
  pass "one cache entry per template and band"
else
  fail "cache: $(ls -R "$T/cache" 2>&1)"
fi
if "$TOOL" --backend cpu --cache "$T/cache-wide" --band-match off --templates "$T/tpl" "$T/test/t1.wav" \
     >"$T/out" 2>"$T/err" && [ "$(cat "$T/out")" = "up (t1)" ] && [ "$(ls "$T/cache-wide/dtw/" | wc -l)" -eq 4 ]; then
  pass "--band-match off: the configured band only"
else
  fail "--band-match off: $(cat "$T/out") $(cat "$T/err") $(ls -R "$T/cache-wide" 2>&1)"
fi
run -v --templates "$T/tpl" "$T/test/t1.wav" >"$T/out" 2>"$T/err"
if grep -q '4 from the cache' "$T/err" && grep -q 'best up .*runner-up ' "$T/err"; then
  pass "second run reads the cache; --verbose shows distance and runner-up"
else
  fail "verbose/cache: $(cat "$T/err")"
fi
for opt in "--features fbank" "--features spectrum" "--pattern symmetric" "--band 20" \
           "--distance cepstral" "--backend opencl" "--backend auto" "--warps 1" "--warps 0.9,1.1 --k 1" \
           "--lifter 0" "--average add" "--average only" "--reject auto --reject-scale 100"; do
  # shellcheck disable=SC2086
  if run --templates "$T/tpl" $opt "$T/test/t1.wav" "$T/test/t2.wav" >"$T/out" 2>"$T/err" &&
     [ "$(cat "$T/out")" = "$(printf 'up (t1)\ndown (t2)')" ]; then
    pass "$opt"
  elif grep -q 'not compiled\|no usable\|no OpenCL\|no CUDA' "$T/err"; then
    pass "$opt: not available here ($(head -1 "$T/err"))"
  else
    fail "$opt: got '$(cat "$T/out")': $(cat "$T/err")"
  fi
done
# A scale far below the templates' own: everything is rejected.
if run --templates "$T/tpl" --reject auto --reject-scale 0.001 "$T/test/t1.wav" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = " (t1)" ] && grep -q '1 rejected' "$T/err"; then
  pass "--reject auto: threshold from the templates"
else
  fail "--reject auto: got '$(cat "$T/out")': $(cat "$T/err")"
fi
# --dump-distances: a header of the 4 templates (ID:FRAMES), then one line
# per file and warp (2 files x 5 default warps) of 3 + 4 fields; with k 1
# the smallest distance over a file's lines is the score --verbose prints.
if run -v --k 1 --templates "$T/tpl" --dump-distances "$T/dump" "$T/test/t1.wav" "$T/test/t2.wav" \
     >"$T/out" 2>"$T/err" &&
   [ "$(head -1 "$T/dump" | awk '{ print $1, NF }')" = "templates 5" ] &&
   head -1 "$T/dump" | grep -q ' up_a:[0-9][0-9]* ' &&
   [ "$(tail -n +2 "$T/dump" | awk 'NF == 7' | wc -l)" -eq 10 ] &&
   [ "$(tail -n +2 "$T/dump" | awk '$1 == "t1" { for (i = 4; i <= NF; i++) if (m == "" || $i < m) m = $i }
        END { printf "%.4f", m }')" = "$(sed -n 's/.*t1: best up \([0-9.]*\) .*/\1/p' "$T/err")" ]; then
  pass "--dump-distances: every template's distance per file and warp"
else
  fail "--dump-distances: $(head -3 "$T/dump" 2>&1) / $(cat "$T/err")"
fi
printf '# a list with labels\nrise tpl/up_a.wav\n\nfall %s/tpl/down_a.wav\ntpl/wobble_a.wav\n' "$T" > "$T/list.txt"
if run --templates "$T/list.txt" "$T/test/t1.wav" "$T/test/t2.wav" "$T/test/t3.wav" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "$(printf 'rise (t1)\nfall (t2)\nwobble (t3)')" ]; then
  pass "template list: labels given, relative and absolute paths"
else
  fail "template list: got '$(cat "$T/out")': $(cat "$T/err")"
fi
if run --templates "$T/tpl" --reject 0.001 "$T/test/t1.wav" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = " (t1)" ] && grep -q '1 rejected' "$T/err"; then
  pass "--reject: an empty label"
else
  fail "--reject: got '$(cat "$T/out")': $(cat "$T/err")"
fi

# --learn-projection: the tones as a corpus (up said twice, two other words).
if run --templates "$T/tpl" --band-match off --learn-projection "$T/map.txt" >"$T/out" 2>"$T/err" &&
   [ "$(head -1 "$T/map.txt")" = "gpuspeech-dtw-projection 1" ] &&
   grep -q '^output-dim 13$' "$T/map.txt" && grep -q '4 recordings' "$T/err" &&
   [ "$(sed -n '/^weights$/,$p' "$T/map.txt" | tail -n +2 | wc -l)" -eq 13 ]; then
  pass "--learn-projection writes a map of 13 rows"
else
  fail "--learn-projection: $(cat "$T/err") $(head -c 400 "$T/map.txt" 2>&1)"
fi

# --reject mapped with no --projection: the map shipped for the default
# features (data/dtw-projection), its threshold in force. -v prints the
# largest of the words' thresholds: here a word of one template's, the
# map's first.
SHIPPED=$(dirname "$0")/../data/dtw-projection/plp.projection
want=$(awk '$1 == "threshold" { printf "%.4f", $2 }' "$SHIPPED")
if run --templates "$T/tpl" --reject mapped -v "$T/test/t1.wav" >"$T/out" 2>"$T/err" &&
   [ -n "$want" ] && grep -q "rejection threshold $want" "$T/err" && grep -q ', mapped [0-9.]*; ' "$T/err"; then
  pass "--reject mapped: the shipped map's threshold $want"
else
  fail "--reject mapped: wanted threshold '$want': $(cat "$T/err")"
fi

# The default rejection: the installed map for the default features...
if "$TOOL" --backend cpu --cache "$T/cache" -v --templates "$T/tpl" "$T/test/t1.wav" >"$T/out" 2>"$T/err" &&
   grep -q "rejection threshold $want" "$T/err" && grep -q ', mapped [0-9.]*; ' "$T/err"; then
  pass "default rejection: the installed map"
else
  fail "default rejection: $(cat "$T/err")"
fi
# ... and with features that no installed map was learnt on, nothing
# rejected and a warning.
if "$TOOL" --backend cpu --cache "$T/cache" --templates "$T/tpl" --features mfcc "$T/test/t1.wav" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "up (t1)" ] && grep -q "warning: nothing is rejected: no DTW projection map was learnt on these features" "$T/err"; then
  pass "default rejection, mfcc: off with a warning"
else
  fail "default rejection, mfcc: got '$(cat "$T/out")': $(cat "$T/err")"
fi

# --- bad input ------------------------------------------------------------------

mkdir -p "$T/empty" "$T/zero" "$T/rate" "$T/silent"
expect_error "empty template directory" 1 "$T/empty: no templates" --templates "$T/empty" "$T/test/t1.wav"
: > "$T/emptylist.txt"
expect_error "empty template list" 1 "emptylist.txt: no templates" --templates "$T/emptylist.txt" "$T/test/t1.wav"
# A WAV header with a data chunk of zero bytes.
printf 'RIFF\044\000\000\000WAVEfmt \020\000\000\000\001\000\001\000\200\076\000\000\000\175\000\000\002\000\020\000data\000\000\000\000' \
  > "$T/zero/yes_0.wav"
cp "$T/tpl/up_a.wav" "$T/zero/"
expect_error "zero-length template" 1 "zero/yes_0.wav: no audio (zero samples)" --templates "$T/zero" "$T/test/t1.wav"
sox -n -r 8000 -b 16 -c 1 "$T/rate/up_8k.wav" synth 0.5 sine 300-1500 pad 0.3 0.3
expect_error "template at 8 kHz" 1 "up_8k.wav: sample rate 8000 Hz" --templates "$T/rate" "$T/test/t1.wav"
sox -n -r 16000 -b 16 -c 1 "$T/silent/hush_1.wav" trim 0 1
expect_error "silent template" 1 "hush_1.wav: no speech found" --templates "$T/silent" "$T/test/t1.wav"
expect_error "missing template directory" 1 "nowhere" --templates "$T/nowhere" "$T/test/t1.wav"
printf 'a b c\n' > "$T/badlist.txt"
expect_error "malformed list line" 1 "badlist.txt:1: expected" --templates "$T/badlist.txt" "$T/test/t1.wav"
expect_error "no --templates" 2 "--templates is required" "$T/test/t1.wav"
expect_error "--learn-projection with input files" 2 "--learn-projection takes no input files" \
  --templates "$T/tpl" --learn-projection "$T/map2.txt" "$T/test/t1.wav"
mkdir -p "$T/oneword"
cp "$T/tpl/up_a.wav" "$T/tpl/up_b.wav" "$T/oneword/"
expect_error "--learn-projection from one word" 1 "needs at least two words" \
  --templates "$T/oneword" --learn-projection "$T/map3.txt"
expect_error "--learn-projection to an unwritable file" 1 "cannot write $T/nowhere/map.txt" \
  --templates "$T/tpl" --learn-projection "$T/nowhere/map.txt"
expect_error "--reject mapped, a map without a threshold" 1 "has no rejection threshold" \
  --templates "$T/tpl" --reject mapped --projection "$T/map.txt" "$T/test/t1.wav"
expect_error "--reject mapped, no map for mfcc in a named directory" 1 \
  "no DTW projection map was learnt on these features" \
  --templates "$T/tpl" --features mfcc --reject mapped --projection "$(dirname "$0")/../data/dtw-projection" \
  "$T/test/t1.wav"
expect_error "--reject mapped, a missing map" 1 "$T/none.projection: cannot open" \
  --templates "$T/tpl" --reject mapped --projection "$T/none.projection" "$T/test/t1.wav"
expect_error "--projection without --reject mapped" 2 "--projection goes with --reject mapped" \
  --templates "$T/tpl" --projection "$T/map.txt" "$T/test/t1.wav"
expect_error "--calibrate-projection without --learn-projection" 2 "go with --learn-projection" \
  --templates "$T/tpl" --calibrate-projection "$T/tpl" "$T/test/t1.wav"
expect_error "--calibrate-projection on too few voices" 1 "12 are needed" \
  --templates "$T/tpl" --learn-projection "$T/map4.txt" --calibrate-projection "$T/tpl"
expect_error "unknown features" 2 "unknown feature kind 'mel'" --templates "$T/tpl" --features mel "$T/test/t1.wav"
expect_error "cepstral distance on fbank" 2 "--distance cepstral needs cepstra" \
  --templates "$T/tpl" --features fbank --distance cepstral "$T/test/t1.wav"
expect_error "bad warp list" 2 "bad warp list" --templates "$T/tpl" --warps 0.9,,1 "$T/test/t1.wav"
expect_error "warps on the spectrum" 2 "--warps needs plp, mfcc or fbank" --templates "$T/tpl" --features spectrum \
  --warps 0.9,1 "$T/test/t1.wav"
expect_error "noise removal on plp" 2 "--remove-noise works on mfcc and fbank only" --templates "$T/tpl" \
  --remove-noise "$T/test/t1.wav"
expect_error "deltas on the spectrum" 2 "--deltas works on plp, mfcc and fbank only" --templates "$T/tpl" \
  --features spectrum --deltas "$T/test/t1.wav"
expect_error "k of 0" 2 "--k: expected an integer >= 1" --templates "$T/tpl" --k 0 "$T/test/t1.wav"
expect_error "negative --rescore" 2 "--rescore: expected an integer >= 0" --templates "$T/tpl" --rescore -1 "$T/test/t1.wav"
expect_error "--rescore-power below 1" 2 "--rescore-power: must be in [1, 16]" --templates "$T/tpl" \
  --rescore-power 0.5 "$T/test/t1.wav"
expect_error "negative --rescore-weight" 2 "--rescore-weight: must be >= 0" --templates "$T/tpl" \
  --rescore-weight -1 "$T/test/t1.wav"
expect_error "bad --reject" 2 "--reject: must be auto, mapped, off or a distance" --templates "$T/tpl" --reject -1 "$T/test/t1.wav"
expect_error "unknown averaging" 2 "unknown template averaging 'mean'" --templates "$T/tpl" --average mean "$T/test/t1.wav"
mkdir -p "$T/single" && cp "$T/tpl/up_a.wav" "$T/tpl/down_a.wav" "$T/single/"
expect_error "--reject auto, one template a word" 1 "at least two templates of one word" --templates "$T/single" \
  --reject auto "$T/test/t1.wav"
expect_error "unknown backend" 1 "unknown" --templates "$T/tpl" --backend tpu "$T/test/t1.wav"
# A bad test file fails alone: the good one is still recognised.
sox -n -r 8000 -b 16 -c 1 "$T/test/t8k.wav" synth 0.5 sine 300-1500
expect_error "test file at 8 kHz" 1 "t8k.wav: sample rate 8000 Hz" --templates "$T/tpl" "$T/test/t8k.wav" "$T/test/t1.wav"
if [ "$(cat "$T/out")" = "up (t1)" ]; then pass "the good file after a bad one"; else fail "after a bad file: '$(cat "$T/out")'"; fi
expect_error "missing test file" 1 "$T/test/none.wav" --templates "$T/tpl" "$T/test/none.wav"

cli_finish
