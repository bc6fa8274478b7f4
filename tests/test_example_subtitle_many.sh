#!/bin/sh
# examples/subtitle-many.sh (one process, many inputs, a subtitle file
# each): three cards recordings through it at once give, byte for byte, the
# SRT files each gives alone, and a missing input is refused with a message.
# Usage: test_example_subtitle_many.sh EXAMPLE (GST_PLUGIN_PATH set).
set -u
EXAMPLE=$1
D=${GPUSPEECH_AUDIO_DIR:-/usr/share/pocketsphinx/test/data}/cards
T=$(mktemp -d /tmp/gpuspeech-subtitles-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -f "$D/cards.gram" ] || { echo "FAIL missing $D/cards.gram"; exit 1; }
props="backend=cpu jsgf=$D/cards.gram"
status=0
sh "$EXAMPLE" "$T/together" srt "$D/001.wav" "$D/002.wav" "$D/003.wav" -- $props 2>"$T/err" ||
  { echo "FAIL three inputs: $(cat "$T/err")"; exit 1; }
for id in 001 002 003; do
  sh "$EXAMPLE" "$T/alone-$id" srt "$D/$id.wav" -- $props 2>>"$T/err" ||
    { echo "FAIL $id alone: $(cat "$T/err")"; status=1; continue; }
  if [ ! -s "$T/together/$id.srt" ]; then
    echo "FAIL $id: no subtitles written"; status=1
  elif cmp -s "$T/together/$id.srt" "$T/alone-$id/$id.srt"; then
    echo "ok   $id: $(sed -n 3p "$T/together/$id.srt")"
  else
    echo "FAIL $id: differs from its run alone"; diff "$T/together/$id.srt" "$T/alone-$id/$id.srt"
    status=1
  fi
done
if sh "$EXAMPLE" "$T/missing" srt "$T/none.wav" -- $props 2>"$T/err"; then
  echo "FAIL a missing input was accepted"; status=1
elif grep -q "no such file: $T/none.wav" "$T/err"; then
  echo "ok   a missing input is refused: $(cat "$T/err")"
else
  echo "FAIL missing input: unexpected message: $(cat "$T/err")"; status=1
fi
exit $status
