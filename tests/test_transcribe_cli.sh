#!/bin/bash
# gpuspeech-transcribe on good input (sclite trn lines checked against
# pocketsphinx-testdata's transcriptions, word times, n-best, the graph
# cache) and on bad input (each must exit non-zero, by status and not by a
# signal, with a "gpuspeech-transcribe: error:" line that names the problem;
# a bad file among good ones fails alone).
#
# Usage: test_transcribe_cli.sh PATH/TO/gpuspeech-transcribe
# Needs sox and pocketsphinx-testdata / pocketsphinx-en-us under
# /usr/share/pocketsphinx (GPUSPEECH_AUDIO_DIR, GPUSPEECH_MODEL_DIR override).
set -u
TOOL=$1
DATA=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}
MODEL=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
source "$(dirname "$0")/cli_util.sh"
ERROR_PREFIX="gpuspeech-transcribe: error: "
cli_setup transcribe

command -v sox >/dev/null || { echo "missing sox"; exit 1; }
[ -f "$DATA/goforward.raw" ] && [ -f "$MODEL/en-us/mdef" ] || { echo "missing pocketsphinx data"; exit 1; }

# Every run on the CPU, the model given explicitly, graphs cached in $T.
run() {
  "$TOOL" --backend cpu --search cpu --hmm "$MODEL/en-us" --dict "$MODEL/cmudict-en-us.dict" \
    --cache "$T/cache" "$@"
}

# --- good input ---------------------------------------------------------------

if run --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ]; then
  pass "goforward.raw with goforward.gram"
else
  fail "goforward: status $?, got '$(cat "$T/out")': $(cat "$T/err")"
fi
if grep -q 'RTF' "$T/err" && grep -q 's audio' "$T/err"; then
  pass "timing summary on stderr: $(tail -1 "$T/err")"
else
  fail "no timing summary: $(cat "$T/err")"
fi

# The cards, all five in one run: one trn line each, the reference words.
sed -e 's/<s>//; s/<\/s>//; s/  */ /g; s/^ //; s/ (/ (/' "$DATA/cards/cards.transcription" >"$T/cards.ref"
if run --jsgf "$DATA/cards/cards.gram" "$DATA"/cards/00[1-5].wav >"$T/out" 2>"$T/err" &&
   diff -u "$T/cards.ref" "$T/out" >"$T/diff"; then
  pass "cards: five trn lines equal to cards.transcription"
else
  fail "cards: $(cat "$T/diff") $(cat "$T/err")"
fi

# Word times and n-best.
if run --fsg "$DATA/goforward.fsg" --times --nbest 2 "$DATA/goforward.raw" >"$T/out" 2>"$T/err"; then
  words=$(grep -c '^# [a-z]* [0-9]* [0-9]* [0-9.]*$' "$T/out")
  nbest=$(grep -c '^# nbest ' "$T/out")
  if [ "$(head -1 "$T/out")" = "go forward ten meters (goforward)" ] && [ "$words" -eq 4 ] && [ "$nbest" -ge 1 ]; then
    pass "--times (4 word lines) and --nbest ($nbest)"
  else
    fail "--times/--nbest output: $(cat "$T/out")"
  fi
else
  fail "--fsg goforward: $(cat "$T/err")"
fi

# Word times against pocketsphinx_continuous -time yes on the same file and
# grammar (seconds of 10 ms frames, end inclusive): within 3 frames.
if command -v pocketsphinx_continuous >/dev/null; then
  pocketsphinx_continuous -infile "$DATA/goforward.raw" -jsgf "$DATA/goforward.gram" -time yes \
    -hmm "$MODEL/en-us" -dict "$MODEL/cmudict-en-us.dict" 2>/dev/null |
    awk 'NF == 4 && $2 ~ /^[0-9.]+$/ && $1 !~ /^[<[]/ { printf "%s %d %d\n", $1, $2 * 100 + 0.5, $3 * 100 + 0.5 }' >"$T/ps.times"
  run --jsgf "$DATA/goforward.gram" --times "$DATA/goforward.raw" 2>/dev/null |
    awk '$1 == "#" { print $2, $3, $4 }' >"$T/our.times"
  if [ -s "$T/ps.times" ] && paste -d' ' "$T/ps.times" "$T/our.times" | awk '
      { if ($1 != $4) bad = 1; d1 = $2 - $5; d2 = $3 - $6
        if (d1 < -3 || d1 > 3 || d2 < -3 || d2 > 3) bad = 1; n++ }
      END { exit (bad || n != 4) }'; then
    pass "word times within 3 frames of pocketsphinx_continuous: $(tr '\n' ' ' <"$T/our.times")"
  else
    fail "word times: pocketsphinx $(tr '\n' ' ' <"$T/ps.times") vs ours $(tr '\n' ' ' <"$T/our.times")"
  fi
else
  echo "skip word times (no pocketsphinx_continuous)"
fi

