#!/bin/sh
# Builds a corpus of English words spoken by many espeak-ng voices, none of
# which records a template or a test of make_speaker_set.sh: the data from
# which a speaker-independent projection of the DTW features can be learnt
# (docs/dtw.md, "A projection learnt from other voices"; issue 16).
#
#   OUT/WORD_VOICE.wav    16 kHz mono 16-bit, one word each
#
# The words: 323 common English words of one or two syllables, none of the
# speaker set's command words or unknown words. The voices: espeak-ng's
# named variants (not m1-m7 or f1-f5, which the speaker set's voices use),
# each on one of seven English dialects in turn, so that every dialect is
# heard. Two disjoint sets of 24 voices: SET 1 (default) or 2.
# Bit-for-bit repeatable (espeak-ng, sox -R). About 8 minutes a set on two
# cores.
#
# Usage: make_projection_corpus.sh OUT [1|2]
# Needs espeak-ng and sox; exit status 77 when either is missing.
set -eu
out=${1:?usage: make_projection_corpus.sh OUT [1|2]}
set_no=${2:-1}
for tool in espeak-ng sox; do
  command -v "$tool" >/dev/null 2>&1 || { echo "make_projection_corpus.sh: $tool not found" >&2; exit 77; }
done
dialects="en en-us en-gb-scotland en-gb-x-gbclan en-gb-x-gbcwmd en-gb-x-rp en-029"
case $set_no in
  1) variants="Adam Andy Annie Benjamin Caleb David Ed Gene Hugo Jacky John Lee Linda Max Michael Paul Rob Steph Storm Zac grandma klatt norbert travis"
     offset=0 ;;
  2) variants="Alex Alicia Andrea Auntie Belinda Boris Denis Edward Gustave Henrique Iven Linda Marco Mario Michel Mike Pedro Quincy Robert shelby victor anika sandro Tweaky"
     offset=3 ;;
  *) echo "make_projection_corpus.sh: SET is 1 or 2, not '$set_no'" >&2; exit 1 ;;
esac
words="
apple arm baby bad bag ball band bank bat bath bed beg bell bet bid big bird bit black blood 
boat body bog bone boss bottle box boy bread bridge brother brown bud bug bus butter cake call 
camp cap car card care carpet case chair chance cheese chicken child city class clock cloud 
coat coffee cold cop corner cost cotton cow cup cut dad dark day dead deep desk dog door dream 
dress drink drive duck dust ear earth east egg end eye face fact farm fast fat field fight film 
fire flag floor flower fly food foot fork friend frog fruit full game garden gate girl glass 
gold good grass green ground gun hair half hall hand hat head heart heat hill hole horse hot 
house ice iron jacket job key kid king kiss kit kitchen kite knee knife lad lake lamp land late 
law lead led leg lemon let letter lid life lift line lion lip list lit lock long lot loud love 
lunch man map mark mat meat meet met milk mind mitt money moon mother mouse mouth mud nail name 
neck nest net night nose note nut oil orange page pain paint pan park part pat pen pet pig pin 
pipe pit plane plate pocket pool pot pull push put queen rain rat rib rid ring river road rob 
rock rod roof room root rope rose round rub rude run salt sand sat school sea seat set sheep 
shelf ship shirt shoe shop side sign silk sister sit skin sky sleep smoke snake snow sock soft 
son song sought sound soup south spoon spring square star stick stone storm street string sugar 
suit summer sun tail talk tap tea teeth test thing thumb ticket tiger time tin tip toe tongue 
tooth top town train tree truck tub turn wall war wash watch wave week wet wheel white wind 
wing wire wit wolf wood wool word work yard year "
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
for variant in $variants; do
  # shellcheck disable=SC2086
  set -- $dialects
  shift $(( (i + offset) % 7 ))
  voice="$1+$variant"
  name=$(echo "$voice" | tr '+_-' '...')
  i=$((i + 1))
  for w in $words; do
    espeak-ng -v "$voice" -w "$tmp/raw.wav" "$w"
    sox -R -V1 "$tmp/raw.wav" -r 16000 -c 1 -b 16 "$out/${w}_${name}.wav" rate -h
  done
done
echo "make_projection_corpus.sh: $(ls "$out" | wc -l) words in $out" >&2
