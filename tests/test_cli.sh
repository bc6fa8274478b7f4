#!/bin/bash
# gpuspeech-features on good input (frame counts and values against
# sphinx_fe, every input encoding, warps, lists, output formats) and on bad
# input (each must exit non-zero, by status and not by a signal, with one
# "gpuspeech-features: error:" line that names the problem).
#
# Usage: test_cli.sh PATH/TO/gpuspeech-features
# Needs sox, sphinx_fe (sphinxbase-utils), python3 and pocketsphinx-testdata /
# pocketsphinx-en-us under /usr/share/pocketsphinx (GPUSPEECH_AUDIO_DIR and
# GPUSPEECH_MODEL_DIR override, as for the other tests).
set -u
TOOL=$1
DATA=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}
PARAMS=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us/en-us/feat.params
RAW=$DATA/goforward.raw
source "$(dirname "$0")/cli_util.sh"
run() { "$TOOL" "$@"; }
ERROR_PREFIX="gpuspeech-features: error: "
ONE_ERROR_LINE=1
cli_setup cli

for need in sox sphinx_fe python3; do
  command -v $need >/dev/null || { echo "missing $need"; exit 1; }
done
[ -f "$RAW" ] && [ -f "$PARAMS" ] || { echo "missing pocketsphinx data"; exit 1; }

# expect_ok NAME ARGS...
expect_ok() {
  local name=$1
  shift
  if "$TOOL" "$@" >"$T/out" 2>"$T/err"; then
    pass "$name"
  else
    fail "$name: status $?: $(cat "$T/err")"
  fi
}