# The front end's noise subtraction and silence removal (on by default):
# goforward after 2 s of low white noise. Silence removal drops most of the
# noise, yet --times counts frames in the audio, so the words' times agree
# (within 3 frames) with a run that keeps every frame, and lie about 200
# frames after those of goforward alone. Without the flags' effect the
# verbose frame counts would be equal.
sox -R -n -r 16000 -b 16 -c 1 "$T/lead.wav" synth 2 whitenoise vol 0.003 2>/dev/null
sox "$T/lead.wav" -t raw -r 16000 -e signed -b 16 -c 1 "$DATA/goforward.raw" "$T/padded.wav" 2>/dev/null
run -v --jsgf "$DATA/goforward.gram" --times "$T/padded.wav" >"$T/def.out" 2>"$T/def.err"
run -v --jsgf "$DATA/goforward.gram" --times --no-remove-silence "$T/padded.wav" >"$T/keep.out" 2>"$T/keep.err"
run -v --jsgf "$DATA/goforward.gram" --times --no-remove-noise --no-remove-silence "$T/padded.wav" >"$T/off.out" 2>"$T/off.err"
frames() { sed -n 's/.* \([0-9]*\) frames,.*/\1/p' "$1" | head -1; }
if [ "$(head -1 "$T/def.out")" = "go forward ten meters (padded)" ] &&
   [ "$(head -1 "$T/keep.out")" = "go forward ten meters (padded)" ] &&
   [ -n "$(frames "$T/def.err")" ] && [ "$(frames "$T/def.err")" -lt $(($(frames "$T/keep.err") - 100)) ] &&
   paste -d' ' <(awk '$1 == "#" { print $2, $3, $4 }' "$T/def.out") \
               <(awk '$1 == "#" { print $2, $3, $4 }' "$T/keep.out") | awk '
      { if ($1 != $4) bad = 1; d1 = $2 - $5; d2 = $3 - $6
        if (d1 < -3 || d1 > 3 || d2 < -3 || d2 > 3 || $2 < 190) bad = 1; n++ }
      END { exit (bad || n != 4) }'; then
  pass "silence removal: $(frames "$T/def.err") of $(frames "$T/keep.err") frames decoded, word times on the audio clock: $(awk '$1 == "#" { printf "%s %s %s; ", $2, $3, $4 }' "$T/def.out")"
else
  fail "silence removal: default $(cat "$T/def.out" "$T/def.err") / --no-remove-silence $(cat "$T/keep.out" "$T/keep.err")"
fi
if [ "$(head -1 "$T/off.out")" = "go forward ten meters (padded)" ] &&
   [ "$(frames "$T/off.err")" = "$(frames "$T/keep.err")" ]; then
  pass "--no-remove-noise --no-remove-silence: every frame decoded"
else
  fail "--no-remove-noise: $(cat "$T/off.out" "$T/off.err")"
fi
# The noise estimate started at the first sound (the default): the padded
# file begins in noise, which pocketsphinx's start (--noise-start
# first-frame: energy / 20, rising slowly) takes for speech for a while;
# started at the noise's own energy, the detector drops more of it, and the
# words stay. A bad value is a usage error.
run -v --jsgf "$DATA/goforward.gram" --noise-start first-frame "$T/padded.wav" >"$T/first.out" 2>"$T/first.err"
if [ "$(head -1 "$T/first.out")" = "go forward ten meters (padded)" ] &&
   [ -n "$(frames "$T/first.err")" ] && [ "$(frames "$T/def.err")" -lt "$(frames "$T/first.err")" ]; then
  pass "--noise-start: the padded file's words either way, $(frames "$T/def.err") frames kept by default (first-sound) against $(frames "$T/first.err") with first-frame"
else
  fail "--noise-start first-frame: $(cat "$T/first.out" "$T/first.err")"
fi
if run --noise-start nowhere "$T/padded.wav" >/dev/null 2>"$T/bad.err"; then
  fail "--noise-start nowhere was accepted"
elif grep -q -- "--noise-start" "$T/bad.err"; then
  pass "--noise-start nowhere: a usage error naming the flag"
else
  fail "--noise-start nowhere: $(cat "$T/bad.err")"
fi
if run --help | grep -q -- '--no-remove-noise' && run --help | grep -q -- '--no-remove-silence'; then
  pass "--help documents --no-remove-noise and --no-remove-silence"
else
  fail "--help lacks the front-end flags"
fi

