#!/bin/bash
# gpuspeech-bench decode, the many-streams benchmark, on the CPU with the
# goforward grammar (small and quick): its RESULT line on good input (batch
# and live), --adapt's stages (with a small LM), and a clear error and a
# non-zero status on bad input.
#
# Usage: test_bench_decode_cli.sh PATH/TO/gpuspeech-bench
# Needs pocketsphinx-testdata / pocketsphinx-en-us under /usr/share/pocketsphinx
# (GPUSPEECH_AUDIO_DIR, GPUSPEECH_MODEL_DIR override).
set -u
TOOL=$1
DATA=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}
MODEL=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
source "$(dirname "$0")/cli_util.sh"
ERROR_PREFIX="gpuspeech-bench"
cli_setup bench

[ -f "$DATA/goforward.raw" ] && [ -f "$MODEL/en-us/mdef" ] || { echo "missing pocketsphinx data"; exit 1; }

run() {
  "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
    --jsgf "$DATA/goforward.gram" --cache "$T/cache" "$@"
}
# field NAME: the value of NAME= in the RESULT line of $T/out.
field() { grep '^RESULT bench=decode ' "$T/out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# --- good input ---------------------------------------------------------------

# goforward.raw is 16-bit samples at 16 kHz; --repeat 3 decodes the list of
# two three times over: six copies of its audio in all.
want_audio=$(awk -v b="$(stat -c %s "$DATA/goforward.raw")" 'BEGIN { printf "%.3f", 6 * b / 2 / 16000 }')
if run --streams 2 --repeat 3 "$DATA/goforward.raw" "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
  if [ "$(field streams)" = 2 ] && [ "$(field errors)" = 0 ] && [ "$(field live)" = 0 ] &&
     [ "$(field audio_s)" = "$want_audio" ] && [ "$(field device_streams)" = - ] &&
     awk -v x="$(field xrt)" -v s="$(field search_s)" 'BEGIN { exit !(x > 0 && s >= 0) }'; then
    pass "batch, 2 streams: $(grep "^decode: [0-9.]* s of audio" "$T/out")"
  else
    fail "batch, 2 streams: unexpected RESULT: $(grep '^RESULT' "$T/out")"
  fi
  if grep -q '^stages summed over the streams: features ' "$T/out"; then
    pass "batch: the stages line"
  else
    fail "batch: no stages line: $(cat "$T/out")"
  fi
  # The host CPU line: the streams' threads did use CPU in scoring or
  # search, and no more than the whole process (thread and process clocks
  # tick apart, so a little slack).
  cpu_line=$(grep '^host CPU, core-seconds: process ' "$T/out")
  if echo "$cpu_line" | awk '{ gsub(/[;,()]/, " ");
        for (i = 1; i <= NF; ++i) { if ($i == "process") p = $(i + 1); if ($i == "scoring") sc = $(i + 1);
                                    if ($i == "search") se = $(i + 1) }
        exit !(sc + se > 0 && se >= 0 && sc + se <= 1.05 * p + 0.05) }'; then
    pass "batch: the host CPU line: $cpu_line"
  else
    fail "batch: host CPU line missing or inconsistent: $(cat "$T/out")"
  fi
else
  fail "batch, 2 streams: status $?: $(cat "$T/err")"
fi

# --words: the same file under two names (a link), decoded six times by two
# streams, is one line of words; every decoding matched the first, and a
# stream alone writes the same line.
ln -s "$DATA/goforward.raw" "$T/linked.raw"
if run --streams 2 --repeat 3 --words "$T/words2" "$DATA/goforward.raw" "$T/linked.raw" >"$T/out" 2>"$T/err" &&
   run --streams 1 --words "$T/words1" "$DATA/goforward.raw" >"$T/out1" 2>"$T/err1"; then
  line=$(cat "$T/words2")
  if [ "$(wc -l <"$T/words2")" = 1 ] && [ "${line%%$'\t'*}" = "$(readlink -f "$DATA/goforward.raw")" ] &&
     echo "$line" | grep -Eq $'\t''go\([0-9]+-[0-9]+\) forward\([0-9]+-[0-9]+\) ' &&
     grep -q '^words: 6 decodings of 1 distinct files, 0 differing' "$T/out" &&
     cmp -s "$T/words1" "$T/words2"; then
    pass "--words: six decodings, one line, as a stream alone: $line"
  else
    fail "--words: unexpected: $(cat "$T/words2") / $(cat "$T/words1"); $(grep '^words' "$T/out")"
  fi
else
  fail "--words: status $?: $(cat "$T/err" "$T/err1" 2>/dev/null)"
fi

