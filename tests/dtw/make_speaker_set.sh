#!/bin/sh
# Builds a cross-speaker isolated-word benchmark for DTW template matching
# from two synthesisers (flite and espeak-ng), so that no test voice ever
# recorded a template:
#
#   OUT/templates/WORD_VOICE.wav          12 command words, template voices
#   OUT/tests/WORD_VOICE_VARIANT.wav      the same words by the test voices,
#                                         each as spoken and perturbed twice
#   OUT/oov/WORD_VOICE_VARIANT.wav        out-of-vocabulary words by the test
#                                         voices (for rejection), two syllables
#   OUT/oov1/WORD_VOICE_VARIANT.wav       one-syllable out-of-vocabulary words:
#                                         the command words have one syllable
#                                         each, so the two-syllable ones alone
#                                         would flatter a rule that counts them
#   OUT/ref.trn                           "WORD (WORD_VOICE_VARIANT)" per test
#   OUT/oov.trn, OUT/oov1.trn             " (WORD_VOICE_VARIANT)" per OOV file
#
# Voices are named "flite:NAME" or "espeak:VOICE+VARIANT" (espeak-ng
# --voices lists languages, --voices=variant the variants). In file names
# the engine prefix is dropped and '+' / '-' become '.', since a template's
# label is its name up to the first underscore.
#
# Perturbations, two per (voice, word), chosen by the word's position so that
# every pair occurs equally often: tempo 0.9 / 1.1 (sox tempo -s, pitch
# kept), pitch -100 / +100 cents (tempo kept), level -20 dB, white noise
# at about 30 dB below the words' level. flite's kal voice is 8 kHz:
# resampled to 16 kHz it has nothing above 4 kHz, a band-limited channel.
# flite's awb_time is a limited-domain voice (clock times only) and is not
# used.
#
# Everything is 16 kHz mono 16-bit and bit-for-bit repeatable (flite and
# espeak-ng are deterministic, every sox call has -R).
#
# Usage: make_speaker_set.sh OUT [TEMPLATE_VOICES] [TEST_VOICES]
# Needs flite, espeak-ng and sox; exit status 77 (a meson skip) when one is
# missing.
set -eu

out=${1:?usage: make_speaker_set.sh OUT [TEMPLATE_VOICES] [TEST_VOICES]}
template_voices=${2:-"flite:rms flite:slt espeak:en-us+m1 espeak:en+f2 espeak:en-gb-scotland+m3 espeak:en-029+f4"}
test_voices=${3:-"flite:awb flite:kal16 flite:kal espeak:en-us+f3 espeak:en+m7 espeak:en-gb-x-rp+m4"}
words="yes no up down left right stop go on off start back"
oov_words="hello water music table seven open number happy window paper"
oov1_words="red five cat home blue fish book jump light six"

for tool in flite espeak-ng sox; do
  command -v "$tool" >/dev/null 2>&1 || { echo "make_speaker_set.sh: $tool not found" >&2; exit 77; }
done

mkdir -p "$out/templates" "$out/tests" "$out/oov" "$out/oov1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$out/ref.trn"
: > "$out/oov.trn"
: > "$out/oov1.trn"

file_name() {  # voice -> name usable in a file name (no '_', '+', ':')
  echo "${1#*:}" | tr '+_-' '...'
}

speak() {  # voice word dest
  case $1 in
    flite:*) flite -voice "${1#flite:}" -t "$2" -o "$tmp/raw.wav" ;;
    espeak:*) espeak-ng -v "${1#espeak:}" -w "$tmp/raw.wav" "$2" ;;
    *) echo "make_speaker_set.sh: unknown voice '$1' (flite:NAME or espeak:VOICE)" >&2; exit 1 ;;
  esac
  sox -R "$tmp/raw.wav" -r 16000 -c 1 -b 16 "$3" rate -h
}

perturb() {  # variant plain.wav dest
  case $1 in
    slow) sox -R "$2" "$3" tempo -s 0.9 ;;
    fast) sox -R "$2" "$3" tempo -s 1.1 ;;
    low) sox -R "$2" "$3" pitch -100 ;;
    high) sox -R "$2" "$3" pitch 100 ;;
    quiet) sox -R "$2" "$3" vol -20 dB ;;
    noise)
      # Uniform white noise at 0.006 of full scale, about -50 dBFS RMS:
      # some 30 dB below the words' active level.
      sox -R "$2" "$tmp/noise.wav" synth whitenoise vol 0.006
      sox -R -m -v 1 "$2" -v 1 "$tmp/noise.wav" -b 16 "$3" ;;
  esac
}

for v in $template_voices; do
  for w in $words; do
    speak "$v" "$w" "$out/templates/${w}_$(file_name "$v").wav"
  done
done

# variants_for INDEX: the two perturbations of the INDEX-th word.
variants_for() {
  case $(($1 % 3)) in
    0) echo "slow high" ;;
    1) echo "fast low" ;;
    2) echo "quiet noise" ;;
  esac
}

for v in $test_voices; do
  name=$(file_name "$v")
  i=0
  for w in $words; do
    base="$out/tests/${w}_${name}"
    speak "$v" "$w" "${base}_plain.wav"
    echo "$w (${w}_${name}_plain)" >> "$out/ref.trn"
    for variant in $(variants_for $i); do
      perturb "$variant" "${base}_plain.wav" "${base}_${variant}.wav"
      echo "$w (${w}_${name}_${variant})" >> "$out/ref.trn"
    done
    i=$((i + 1))
  done
  for w in $oov_words; do
    speak "$v" "$w" "$out/oov/${w}_${name}_plain.wav"
    echo " (${w}_${name}_plain)" >> "$out/oov.trn"
  done
  for w in $oov1_words; do
    speak "$v" "$w" "$out/oov1/${w}_${name}_plain.wav"
    echo " (${w}_${name}_plain)" >> "$out/oov1.trn"
  done
done
echo "make_speaker_set.sh: $(ls "$out/templates" | wc -l) templates, $(ls "$out/tests" | wc -l) tests," \
  "$(ls "$out/oov" | wc -l) + $(ls "$out/oov1" | wc -l) out-of-vocabulary files in $out" >&2