# Keyphrase spotting with Debian's goforward.kws (which has malformed lines
# and an unknown word on purpose: warnings, not errors), against what
# pocketsphinx_continuous -kws spots when it is there.
want="forward"
if command -v pocketsphinx_continuous >/dev/null; then
  want=$(pocketsphinx_continuous -infile "$DATA/goforward.raw" -kws "$DATA/goforward.kws" \
    -hmm "$MODEL/en-us" -dict "$MODEL/cmudict-en-us.dict" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//')
fi
if [ "$(run --kws "$DATA/goforward.kws" "$DATA/goforward.raw" 2>"$T/err")" = "$want (goforward)" ]; then
  pass "keyphrases spotted: '$want'"
else
  fail "kws: expected '$want': $(cat "$T/err")"
fi

# The cache: the second run of the same inputs loads the graph.
run -v --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw" >"$T/out" 2>"$T/err"
if grep -q 'loaded from the cache' "$T/err" && [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ]; then
  pass "graph taken from the cache on the second run"
else
  fail "cache not used: $(cat "$T/err")"
fi

# A WAV with a RIFF header, stereo, same words.
sox -t raw -r 16000 -e signed -b 16 -c 1 "$DATA/goforward.raw" -c 2 "$T/stereo.wav" 2>/dev/null
if [ "$(run --jsgf "$DATA/goforward.gram" "$T/stereo.wav" 2>/dev/null)" = "go forward ten meters (stereo)" ]; then
  pass "stereo WAV, id from the base name"
else
  fail "stereo WAV"
fi

# --- several streams (--streams) ---------------------------------------------
# The cards three times over (distinct ids through symlinks), on 1 and on 3
# streams: the same lines in the order given; the summary names the streams.
mkdir -p "$T/many"
MANY=()
for c in 1 2 3; do
  for f in "$DATA"/cards/00[1-5].wav; do
    ln -s "$f" "$T/many/c$c-$(basename "$f")"
    MANY+=("$T/many/c$c-$(basename "$f")")
  done
done
if run --jsgf "$DATA/cards/cards.gram" --streams 1 --times "${MANY[@]}" >"$T/one.trn" 2>"$T/err" &&
   run --jsgf "$DATA/cards/cards.gram" --streams 3 --times "${MANY[@]}" >"$T/three.trn" 2>"$T/err3" &&
   cmp -s "$T/one.trn" "$T/three.trn" && grep -q '3 streams)' "$T/err3" &&
   [ "$(grep -c '^[a-z].* (c[123]-00[1-5])$' "$T/three.trn")" -eq 15 ] &&
   [ "$(grep '^[a-z]' "$T/three.trn" | sed 's/.*(\(.*\))$/\1/' | tr '\n' ' ')" = \
     "$(for f in "${MANY[@]}"; do basename "$f" .wav; done | tr '\n' ' ')" ]; then
  pass "--streams 3: the same 15 results, word times included, in the order given"
else
  fail "--streams 3: $(diff "$T/one.trn" "$T/three.trn" | head -5) $(cat "$T/err3")"
fi
# --stream-nice: the streams' threads at a lower priority, the same results.
if run --jsgf "$DATA/cards/cards.gram" --streams 3 --stream-nice 7 --times "${MANY[@]}" >"$T/nice.trn" 2>"$T/errn" &&
   cmp -s "$T/one.trn" "$T/nice.trn" && ! grep -q warning "$T/errn"; then
  pass "--stream-nice 7: the same 15 results, no warning"
else
  fail "--stream-nice 7: $(diff "$T/one.trn" "$T/nice.trn" | head -5) $(cat "$T/errn")"
fi
# --fibers: the streams as fibers on fewer threads, the same results.
if run --jsgf "$DATA/cards/cards.gram" --streams 3 --fibers 2 --times "${MANY[@]}" >"$T/fib.trn" 2>"$T/errf" &&
   cmp -s "$T/one.trn" "$T/fib.trn"; then
  pass "--fibers 2: the same 15 results"
else
  fail "--fibers 2: $(diff "$T/one.trn" "$T/fib.trn" | head -5) $(cat "$T/errf")"
fi
# --fibers 0: a thread a stream (the default here: no batched cuda search).
if run --jsgf "$DATA/cards/cards.gram" --streams 3 --fibers 0 --times "${MANY[@]}" >"$T/fib0.trn" 2>"$T/errf0" &&
   cmp -s "$T/one.trn" "$T/fib0.trn"; then
  pass "--fibers 0: the same 15 results"
else
  fail "--fibers 0: $(diff "$T/one.trn" "$T/fib0.trn" | head -5) $(cat "$T/errf0")"
fi
expect_error "--fibers 1025" 2 "--fibers must be 0 to 1024" --fibers 1025 --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "--stream-nice 20" 2 "--stream-nice must be 0 to 19" --stream-nice 20 --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
# A bad file on one stream fails alone: the others go on, order kept.
printf 'not audio' >"$T/many/bad.wav"
run --jsgf "$DATA/cards/cards.gram" --streams 2 "${MANY[0]}" "$T/many/bad.wav" "${MANY[1]}" \
  >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(cat "$T/out")" = "$(grep '^[a-z]' "$T/one.trn" | sed -n '1p;2p')" ] &&
   grep -q "^gpuspeech-transcribe: error: .*bad.wav" "$T/err"; then
  pass "--streams 2: a bad file fails alone, the others printed in order"
else
  fail "--streams 2 with a bad file: status $rc, out '$(cat "$T/out")', err $(cat "$T/err")"
fi
expect_error "--streams 0" 2 "--streams must be at least 1" --streams 0 --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "--batched-search maybe" 2 "--batched-search must be on, off or auto" --batched-search maybe \
  --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
# With the CPU search the batched search does not apply: the same words.
if run --jsgf "$DATA/cards/cards.gram" --streams 3 --batched-search on --times "${MANY[@]}" \
     >"$T/three-batched.trn" 2>"$T/err3b" && cmp -s "$T/one.trn" "$T/three-batched.trn"; then
  pass "--batched-search on with the cpu search: the same results"
else
  fail "--batched-search on with the cpu search: $(diff "$T/one.trn" "$T/three-batched.trn" | head -5) $(cat "$T/err3b")"
fi

# --- cepstra (--mfc) -------------------------------------------------------------
# Sphinx .mfc files decoded from their cepstra with the model's CMN and
# deltas: TIDIGITS (its s2_4x model and FSG), and goforward.mfc with en-us.
TD="$DATA/tidigits"
if [ -f "$TD/hmm/mdef" ]; then
  want="two nine three four zero (man.ah.2934za)
one (woman.ak.1b)"
  if run --hmm "$TD/hmm" --dict "$TD/lm/tidigits.dic" --fsg "$TD/lm/tidigits.fsg" --mfc \
       "$TD/man.ah.2934za.mfc" "$TD/woman.ak.1b.mfc" >"$T/out" 2>"$T/err" &&
     [ "$(cat "$T/out")" = "$want" ]; then
    pass "--mfc tidigits cepstra with tidigits.fsg"
  else
    fail "--mfc tidigits: got '$(cat "$T/out")': $(cat "$T/err")"
  fi
  # --fmllr-vtln with a front end that mixes its cepstra (s2_4x): a usage
  # error naming the flag, before anything is decoded.
  run --hmm "$TD/hmm" --dict "$TD/lm/tidigits.dic" --lm "$TD/lm/tidigits.lm.bin" --fmllr two-pass \
    --fmllr-vtln --mfc "$TD/woman.ak.1b.mfc" >"$T/out" 2>"$T/err"
  st=$?
  if [ $st -eq 2 ] && grep -q -- "--fmllr-vtln: linear VTLN" "$T/err" && [ ! -s "$T/out" ]; then
    pass "--fmllr-vtln with the s2_4x tidigits model: usage error"
  else
    fail "--fmllr-vtln with tidigits: status $st: $(cat "$T/err") $(cat "$T/out")"
  fi
fi
if run --jsgf "$DATA/goforward.gram" --mfc "$DATA/goforward.mfc" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ]; then
  pass "--mfc goforward.mfc with goforward.gram"
else
  fail "--mfc goforward.mfc: got '$(cat "$T/out")': $(cat "$T/err")"
fi

# --- bad input ----------------------------------------------------------------

expect_error "no files" 2 "no input files" --jsgf "$DATA/goforward.gram"
expect_error "--no-remove-noise with a value" 2 "unknown option --no-remove-noise=yes" \
  --no-remove-noise=yes --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "--no-remove-silence with --mfc" 2 "--no-remove-silence applies to audio input, not to --mfc" \
  --mfc --no-remove-silence --jsgf "$DATA/goforward.gram" "$DATA/goforward.mfc"
