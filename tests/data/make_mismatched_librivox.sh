#!/bin/bash
# A channel-mismatched copy of pocketsphinx-testdata's LibriVox set, for the
# fMLLR accuracy test (tests/test_wer_fmllr.sh): the same five utterances
# as if heard through a telephone handset, i.e. a channel the en-us model
# (trained on wideband speech) never saw:
#   sinc 300-3400      telephone band: nothing below 300 Hz or above 3.4 kHz
#                      (the upper mel bands, up to 8 kHz, are left with only
#                      the filter's stop-band leakage);
#   treble +8 2000     a rising tilt, +8 dB shelf above about 2 kHz (a
#                      bright, small microphone);
#   bass -6 500        and a falling low end below about 500 Hz;
#   gain -10           10 dB quieter (batch CMN should remove this one).
# sox runs with -R (repeatable: fixed seeds) and -D (no dither), so the
# copy is the same bytes on every run and the test's numbers are stable.
#
# Usage: make_mismatched_librivox.sh SRC_DIR DEST_DIR
#   SRC_DIR: pocketsphinx-testdata's librivox directory (fileids,
#   transcription, *.wav); DEST_DIR gets the same names, the WAVs filtered,
#   fileids and transcription copied.
set -eu
SRC=$1
DEST=$2
command -v sox >/dev/null || { echo "make_mismatched_librivox.sh: sox is needed" >&2; exit 1; }
[ -f "$SRC/fileids" ] && [ -f "$SRC/transcription" ] ||
  { echo "make_mismatched_librivox.sh: $SRC has no fileids / transcription" >&2; exit 1; }
mkdir -p "$DEST"
cp "$SRC/fileids" "$SRC/transcription" "$DEST/"
while read -r id; do
  [ -n "$id" ] || continue
  sox -R -D "$SRC/$id.wav" "$DEST/$id.wav" sinc 300-3400 treble +8 2000 bass -6 500 gain -10
done <"$SRC/fileids"