# Live: each stream fed at real time for one second, partial results timed.
if run --streams 2 --live --seconds 1 "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
  if [ "$(field live)" = 1 ] && [ "$(field errors)" = 0 ] &&
     awk -v p="$(field lag_p99_ms)" 'BEGIN { exit !(p >= 0 && p < 1e6) }' &&
     grep -q '^live: .* lag p50 ' "$T/out"; then
    pass "live, 2 streams: $(grep '^live: ' "$T/out")"
  else
    fail "live, 2 streams: unexpected output: $(cat "$T/out")"
  fi
else
  fail "live, 2 streams: status $?: $(cat "$T/err")"
fi

# --adapt (the element's speaker adaptation: each stream one speaker) with
# pocketsphinx-testdata's small LM (compiled whole, so no lattice pass):
# goforward.raw four times over in one stream is enough speech for a
# transform, so the adaptation's stages all ran and took time.
if "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
     --lm "$DATA/turtle.lm.bin" --lattice-lw 0 --cache "$T/cache" --streams 1 --repeat 4 --adapt \
     "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
  line=$(grep '^adaptation, core-seconds: ' "$T/out")
  if [ "$(field errors)" = 0 ] && grep -q '^decode: 1 stream, .*adapting' "$T/out" &&
     echo "$line" | awk '{ gsub(/[,()]/, " ");
        for (i = 1; i <= NF; ++i) { if ($i == "alignments") a = $(i + 1); if ($i == "statistics") s = $(i + 1);
                                    if ($i == "estimates") e = $(i + 1); if ($i == "decodings") d = $(i + 1) }
        exit !(a > 0 && s > 0 && e > 0 && d > 0) }'; then
    pass "--adapt: $line"
  else
    fail "--adapt: no adaptation line, or a stage that never ran: $(cat "$T/out")"
  fi
else
  fail "--adapt: status $?: $(cat "$T/err")"
fi

# --redecode-min-gain: a gain no estimate reaches keeps every first pass
# (the estimates still run), 0 decodes again after every new estimate.
# The second run also gives --adapt-young-frames, which the line reports.
for g in 0 1000; do
  young=(); [ $g = 1000 ] && young=(--adapt-young-frames 250)
  if "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
       --lm "$DATA/turtle.lm.bin" --lattice-lw 0 --cache "$T/cache" --streams 1 --repeat 4 --adapt \
       --redecode-min-gain $g "${young[@]}" "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
    line=$(grep '^adaptation, core-seconds: ' "$T/out")
    again=$(echo "$line" | sed -nE 's/.*decoded again ([0-9]+) \(min gain ([0-9.e+]+)\).*/\1 \2/p')
    est=$(echo "$line" | sed -nE 's/.*estimates ([0-9.]+),.*/\1/p')
    if [ $g = 0 ] && [ "${again% *}" -ge 1 ] 2>/dev/null && [ "${again#* }" = 0 ]; then
      pass "--redecode-min-gain 0: $again"
    elif [ $g = 1000 ] && [ "$again" = "0 1000" ] && awk -v e="$est" 'BEGIN { exit !(e > 0) }' &&
         [[ $line == *"young form below 250 frames; VTLN warps 0 (off)" ]]; then
      pass "--redecode-min-gain 1000: no second decoding, estimates $est s; --adapt-young-frames 250 reported"
    else
      fail "--redecode-min-gain $g: $line"
    fi
  else
    fail "--redecode-min-gain $g: status $?: $(cat "$T/err")"
  fi
done

# --adapt-young-vtln: the stream's first estimate is a VTLN warp, the
# line counts it; without the flag no estimate is one (the run above).
if "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
     --lm "$DATA/turtle.lm.bin" --lattice-lw 0 --cache "$T/cache" --streams 1 --repeat 4 --adapt \
     --redecode-min-gain 0 --adapt-young-vtln "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
  line=$(grep '^adaptation, core-seconds: ' "$T/out")
  warps=$(echo "$line" | sed -nE 's/.*; VTLN warps ([0-9]+)$/\1/p')
  if [ "$warps" = 1 ]; then
    pass "--adapt-young-vtln: one warp, the stream's first estimate: $line"
  else
    fail "--adapt-young-vtln: expected one warp: $line"
  fi
else
  fail "--adapt-young-vtln: status $?: $(cat "$T/err")"
fi