expect_error "--mfc on audio" 1 "goforward.raw: the header count" --mfc --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "unknown option" 2 "--frobnicate" --frobnicate "$DATA/goforward.raw"
expect_error "two grammars" 2 "at most one" --jsgf "$DATA/goforward.gram" --fsg "$DATA/goforward.fsg" "$DATA/goforward.raw"
expect_error "bad beam" 2 "--beam" --beam 2 --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "bad lattice weight" 2 "--lattice-lw must be a number >= 0" --lattice-lw -1 \
  --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "bad lattice word penalty" 2 "--lattice-wip must be a number > 0" --lattice-wip 0 \
  --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
expect_error "lattice pass with a grammar" 1 "the word-lattice pass needs an n-gram LM" \
  --lattice-lw 8.5 --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
# With an n-gram LM (the default) the defaults are two-pass fMLLR and the
# lattice pass; --one-pass decodes once and refuses what contradicts it,
# and --fibers (one decoding a file only) says to add it. All refused
# before the model loads.
expect_error "--one-pass with --fmllr two-pass" 2 "--one-pass and --fmllr two-pass exclude each other" \
  --one-pass --fmllr two-pass "$DATA/goforward.raw"
expect_error "--one-pass with --lattice-lw" 2 "--one-pass and --lattice-lw X (X > 0) exclude each other" \
  --one-pass --lattice-lw 8.5 "$DATA/goforward.raw"
expect_error "--fibers with the LM's default two-pass" 2 "--fibers applies to one decoding a file: add --one-pass" \
  --fibers 2 "$DATA/goforward.raw"
expect_error "--spk2utt with --one-pass" 2 "need --fmllr two-pass or apply, not --one-pass or --fmllr none" \
  --one-pass --spk2utt "$T/none.spk2utt" "$DATA/goforward.raw"
expect_error "--cluster-speakers with --one-pass" 2 "--cluster-speakers applies to --fmllr two-pass" \
  --one-pass --cluster-speakers "$DATA/goforward.raw"
expect_error "--cluster-speakers with --spk2utt" 2 "--cluster-speakers and --spk2utt exclude each other" \
  --cluster-speakers --spk2utt "$T/none.spk2utt" "$DATA/goforward.raw"
expect_error "missing grammar" 1 "$T/none.gram" --jsgf "$T/none.gram" "$DATA/goforward.raw"
printf '#JSGF V1.0;\ngrammar g;\npublic <a> = go zzqxv;\n' >"$T/oov.gram"
expect_error "grammar word not in the dictionary" 1 "zzqxv" --jsgf "$T/oov.gram" "$DATA/goforward.raw"
expect_error "unknown backend" 1 "nosuch" --backend nosuch --jsgf "$DATA/goforward.gram" "$DATA/goforward.raw"
sox -t raw -r 16000 -e signed -b 16 -c 1 "$DATA/goforward.raw" -r 8000 "$T/rate8k.wav" 2>/dev/null
expect_error "wrong sample rate" 1 "8000" --jsgf "$DATA/goforward.gram" "$T/rate8k.wav"
head -c 30 "$T/stereo.wav" >"$T/truncated.wav"
expect_error "truncated WAV" 1 "truncated.wav" --jsgf "$DATA/goforward.gram" "$T/truncated.wav"

# A missing file among good ones: exit 1, the good one still transcribed.
run --jsgf "$DATA/goforward.gram" "$T/missing.raw" "$DATA/goforward.raw" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ] &&
   grep -q "^gpuspeech-transcribe: error: .*missing.raw" "$T/err"; then
  pass "a missing file fails alone"
else
  fail "missing file among good ones: status $rc, out '$(cat "$T/out")', err $(cat "$T/err")"
fi


# --cluster-speakers: two flite voices, two sentences each, given
# interleaved; the files come out as two speakers, each voice's pair, named
# after its first file (the grammar is goforward's: the words do not matter
# here, the groups do).
if command -v flite >/dev/null; then
  k=0
  for v in slt awb; do
    for s in "the quick brown fox jumps over the lazy dog near the river bank" \
             "please call stella and ask her to bring these things with her from the store"; do
      k=$((k + 1))
      flite -voice $v -t "$s" -o "$T/flite.wav" && sox "$T/flite.wav" -r 16000 "$T/u$k-$v.wav"
    done
  done
  if run --jsgf "$DATA/goforward.gram" --fmllr two-pass --cluster-speakers -v \
       "$T/u1-slt.wav" "$T/u3-awb.wav" "$T/u2-slt.wav" "$T/u4-awb.wav" >"$T/out" 2>"$T/err" &&
     grep -qx "gpuspeech-transcribe: speaker cluster-u1-slt: u1-slt u2-slt" "$T/err" &&
     grep -qx "gpuspeech-transcribe: speaker cluster-u3-awb: u3-awb u4-awb" "$T/err" &&
     [ "$(grep -c "^gpuspeech-transcribe: speaker cluster-" "$T/err")" -eq 2 ] &&
     [ "$(grep -c . "$T/out")" -eq 4 ]; then
    pass "--cluster-speakers: two voices found, four lines"
  else
    fail "--cluster-speakers: $(grep "speaker cluster-" "$T/err") $(tail -3 "$T/err")"
  fi
else
  fail "--cluster-speakers: flite missing"
fi

