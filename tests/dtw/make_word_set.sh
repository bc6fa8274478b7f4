#!/bin/sh
# Builds an isolated-word test set for DTW template matching from synthetic
# speech (flite) that the recogniser never saw as a template:
#
#   OUT/templates/WORD_VOICE.wav        the template voices, as spoken
#   OUT/tests/WORD_VOICE_VARIANT.wav    the other voices, each word as spoken
#                                       and perturbed (tempo, pitch, noise)
#   OUT/ref.trn                         "WORD (WORD_VOICE_VARIANT)" per test
#
# Everything is 16 kHz mono 16-bit. Variants: plain, tempo 0.85 and 1.15,
# pitch -200 and +200 cents, white noise at about 20-25 dB SNR (same noise on
# every run: every sox call has -R). The kal voice is 8 kHz: resampled, so its tests have
# no energy above 4 kHz, a band-limited channel.
#
# Usage: make_word_set.sh OUT [TEMPLATE_VOICES] [TEST_VOICES]
#   defaults: "rms slt" and "awb kal16 kal" (flite -lv lists the voices)
# Needs flite and sox. Exit status 77 when either is missing (a meson skip).
set -eu

out=${1:?usage: make_word_set.sh OUT [TEMPLATE_VOICES] [TEST_VOICES]}
template_voices=${2:-"rms slt"}
test_voices=${3:-"awb kal16 kal"}
words="yes no up down left right stop go on off zero one two three four five six seven eight nine"

for tool in flite sox; do
  command -v "$tool" >/dev/null 2>&1 || { echo "make_word_set.sh: $tool not found" >&2; exit 77; }
done

mkdir -p "$out/templates" "$out/tests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$out/ref.trn"

speak() {  # voice word dest
  flite -voice "$1" -t "$2" -o "$tmp/raw.wav"
  sox -R "$tmp/raw.wav" -r 16000 -c 1 -b 16 "$3" rate -h
}

for v in $template_voices; do
  for w in $words; do
    speak "$v" "$w" "$out/templates/${w}_${v}.wav"
  done
done

for v in $test_voices; do
  for w in $words; do
    base="$out/tests/${w}_${v}"
    speak "$v" "$w" "${base}_plain.wav"
    sox -R "${base}_plain.wav" "${base}_slow.wav" tempo -s 0.85
    sox -R "${base}_plain.wav" "${base}_fast.wav" tempo -s 1.15
    sox -R "${base}_plain.wav" "${base}_low.wav" pitch -200
    sox -R "${base}_plain.wav" "${base}_high.wav" pitch 200
    # Uniform white noise at 0.02 of full scale: about -39 dBFS RMS, some
    # 20-25 dB below the words' active level (flite speaks near -15 dBFS).
    sox -R "${base}_plain.wav" "$tmp/noise.wav" synth whitenoise vol 0.02
    sox -R -m -v 1 "${base}_plain.wav" -v 1 "$tmp/noise.wav" -b 16 "${base}_noise.wav"
    for variant in plain slow fast low high noise; do
      echo "$w (${w}_${v}_${variant})" >> "$out/ref.trn"
    done
  done
done
echo "make_word_set.sh: $(ls "$out/templates" | wc -l) templates, $(ls "$out/tests" | wc -l) tests in $out" >&2