# --live-features: the live chain's front end with live CMN's trace, which
# --adapt uses as gpudecoder does (utterance-cmn): a stream's first
# utterance, too short for a transform, is decoded again with its own
# mean; without the trace it is not (and a gain of 1000 rules out a
# second decoding for a transform).
for f in "" --live-features; do
  if "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
       --lm "$DATA/turtle.lm.bin" --lattice-lw 0 --cache "$T/cache" --streams 1 --adapt \
       --redecode-min-gain 1000 $f "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
    again=$(sed -nE 's/^adaptation, core-seconds: .*decoded again ([0-9]+) .*/\1/p' "$T/out")
    want=0; [ -n "$f" ] && want=1
    if [ "$again" = "$want" ] && [ "$(field errors)" = 0 ] &&
       { [ -z "$f" ] || grep -q '^decode: 1 stream, .*live-chain features with their CMN trace' "$T/out"; }; then
      pass "${f:-batch features}: first utterance decoded again $again times"
    else
      fail "${f:-batch features}: decoded again '$again', expected $want: $(cat "$T/out")"
    fi
  else
    fail "${f:-batch features}: status $?: $(cat "$T/err")"
  fi
done

# --spread-starts: live streams begin at different points of their file.
# goforward.raw is 3.6 s; fed 2 s, stream 0 (phase 0) ends no utterance
# before its last, stream 1 (phase 0.618, 2.2 s in) reaches the file's end
# after 1.4 s and starts it again: 3 utterances with the flag, 2 without.
for s in "" --spread-starts; do
  if "$TOOL" decode --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
       --lm "$DATA/turtle.lm.bin" --lattice-lw 0 --cache "$T/cache" --streams 2 --live --seconds 2 --adapt \
       $s "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
    n=$(sed -nE 's/^adaptation, core-seconds: .*utterances ([0-9]+),.*/\1/p' "$T/out")
    want=2; [ -n "$s" ] && want=3
    if [ "$n" = "$want" ] && [ "$(field errors)" = 0 ] &&
       { [ -z "$s" ] || grep -q '^live: .*(starts spread over the files)' "$T/out"; }; then
      pass "live ${s:-without --spread-starts}: $n utterances"
    else
      fail "live ${s:-without --spread-starts}: $n utterances, expected $want: $(cat "$T/out")"
    fi
  else
    fail "live $s: status $?: $(cat "$T/err")"
  fi
done

# --- bad input ----------------------------------------------------------------

expect_error "missing file" 1 "$T/none.wav: cannot open" "$T/none.wav"
expect_error "no files" 2 "no input files"
expect_error "--streams 0" 2 "--streams needs an integer in 1..4096, got '0'" --streams 0 "$DATA/goforward.raw"
expect_error "--maxactive x" 2 "--maxactive needs an integer" --maxactive x "$DATA/goforward.raw"
expect_error "--batched-search maybe" 2 "must be on, off or auto, got 'maybe'" \
  --batched-search maybe "$DATA/goforward.raw"
expect_error "--seconds -1" 2 "--seconds needs a positive number" --live --seconds -1 "$DATA/goforward.raw"
expect_error "--lattice-lw -1" 2 "--lattice-lw needs a number >= 0, got '-1'" --lattice-lw -1 "$DATA/goforward.raw"
expect_error "--words into a missing folder" 1 "$T/none/words: cannot write" --words "$T/none/words" "$DATA/goforward.raw"
expect_error "--words with --live" 2 "--words checks batch mode only" --live --words "$T/w" "$DATA/goforward.raw"
expect_error "--adapt with a grammar" 2 "--adapt needs an n-gram LM (--lm)" --adapt "$DATA/goforward.raw"
expect_error "--redecode-min-gain -1" 2 "--redecode-min-gain needs a number >= 0, got '-1'" \
  --adapt --redecode-min-gain -1 "$DATA/goforward.raw"
expect_error "--redecode-min-gain without --adapt" 2 "--redecode-min-gain applies to --adapt only" \
  --redecode-min-gain 0.1 "$DATA/goforward.raw"
expect_error "--adapt-young-frames x" 2 "--adapt-young-frames needs a number >= 0, got 'x'" \
  --adapt --adapt-young-frames x "$DATA/goforward.raw"
expect_error "--adapt-young-frames without --adapt" 2 "--adapt-young-frames and --adapt-young-vtln apply to --adapt only" \
  --adapt-young-frames 0 "$DATA/goforward.raw"
expect_error "--adapt-young-vtln without --adapt" 2 "--adapt-young-frames and --adapt-young-vtln apply to --adapt only" \
  --adapt-young-vtln "$DATA/goforward.raw"
expect_error "--spread-starts without --live" 2 "--spread-starts applies to --live only" \
  --spread-starts "$DATA/goforward.raw"
expect_error "unknown option" 2 "unknown option --fast" --fast "$DATA/goforward.raw"

cli_finish
