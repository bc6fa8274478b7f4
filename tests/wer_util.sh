# Word error rate helpers shared by the WER tests and benchmarks
# (test_wer_librivox.sh, test_wer_fmllr.sh, test_wer_fmllr_flite.sh,
# test_wer_fmllr_online.sh, test_wer_clipped.sh, test_wer_live_vs_element.sh,
# bench/noisy_wer.sh, bench/live_wer.sh, bench/cpu_vs_pocketsphinx.sh).
# Source it:
#   . "$(dirname "$0")/wer_util.sh"
# Needs sed, awk and, for the scoring, `sctk sclite`.

# The text normalisation, as awk statements on the variable t: lower case,
# <s> </s> <sil> and [noise] words dropped, every character other than
# a-z, 0-9 and ' made a space, spaces squeezed and trimmed.
_wer_normalise_awk='t = tolower(t)
  gsub(/<\/?s>|<sil>|\[[^]]*\]/, " ", t)
  gsub(/[^a-z0-9'"'"' ]/, " ", t)
  gsub(/ +/, " ", t); sub(/^ /, "", t); sub(/ $/, "", t)'

# wer_normalise_text: stdin -> stdout, each line normalised as text.
wer_normalise_text() {
  awk "{ t = \$0; $_wer_normalise_awk; print t }"
}

# wer_normalise FILE: a trn file (reference or hypothesis: "words (id)", or
# pocketsphinx's "words (id score)") -> stdout, "text (id)" a line: the text
# normalised, the id kept, a score after it dropped.
wer_normalise() {
  sed -E 's/\(([^ )]+)( [^)]*)?\)[[:space:]]*$/\n(\1)/' "$1" |
    awk "NR % 2 == 1 { text = \$0; next } { t = text; $_wer_normalise_awk; print t \" \" \$0 }"
}

# wer_gst_finals ELEMENT LOG: the final hypotheses that elements of type
# ELEMENT (gpudecoder, pocketsphinx: both post "ELEMENT, ...
# hypothesis=(string)..., final=(boolean)true" messages) left in a
# `gst-launch-1.0 -m` log, joined into one normalised line.
wer_gst_finals() {
  grep "(element): $1, " "$2" | grep 'final=(boolean)true' |
    sed -E 's/.*hypothesis=\(string\)("(([^"\\]|\\.)*)"|([^,;]*)).*/\2\4/; s/\\(.)/\1/g' |
    tr '\n' ' ' | wer_normalise_text
}

# wer_percent REF HYP: scores the normalised trn HYP against REF with sclite
# (sclite's report kept in HYP.sclite) and prints the WER in percent
# (sclite's Sum/Avg line). Returns 1, printing nothing, when sclite fails.
wer_percent() {
  sctk sclite -r "$1" trn -h "$2" trn -i rm -o sum stdout >"$2.sclite" 2>&1 || return 1
  awk '/Sum\/Avg/ { gsub(/\|/, " "); print $(NF - 1); exit }' "$2.sclite"
}

# wer_or_fail REF HYP: wer_percent, or on failure "FAIL sclite on HYP:" and
# sclite's output on stdout and exit 1 (the tests' convention; in $(...) it
# leaves the subshell, and the caller's empty-WER check fails the test).
wer_or_fail() {
  wer_percent "$1" "$2" || { echo "FAIL sclite on $2:"; cat "$2.sclite"; exit 1; }
}

# wer_expect LABEL A OP B WHAT: a test's comparison of two WERs (percent).
# Passes when A OP B (OP is < or <=) and prints "ok   LABEL A% OP B% WHAT";
# else prints "FAIL LABEL A% >= B% WHAT" (or >) and sets failed=1, the
# caller's variable (so not in a subshell). An empty or non-numeric WER
# fails too.
wer_expect() {
  local label=$1 a=$2 op=$3 b=$4 what=$5 not
  case $op in
    "<") not=">=" ;;
    "<=") not=">" ;;
    *) echo "FAIL $label: wer_expect's operator must be < or <=, not '$op'"; failed=1; return ;;
  esac
  if awk -v a="$a" -v b="$b" -v op="$op" 'BEGIN {
       num = "^[0-9]+([.][0-9]*)?$"
       exit !(a ~ num && b ~ num && (op == "<" ? a + 0 < b + 0 : a + 0 <= b + 0)) }'; then
    echo "ok   $label $a% $op $b%${what:+ $what}"
  else
    echo "FAIL $label $a% $not $b%${what:+ $what}"
    failed=1
  fi
}

# wer_bench_row TABLE LOG CONDITION: reads the row "| CONDITION | A | B | C
# | ..." of a table that tests/bench/noisy_wer.sh or live_wer.sh printed to
# TABLE (their stderr in LOG) into WER_ROW=(A B C ...), the WERs after the
# condition's name (at least three). On a missing row, a WER that is not a
# number, or a decoder that failed (LOG says "failed"), prints LOG and
# "FAIL ..." and exits 1 (the tests' convention). Not in a subshell: it
# sets WER_ROW.
wer_bench_row() {
  local row v
  row=$(grep -E "^\| $3 \|" "$1") || { cat "$2"; echo "FAIL no $3 row"; exit 1; }
  read -r -a WER_ROW < <(echo "$row" | awk -F'|' '{ gsub(/ /, ""); for (i = 3; i < NF; ++i) printf "%s ", $i; print "" }')
  [ ${#WER_ROW[@]} -ge 3 ] || { cat "$2"; echo "FAIL fewer than three WERs in: $row"; exit 1; }
  for v in "${WER_ROW[@]}"; do
    [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || { cat "$2"; echo "FAIL a WER is missing in: $row"; exit 1; }
  done
  grep -q 'failed' "$2" && { cat "$2"; echo "FAIL a decoder failed (above)"; exit 1; }
  return 0
}

# wav_header_bytes FILE...: the byte offset of the samples (the "data"
# chunk's contents) common to every WAV FILE, printed for
# pocketsphinx_batch's -adchdr. With -adcin yes pocketsphinx_batch reads a
# file from byte -adchdr on as samples and does not parse a WAV header, so
# without it the 44-byte header is decoded as 22 samples of audio: a click
# at the very start, which moves its noise estimate and, on files that
# begin with digital silence, its words. Fails (status 1, a message on
# stderr) if the files' offsets differ or a file has no "data" chunk.
wav_header_bytes() {
  python3 - "$@" <<'PY'
import struct, sys
offsets = set()
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        head = f.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            sys.exit("wav_header_bytes: %s: not a RIFF/WAVE file" % name)
        pos = 12
        while True:
            chunk = f.read(8)
            if len(chunk) < 8:
                sys.exit("wav_header_bytes: %s: no data chunk" % name)
            tag, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            pos += 8
            if tag == b"data":
                offsets.add(pos)
                break
            f.seek(size + (size & 1), 1)
            pos += size + (size & 1)
if len(offsets) != 1:
    sys.exit("wav_header_bytes: the files' headers differ in size: %s" % sorted(offsets))
print(offsets.pop())
PY
}