# Real speakers: TIDIGITS' man and woman, 31 short files of cepstra
# (1-3 s). No group mixes them, and the files of each make few groups.
if [ -f "$TD/hmm/mdef" ]; then
  if run --hmm "$TD/hmm" --dict "$TD/lm/tidigits.dic" --fsg "$TD/lm/tidigits.fsg" --mfc \
       --fmllr two-pass --cluster-speakers -v "$TD"/*.mfc >"$T/out" 2>"$T/err"; then
    grep "^gpuspeech-transcribe: speaker cluster-" "$T/err" | sed 's/^[^:]*: [^:]*://' >"$T/groups"
    groups=$(grep -c . "$T/groups")
    mixed=$(grep -c 'man\.ah.*woman\.ak\|woman\.ak.*man\.ah' "$T/groups")
    files=$(tr ' ' '\n' <"$T/groups" | grep -c .)
    if [ "$files" -eq 31 ] && [ "$mixed" -eq 0 ] && [ "$groups" -ge 2 ] && [ "$groups" -le 8 ]; then
      pass "--cluster-speakers on TIDIGITS: $groups groups of 31 files, none mixing the speakers"
    else
      fail "--cluster-speakers on TIDIGITS: $files files, $groups groups, $mixed mixed: $(cat "$T/groups")"
    fi
  else
    fail "--cluster-speakers on TIDIGITS: $(tail -3 "$T/err")"
  fi
fi

# --- speaker adaptation (--fmllr, --spk2utt, --fmllr-dir) -----------------------
# The cards (one speaker) as one speaker: pass 1, alignment, one transform,
# pass 2. Still the reference words, one line each; the per-speaker report;
# the transform written as a Kaldi text matrix; --fmllr apply with that file
# gives the same lines as the two-pass run.
CARDS=("$DATA"/cards/00[1-5].wav)
printf 'dealer 001 002 003\tdealer_b 004\ndealer 005\n' >"$T/dup-speaker.spk2utt"
printf 'dealer 001 002 003 004 005\n' >"$T/cards.spk2utt"
if run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/cards.spk2utt" \
     --fmllr-dir "$T/xforms" --fmllr-min-frames 100 "${CARDS[@]}" >"$T/out" 2>"$T/err" &&
   diff -u "$T/cards.ref" "$T/out" >"$T/diff"; then
  pass "--fmllr two-pass, one speaker: five trn lines equal to cards.transcription"
else
  fail "--fmllr two-pass cards: $(cat "$T/diff") $(cat "$T/err")"
fi
if grep -q '^gpuspeech-transcribe: fmllr speaker dealer: 5 file(s), [0-9]* of [0-9]* frames aligned .*: updated, objective/frame' "$T/err"; then
  pass "per-speaker report: $(grep 'fmllr speaker' "$T/err")"
else
  fail "no per-speaker report (or not updated): $(cat "$T/err")"
fi
# 39 rows of 40 finite numbers between '[' and ']', not the identity.
if [ -f "$T/xforms/dealer.mat" ] && awk '
    { gsub(/\[/, " [ "); gsub(/\]/, " ] "); nums = 0
      for (i = 1; i <= NF; i++) {
        if ($i == "[") { opens++; continue }
        if ($i == "]") { closes++; continue }
        if ($i !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) bad = 1
        r = int(n / 40); c = n % 40; n++; nums++
        if (c != r && $i + 0 != 0) offdiag++ }
      if (nums > 0) { rows++; if (nums != 40) bad = 1 } }
    END { exit !(opens == 1 && closes == 1 && rows == 39 && n == 39 * 40 && !bad && offdiag > 0) }' \
    "$T/xforms/dealer.mat"; then
  pass "--fmllr-dir: dealer.mat is a 39 x 40 Kaldi text matrix, not the identity"
else
  fail "--fmllr-dir: dealer.mat: $(head -c 300 "$T/xforms/dealer.mat" 2>&1)"
fi
# The statistics beside it (a prior for gpudecoder's adapt-prior): one
# text matrix of 1 + 39 + 39 x 40 rows of 40 numbers; row 0 the frame
# count (the aligned frames' weight, > 100) and zeros.
if [ -f "$T/xforms/dealer.stats" ] && awk '
    { line = $0; if (sub(/\[/, " ", line)) opens++; if (sub(/\]/, " ", line)) closes++
      nums = split(line, f, /[ \t]+/); c = 0
      for (i = 1; i <= nums; i++) if (f[i] != "") { c++; n++ }
      if (c > 0) { rows++; if (c != 40) bad = 1
                   if (rows == 1) { beta = f[1] == "" ? f[2] : f[1]; for (i = 1; i <= nums; i++) if (f[i] != "" && f[i] + 0 != 0) nz++ } } }
    END { exit !(opens == 1 && closes == 1 && rows == 1 + 39 + 39 * 40 && !bad && beta + 0 > 100 && nz == 1) }' \
    "$T/xforms/dealer.stats"; then
  pass "--fmllr-dir: dealer.stats is fMLLR statistics (1600 x 40, row 0 the frame count)"
else
  fail "--fmllr-dir: dealer.stats: $(head -c 300 "$T/xforms/dealer.stats" 2>&1)"
fi
# The model the statistics were taken with: "means BYTES FNV1A64" of the
# model's means, the line data/channel-priors/en-us/model holds (written by
# the Python that made that library, with the same model).
# (Another model, GPUSPEECH_MODEL_DIR: the form and size only.)
LIB_MODEL=$(dirname "$0")/../data/channel-priors/en-us/model
LIB_LINE=$(cat "$LIB_MODEL")
[ -n "${GPUSPEECH_MODEL_DIR:-}" ] && LIB_LINE=$(cat "$T/xforms/model" 2>/dev/null)
if [ -f "$T/xforms/model" ] && [ "$(cat "$T/xforms/model")" = "$LIB_LINE" ] &&
   grep -qxE "means [0-9]+ [0-9a-f]{16}" "$T/xforms/model" &&
   [ "$(cut -d' ' -f2 "$T/xforms/model")" = "$(stat -c %s "$MODEL/en-us/means")" ]; then
  pass "--fmllr-dir: model names the model's means ($(cat "$T/xforms/model"))"
else
  fail "--fmllr-dir: model: '$(cat "$T/xforms/model" 2>&1)', the library's '$(cat "$LIB_MODEL" 2>&1)'"
fi
# --fmllr-update diag: A diagonal (every off-diagonal entry of A exactly 0),
# the words still the reference.
if run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --fmllr-update diag --spk2utt "$T/cards.spk2utt" \
     --fmllr-dir "$T/xforms-diag" --fmllr-min-frames 100 "${CARDS[@]}" >"$T/out-diag" 2>"$T/err" &&
   diff -u "$T/cards.ref" "$T/out-diag" >"$T/diff" &&
   awk '{ gsub(/[][]/, " ") } NF > 0 { for (c = 1; c <= NF; c++) { if (c <= 39 && c != row + 1 && $c + 0 != 0) bad = 1
                                                                   if (c == row + 1 && $c + 0 == 1) unit++ }
                                        row++ }
        END { exit !(row == 39 && !bad && unit < 39) }' "$T/xforms-diag/dealer.mat"; then
  pass "--fmllr-update diag: a diagonal A (not the identity), the reference words"
else
  fail "--fmllr-update diag: $(cat "$T/diff") $(cat "$T/err") $(head -c 300 "$T/xforms-diag/dealer.mat" 2>&1)"
fi
# --fmllr-update auto: the type by the speaker's aligned frames (cards: a
# few hundred, so offset below 156, diag from there; never full), said in
# the report; --fmllr-redecode 1: one re-estimation from the adapted
# decoding, reported, the words still the reference.
if run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --fmllr-update auto --fmllr-redecode 1 \
     --spk2utt "$T/cards.spk2utt" --fmllr-min-frames 100 "${CARDS[@]}" >"$T/out-auto" 2>"$T/err" &&
   diff -u "$T/cards.ref" "$T/out-auto" >"$T/diff" &&
   frames=$(sed -n 's/^gpuspeech-transcribe: fmllr speaker dealer: 5 file(s), \([0-9]*\) of .*/\1/p' "$T/err") &&
   if [ "$frames" -ge 156 ]; then want=diag; else want=offset; fi &&
   grep -q "^gpuspeech-transcribe: fmllr speaker dealer: 5 file(s), .*, update type $want: updated" "$T/err" &&
   grep -q "^gpuspeech-transcribe: fmllr speaker dealer: re-estimation 1 of 1 (adapted decoding): [0-9]* frames aligned, statistics weight [0-9.]*, update type $want: updated, objective/frame" "$T/err"; then
  pass "--fmllr-update auto ($want for $frames frames) and --fmllr-redecode 1: reported, reference words"