# compare_mfc NAME A B TOLERANCE: same frame count (13 wide) and every
# value within TOLERANCE.
compare_mfc() {
  if python3 - "$2" "$3" "$4" >"$T/cmp" 2>&1 <<'PY'
import struct, sys
def read(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<i', b[:4])[0]
    assert 4 + 4 * n == len(b), p + ': count does not match size'
    return struct.unpack('<%df' % n, b[4:])
a, b, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if len(a) != len(b):
    print('frames %g vs %g' % (len(a) / 13, len(b) / 13)); sys.exit(1)
worst = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
print('%d frames, max |diff| %.3g' % (len(a) // 13, worst))
sys.exit(0 if worst <= tol else 1)
PY
  then pass "$1: $(cat "$T/cmp")"; else fail "$1: $(cat "$T/cmp")"; fi
}

# ---------------------------------------------------------------- good input
# sphinx_fe with the model's parameters, its VAD and noise removal off (they
# drop and change frames; gpuspeech does neither).
sphinx_fe -argfile "$PARAMS" -remove_silence no -remove_noise no -raw yes \
  -i "$RAW" -o "$T/ref.mfc" >/dev/null 2>&1 || fail "sphinx_fe failed"
SPHINX=(--feat-params "$PARAMS" --deltas none --cmn none --backend cpu)

expect_ok "raw input" "${SPHINX[@]}" --raw --rate 16000 -i "$RAW" -o "$T/raw.mfc"
compare_mfc "raw input vs sphinx_fe" "$T/raw.mfc" "$T/ref.mfc" 1e-3

# With Sphinx's noise removal and VAD, as sphinx_fe ran by default to make
# the goforward.mfc that pocketsphinx-testdata ships (264 of 278 frames).
expect_ok "noise + silence removal" "${SPHINX[@]}" --remove-noise --remove-silence --raw \
  -i "$RAW" -o "$T/vad.mfc"
compare_mfc "noise + silence removal vs shipped goforward.mfc" "$T/vad.mfc" \
  "$DATA/goforward.mfc" 1e-3
{ cat "$PARAMS"; printf -- '-remove_noise yes\n-remove_silence yes\n'; } >"$T/vad.params"
expect_ok "noise + silence removal from feat.params" --feat-params "$T/vad.params" \
  --deltas none --cmn none --backend cpu --raw -i "$RAW" -o "$T/vad2.mfc"
cmp -s "$T/vad.mfc" "$T/vad2.mfc" && pass "feat.params -remove_* == flags" ||
  fail "feat.params -remove_* differs from the flags"

sox -t raw -r 16000 -e signed -b 16 -c 1 "$RAW" "$T/gf.wav"
expect_ok "wav input" "${SPHINX[@]}" -i "$T/gf.wav" -o "$T/wav.mfc"
cmp -s "$T/raw.mfc" "$T/wav.mfc" && pass "wav == raw" || fail "wav output differs from raw"

# Other encodings of the same samples give the same features.
sox "$T/gf.wav" -e floating-point -b 32 "$T/gf-f32.wav"
sox "$T/gf.wav" -b 24 "$T/gf-s24.wav"
sox "$T/gf.wav" -e floating-point -b 64 "$T/gf-f64.wav"
for enc in f32 s24 f64; do
  expect_ok "$enc wav" "${SPHINX[@]}" -i "$T/gf-$enc.wav" -o "$T/$enc.mfc"
  cmp -s "$T/raw.mfc" "$T/$enc.mfc" && pass "$enc == s16" || fail "$enc output differs"
done

# Stereo: averaged (identical channels give the mono result); --channel picks.
sox -M "$T/gf.wav" "$T/gf.wav" "$T/stereo.wav"
expect_ok "stereo wav (mixed)" "${SPHINX[@]}" -i "$T/stereo.wav" -o "$T/st.mfc"
cmp -s "$T/raw.mfc" "$T/st.mfc" && pass "stereo mix == mono" || fail "stereo mix differs"
sox -n -r 16000 -b 16 -c 1 "$T/silence.wav" trim 0 44580s
sox -M "$T/silence.wav" "$T/gf.wav" "$T/stereo2.wav"
expect_ok "stereo --channel 2" "${SPHINX[@]}" --channel 2 -i "$T/stereo2.wav" -o "$T/ch2.mfc"
cmp -s "$T/raw.mfc" "$T/ch2.mfc" && pass "channel 2 == mono" || fail "channel 2 differs"

# The model's own configuration: 39-dim, batch CMN.
expect_ok "feat.params as shipped" --feat-params "$PARAMS" --backend cpu -i "$T/gf.wav" -o "$T/39.mfc"
size=$(stat -c %s "$T/39.mfc")
[ "$size" -eq $((4 + 278 * 39 * 4)) ] && pass "39-dim output size" || fail "39-dim size $size"

# Output formats.
expect_ok "htk output" "${SPHINX[@]}" --format htk -i "$T/gf.wav" -o "$T/gf.htk"
python3 - "$T/gf.htk" <<'PY' && pass "htk header" || fail "htk header"
import struct, sys
b = open(sys.argv[1], 'rb').read()
n, period, size, kind = struct.unpack('>iihH', b[:12])
assert (n, period, size, kind) == (278, 100000, 52, 0x2006), (n, period, size, hex(kind))
assert len(b) == 12 + n * size
PY
expect_ok "text output" "${SPHINX[@]}" --format text -i "$T/gf.wav" -o "$T/gf.txt"
[ "$(wc -l <"$T/gf.txt")" -eq 278 ] && [ "$(head -1 "$T/gf.txt" | wc -w)" -eq 13 ] &&
  pass "text layout" || fail "text layout"

# Warps from one FFT: one file per warp; warp 1 equals the plain run and
# warp 0.95 equals --vtln-warp 0.95.
expect_ok "--warps" "${SPHINX[@]}" --warps 0.95,1.0,1.1 -i "$T/gf.wav" -o "$T/w.mfc"
for w in 0.95 1.0 1.1; do
  [ -f "$T/w.w$w.mfc" ] && pass "warp file w.w$w.mfc" || fail "no warp file w.w$w.mfc"
done
compare_mfc "warp 1.0 vs plain" "$T/w.w1.0.mfc" "$T/wav.mfc" 1e-4
expect_ok "--vtln-warp 0.95" "${SPHINX[@]}" --vtln-warp 0.95 -i "$T/gf.wav" -o "$T/v095.mfc"
compare_mfc "warp 0.95 vs --vtln-warp 0.95" "$T/w.w0.95.mfc" "$T/v095.mfc" 1e-4
if cmp -s "$T/w.w0.95.mfc" "$T/w.w1.1.mfc"; then fail "warps 0.95 and 1.1 identical"; else pass "warps differ"; fi

# A list with one bad entry: the good one is written, the status is 1.
printf '# comment\n\n%s %s\n%s %s\n' "$T/gf.wav" "$T/l1.mfc" "$T/missing.wav" "$T/l2.mfc" >"$T/list"
"$TOOL" "${SPHINX[@]}" -c "$T/list" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && cmp -s "$T/l1.mfc" "$T/wav.mfc" && [ ! -f "$T/l2.mfc" ] &&
  grep -q 'missing.wav: cannot open' "$T/err" && pass "list with a bad entry" ||
  fail "list: status $rc, $(cat "$T/err")"

expect_ok "--help" --help
grep -q '^Usage: gpuspeech-features' "$T/out" && pass "usage text" || fail "usage text"
expect_ok "--version" --version
expect_ok "--list-backends" --list-backends
grep -q '^cpu *usable' "$T/out" && pass "cpu listed" || fail "cpu not listed: $(cat "$T/out")"

# ----------------------------------------------------------------- bad input
head -c 1000 "$T/gf.wav" >"$T/truncated.wav"
expect_error "truncated wav" nonzero "truncated.wav: truncated" "${SPHINX[@]}" -i "$T/truncated.wav" -o "$T/x.mfc"
head -c 30 "$T/gf.wav" >"$T/header-only.wav"
expect_error "wav cut in its header" nonzero "header-only.wav: truncated" "${SPHINX[@]}" -i "$T/header-only.wav" -o "$T/x.mfc"
echo "this is not audio at all" >"$T/text.wav"
expect_error "non-wav file" nonzero "text.wav: not a WAV file" "${SPHINX[@]}" -i "$T/text.wav" -o "$T/x.mfc"
: >"$T/empty.wav"
expect_error "empty file" nonzero "empty.wav: the file is empty" "${SPHINX[@]}" -i "$T/empty.wav" -o "$T/x.mfc"
expect_error "empty raw file" nonzero "empty.wav: the file is empty" "${SPHINX[@]}" --raw -i "$T/empty.wav" -o "$T/x.mfc"
expect_error "missing input" nonzero "nothere.wav: cannot open" "${SPHINX[@]}" -i "$T/nothere.wav" -o "$T/x.mfc"
expect_error "odd-sized raw" nonzero "not a whole number" "${SPHINX[@]}" --raw -i "$T/text.wav" -o "$T/x.mfc"
expect_error "missing feat.params" nonzero "nofeat.params: cannot open" --feat-params "$T/nofeat.params" -i "$T/gf.wav" -o "$T/x.mfc"
printf -- '-nfilt 25\n-lowerf 1x30\n' >"$T/bad.params"
expect_error "malformed feat.params" nonzero "bad.params:2: -lowerf: '1x30' is not a number" --feat-params "$T/bad.params" -i "$T/gf.wav" -o "$T/x.mfc"
printf -- '-feat s3_1x39\n' >"$T/bad2.params"
expect_error "unsupported -feat" nonzero "bad2.params:1: -feat 's3_1x39'" --feat-params "$T/bad2.params" -i "$T/gf.wav" -o "$T/x.mfc"

if "$TOOL" --list-backends | grep -q '^cuda *usable'; then
  echo "skip --backend cuda (a CUDA device is usable here)"
else
  expect_error "unavailable cuda backend" nonzero "cuda" --backend cuda -i "$T/gf.wav" -o "$T/x.mfc"
fi
expect_error "unknown backend" nonzero "bogus" --backend bogus -i "$T/gf.wav" -o "$T/x.mfc"

sox "$T/gf.wav" -r 8000 "$T/gf8k.wav"
expect_error "wrong sample rate" nonzero "gf8k.wav: sample rate 8000 Hz does not match the configured 16000 Hz" \
  "${SPHINX[@]}" -i "$T/gf8k.wav" -o "$T/x.mfc"
# ...and the 8 kHz file with an 8 kHz configuration works.
expect_ok "8 kHz configuration" --sample-rate 8000 --fft-size 256 --num-filters 31 \
  --low-freq 200 --high-freq 3500 -i "$T/gf8k.wav" -o "$T/8k.mfc"

# A float WAV with a NaN at sample 1234.
python3 - "$T/nan.wav" <<'PY'
import math, struct, sys
n = 16000
samples = [0.1 * math.sin(i / 10.0) for i in range(n)]
samples[1234] = float('nan')
data = struct.pack('<%df' % n, *samples)
fmt = struct.pack('<HHIIHH', 3, 1, 16000, 16000 * 4, 4, 32)
body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmt)) + fmt + b'data' + struct.pack('<I', len(data)) + data
open(sys.argv[1], 'wb').write(b'RIFF' + struct.pack('<I', len(body)) + body)
PY
expect_error "NaN sample" nonzero "nan.wav: sample 1234 is NaN" "${SPHINX[@]}" -i "$T/nan.wav" -o "$T/x.mfc"

expect_error "channel out of range" nonzero "channel 3 requested but the file has 2" "${SPHINX[@]}" --channel 3 -i "$T/stereo.wav" -o "$T/x.mfc"
expect_error "unknown flag" nonzero "unknown option --frobnicate" --frobnicate -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "bad number" nonzero "--num-filters: 'many' is not an integer" --num-filters many -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "flag without value" nonzero "--window needs a value" -i "$T/gf.wav" -o "$T/x.mfc" --window
expect_error "bad window" nonzero "unknown window 'triangle'" --window triangle -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "invalid configuration" nonzero "invalid configuration: filterbank edges" --low-freq 9000 -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "no input" nonzero "give -i IN -o OUT or -c LIST" -o "$T/x.mfc"
expect_error "warps with vtln-warp" nonzero "cannot be combined" --warps 0.9,1.1 --vtln-warp 0.9 -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "bad warp list" nonzero "--warps: '' is not a number" --warps 0.9,,1.1 -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "unwritable output" nonzero "cannot create" "${SPHINX[@]}" -i "$T/gf.wav" -o "$T/no/such/dir/x.mfc"
expect_error "feat.params with htk flavour" nonzero "cannot be combined with --flavour htk" --flavour htk --feat-params "$PARAMS" -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "rate for wav" nonzero "--raw input only" --rate 8000 -i "$T/gf.wav" -o "$T/x.mfc"
expect_error "directory as input" nonzero "is a directory" "${SPHINX[@]}" -i "$T" -o "$T/x.mfc"

cli_finish