else
  fail "--fmllr-update auto / --fmllr-redecode: $(cat "$T/diff") $(cat "$T/err")"
fi
# --fmllr-vtln: the speaker's first estimate (770 aligned frames, under
# the flag's 1 500) is a warp with a diagonal transform, reported; the
# re-estimation from the decoding under it is full; the reference words.
if run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --fmllr-vtln --spk2utt "$T/cards.spk2utt" \
     "${CARDS[@]}" >"$T/out-vtln" 2>"$T/err" &&
   diff -u "$T/cards.ref" "$T/out-vtln" >"$T/diff" &&
   grep -q "^gpuspeech-transcribe: fmllr speaker dealer: 5 file(s), .*, VTLN warp [01]\.[0-9][0-9] with a diagonal transform, objective/frame" "$T/err" &&
   grep -q "^gpuspeech-transcribe: fmllr speaker dealer: re-estimation 1 of 1 (adapted decoding): .*update type full: updated" "$T/err"; then
  pass "--fmllr-vtln: $(grep -o 'VTLN warp [0-9.]*' "$T/err"), then full; reference words"
else
  fail "--fmllr-vtln: $(cat "$T/diff") $(cat "$T/err")"
fi
for bad in "--fmllr-redecode -1" "--fmllr-update sometimes" "--fmllr-prior-frames -5" "--fmllr-prior-frames inf" \
           "--fmllr-prior-frames 100 --fmllr-update diag"; do
  # shellcheck disable=SC2086
  run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass $bad "${CARDS[@]}" >/dev/null 2>"$T/err"
  st=$?
  if [ $st -eq 2 ] && grep -q -- "${bad%% *}" "$T/err"; then
    pass "$bad: usage error naming the option"
  else
    fail "$bad: status $st: $(cat "$T/err")"
  fi
done
cp "$T/out" "$T/two-pass.out"
# --fmllr apply on the cards with SPK2UTT and the transforms in DIR prints
# the lines of the two-pass run that wrote them (EXPECTED).
expect_apply_as_two_pass() {  # what expected spk2utt dir
  if run --jsgf "$DATA/cards/cards.gram" --fmllr apply --spk2utt "$3" --fmllr-dir "$4" \
       "${CARDS[@]}" >"$T/out" 2>"$T/err" &&
     diff -u "$2" "$T/out" >"$T/diff"; then
    pass "$1: the two-pass run's lines"
  else
    fail "$1: $(cat "$T/diff") $(cat "$T/err")"
  fi
}
expect_apply_as_two_pass "--fmllr apply with the saved transform" "$T/two-pass.out" \
  "$T/cards.spk2utt" "$T/xforms"
# The two-pass run wrote its speakers down in DIR/spk2utt; apply without
# --spk2utt takes them from there.
if [ "$(cat "$T/xforms/spk2utt")" = "dealer 001 002 003 004 005" ] &&
   run --jsgf "$DATA/cards/cards.gram" --fmllr apply --fmllr-dir "$T/xforms" "${CARDS[@]}" \
     >"$T/out" 2>"$T/err" && diff -u "$T/two-pass.out" "$T/out" >"$T/diff"; then
  pass "--fmllr apply without --spk2utt: the speakers of DIR/spk2utt, the two-pass run's lines"
else
  fail "--fmllr apply with DIR/spk2utt: $(cat "$T/xforms/spk2utt") $(cat "$T/diff") $(cat "$T/err")"
fi
# --fmllr with several streams: each file its own speaker
# (--no-cluster-speakers), the files of a speaker's phases spread over the
# streams, the text printed in the files' order: the same lines and the
# same per-speaker reports as one stream; a bad file among them fails
# alone. --stream-nice applies to these streams too (no warning, the same
# output).
printf 'not audio' >"$T/bad-card.wav"
FM=(--jsgf "$DATA/cards/cards.gram" --fmllr two-pass --no-cluster-speakers --fmllr-update auto --fmllr-min-frames 100)
run "${FM[@]}" --streams 1 "${CARDS[@]:0:2}" "$T/bad-card.wav" "${CARDS[@]:2}" >"$T/fm1.out" 2>"$T/fm1.err"
rc1=$?
run "${FM[@]}" --streams 3 --stream-nice 7 "${CARDS[@]:0:2}" "$T/bad-card.wav" "${CARDS[@]:2}" >"$T/fm3.out" 2>"$T/fm3.err"
rc3=$?
grep -E 'fmllr speaker|error' "$T/fm1.err" >"$T/fm1.rep"
grep -E 'fmllr speaker|error' "$T/fm3.err" >"$T/fm3.rep"
if [ $rc1 -eq 1 ] && [ $rc3 -eq 1 ] && diff -u "$T/cards.ref" "$T/fm1.out" >"$T/diff" &&
   cmp -s "$T/fm1.out" "$T/fm3.out" && cmp -s "$T/fm1.rep" "$T/fm3.rep" &&
   [ "$(grep -c 'fmllr speaker 00[1-5]: 1 file(s)' "$T/fm3.rep")" -eq 5 ] &&
   grep -q "error: .*bad-card.wav" "$T/fm3.rep" && grep -q "3 streams" "$T/fm3.err" &&
   ! grep -q warning "$T/fm3.err"; then
  pass "--fmllr two-pass --streams 3 --stream-nice 7: the words and reports of one stream, the bad file alone failing"
else
  fail "--fmllr two-pass --streams 3 (status $rc1, $rc3): $(cat "$T/diff"; diff "$T/fm1.out" "$T/fm3.out"; diff "$T/fm1.rep" "$T/fm3.rep") $(tail -3 "$T/fm3.err")"
fi
# The default: the speakers found by clustering (the cards: one dealer),
# each speaker's files decoded on all the streams: one stream and three
# give the same lines and reports (the statistics are summed in the files'
# order), the bad file failing alone.
FM=(--jsgf "$DATA/cards/cards.gram" --fmllr two-pass --fmllr-min-frames 100)
run "${FM[@]}" --streams 1 "${CARDS[@]:0:2}" "$T/bad-card.wav" "${CARDS[@]:2}" >"$T/fm1.out" 2>"$T/fm1.err"
rc1=$?
run "${FM[@]}" --streams 3 "${CARDS[@]:0:2}" "$T/bad-card.wav" "${CARDS[@]:2}" >"$T/fm3.out" 2>"$T/fm3.err"
rc3=$?
grep -E 'fmllr speaker|error' "$T/fm1.err" >"$T/fm1.rep"
grep -E 'fmllr speaker|error' "$T/fm3.err" >"$T/fm3.rep"
if [ $rc1 -eq 1 ] && [ $rc3 -eq 1 ] && [ "$(grep -c . "$T/fm1.out")" -eq 5 ] &&
   cmp -s "$T/fm1.out" "$T/fm3.out" && cmp -s "$T/fm1.rep" "$T/fm3.rep" &&
   grep -q 'fmllr speaker cluster-001: [2-5] file(s), .*: updated' "$T/fm3.rep" &&
   grep -q "error: .*bad-card.wav" "$T/fm3.rep" && grep -q "3 streams" "$T/fm3.err"; then
  pass "--fmllr two-pass, clustered speakers, --streams 3: the words and reports of one stream"
else
  fail "clustered --streams 3 (status $rc1, $rc3): $(diff "$T/fm1.out" "$T/fm3.out"; diff "$T/fm1.rep" "$T/fm3.rep"; cat "$T/fm3.rep") $(tail -3 "$T/fm3.err")"
fi
# Too little speech for a transform: the identity is kept (and reported),
# the output is the unadapted one.
if run --jsgf "$DATA/goforward.gram" --fmllr two-pass "$DATA/goforward.raw" >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ] &&
   grep -q 'fmllr speaker cluster-goforward: .*too few frames' "$T/err"; then
  pass "--fmllr two-pass on 2 s: too few frames, identity kept"
else
  fail "--fmllr two-pass goforward: $(cat "$T/out") $(cat "$T/err")"
fi

# A speaker id that is no plain file name (a leading '.', ':', a non-ASCII
# letter, '%') names its transform as the gpufmllr element does
# (fmllr_speaker_file_name: %XX escapes, no hidden file), and --fmllr apply
# finds it there. With three EM passes the report has one line per pass.
printf '.spk:\xc3\xa9%% 001 002 003 004 005\n' >"$T/odd.spk2utt"
ODD_FILE='%2Espk%3A%C3%A9%25.mat'
if run --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --fmllr-em-passes 3 --spk2utt "$T/odd.spk2utt" \
     --fmllr-dir "$T/xforms-odd" --fmllr-min-frames 100 "${CARDS[@]}" >"$T/out-odd" 2>"$T/err" &&
   [ -f "$T/xforms-odd/$ODD_FILE" ] && [ "$(ls -A "$T/xforms-odd" | grep -c '\.mat$')" -eq 1 ]; then
  pass "--fmllr-dir with speaker '.spk:é%': $ODD_FILE"
else
  fail "--fmllr-dir with an odd speaker id: $(ls -A "$T/xforms-odd" 2>&1) $(cat "$T/err")"
fi
if grep -q '^gpuspeech-transcribe: fmllr speaker .spk:é%: 5 file(s), .*: updated, objective/frame .*, the transform of EM pass 3 of 3$' "$T/err" &&
   [ "$(grep -c '^gpuspeech-transcribe: fmllr speaker .spk:é%: EM pass [1-3] of 3: statistics weight [0-9.]*, update type full: updated, objective/frame' "$T/err")" -eq 3 ]; then
  pass "--fmllr-em-passes 3: a summary and one line per pass"
else
  fail "--fmllr-em-passes 3 report: $(cat "$T/err")"
fi
expect_apply_as_two_pass "--fmllr apply reads the odd speaker's escaped file" "$T/out-odd" \
  "$T/odd.spk2utt" "$T/xforms-odd"
# A first pass with too little speech: the report says so for every pass
# (the later ones are not run), and the identity is used.
if run --jsgf "$DATA/goforward.gram" --fmllr two-pass --fmllr-em-passes 2 "$DATA/goforward.raw" \
     >"$T/out" 2>"$T/err" &&
   [ "$(cat "$T/out")" = "go forward ten meters (goforward)" ] &&
   grep -q '^gpuspeech-transcribe: fmllr speaker cluster-goforward: .*: too few frames, identity kept' "$T/err" &&
   grep -q '^gpuspeech-transcribe: fmllr speaker cluster-goforward: EM pass 1 of 2: .*too few frames; identity kept' "$T/err" &&
   grep -q '^gpuspeech-transcribe: fmllr speaker cluster-goforward: EM pass 2 of 2: not run (pass 1 made no update)$' "$T/err"; then
  pass "--fmllr-em-passes 2 on 2 s: pass 1 too few frames, pass 2 not run"
else
  fail "--fmllr-em-passes 2 goforward: $(cat "$T/out") $(cat "$T/err")"
fi
# --mfc: two-pass (with too little speech, so the identity) decodes the
# features recognize_cepstra decodes; a NaN cepstrum fails its file, named,
# the same way in both paths.
cp "$DATA/goforward.mfc" "$T/nan.mfc" && chmod u+w "$T/nan.mfc" &&
  printf '\xff\xff\xff\xff' | dd of="$T/nan.mfc" bs=1 seek=$((4 + 4 * 132)) conv=notrunc 2>/dev/null
run --jsgf "$DATA/goforward.gram" --mfc "$DATA/goforward.mfc" >"$T/mfc-plain.out" 2>/dev/null
if run --jsgf "$DATA/goforward.gram" --mfc --fmllr two-pass "$DATA/goforward.mfc" >"$T/out" 2>"$T/err" &&
   [ -s "$T/mfc-plain.out" ] && diff -u "$T/mfc-plain.out" "$T/out" >"$T/diff"; then
  pass "--mfc --fmllr two-pass (identity): the --mfc line"
else
  fail "--mfc two-pass vs --mfc: $(cat "$T/diff") $(cat "$T/err")"
fi
expect_error "--mfc: a NaN cepstrum" 1 "$T/nan.mfc: recognizer: cepstra frame 10 coefficient 2 is not a finite number" \
  --jsgf "$DATA/goforward.gram" --mfc "$T/nan.mfc"
expect_error "--mfc --fmllr two-pass: a NaN cepstrum" 1 "$T/nan.mfc: recognizer: cepstra frame 10 coefficient 2 is not a finite number" \
  --jsgf "$DATA/goforward.gram" --mfc --fmllr two-pass "$T/nan.mfc"

# Bad spk2utt files: each stops before decoding, naming FILE:LINE.
printf 'dealer 001 002 003 004 005\nlonely\n' >"$T/bad1.spk2utt"
expect_error "spk2utt: speaker without utterances" 1 "$T/bad1.spk2utt:2: speaker 'lonely' has no utterances" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/bad1.spk2utt" "${CARDS[@]}"
printf 'dealer 001 002 003 004 005\nother 006\n' >"$T/bad2.spk2utt"
expect_error "spk2utt: unknown utterance" 1 "$T/bad2.spk2utt:2: utterance '006'" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/bad2.spk2utt" "${CARDS[@]}"
printf 'dealer 001 002 003\nother 004 005 002\n' >"$T/bad3.spk2utt"
expect_error "spk2utt: utterance twice" 1 "$T/bad3.spk2utt:2: utterance '002' is listed twice (also on line 1" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/bad3.spk2utt" "${CARDS[@]}"
expect_error "spk2utt: speaker twice" 1 "$T/dup-speaker.spk2utt:2: speaker 'dealer' already has a line (line 1)" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/dup-speaker.spk2utt" "${CARDS[@]}"
printf 'dealer 001 002 003 004\n' >"$T/bad4.spk2utt"
expect_error "spk2utt: a file not listed" 1 "$T/bad4.spk2utt: no speaker lists utterance '005'" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/bad4.spk2utt" "${CARDS[@]}"
printf '../up 001 002 003 004 005\n' >"$T/bad5.spk2utt"
expect_error "spk2utt: speaker id with a slash" 1 "$T/bad5.spk2utt:1: speaker id '../up'" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/bad5.spk2utt" "${CARDS[@]}"
expect_error "spk2utt: missing file" 1 "$T/none.spk2utt: cannot open" \
  --jsgf "$DATA/cards/cards.gram" --fmllr two-pass --spk2utt "$T/none.spk2utt" "${CARDS[@]}"
expect_error "--spk2utt without --fmllr" 2 "--spk2utt" --jsgf "$DATA/cards/cards.gram" \
  --spk2utt "$T/cards.spk2utt" "${CARDS[@]}"
expect_error "unknown --fmllr mode" 2 "--fmllr: expected none, two-pass or apply" \
  --fmllr three-pass "$DATA/goforward.raw"
expect_error "--fmllr apply without a directory" 2 "--fmllr apply needs --fmllr-dir" \
  --fmllr apply "$DATA/goforward.raw"
# A saved transform that is missing or malformed fails its speaker's files.
# (The speakers written down in DIR/spk2utt do not list goforward: it is
# its own speaker.)
expect_error "--fmllr apply: no transform for the speaker" 1 "$T/xforms/goforward.mat" \
  --jsgf "$DATA/goforward.gram" --fmllr apply --fmllr-dir "$T/xforms" "$DATA/goforward.raw"
mkdir -p "$T/badx" && printf '[\n 1 0 0\n 0 1 0 ]\n' >"$T/badx/goforward.mat"
expect_error "--fmllr apply: a transform of the wrong size" 1 "$T/badx/goforward.mat" \
  --jsgf "$DATA/goforward.gram" --fmllr apply --fmllr-dir "$T/badx" "$DATA/goforward.raw"

cli_finish "transcribe cli"
