#!/bin/bash
# Two-pass fMLLR by WER on a larger development set than the five LibriVox
# utterances: the sentences of tests/data/fmllr_dev/sentences.txt (our own
# text) spoken by flite voices, each voice one speaker, as synthesised and
# through tests/data/make_mismatched_librivox.sh's telephone-like channel.
# Synthetic voices are not people: this set is for choosing between
# settings with more than 71 words behind each number, not a claim about
# human speech. Not part of the test suite (minutes of CPU decoding).
#
# Usage: fmllr_dev_wer.sh TRANSCRIBE WORKDIR N_SENTENCES "VOICE..." [CONDITION...]
#   CONDITION: none, or the --fmllr-update value of a two-pass run (full,
#   diag, offset, auto); default: none full diag auto. FMLLR_ARGS (in the
#   environment) is added to every two-pass run, e.g. "--fmllr-redecode 1".
# Prints one line per condition and channel: WER % (errors / words).
set -u
TOOL=$1 W=$2 N=$3 VOICES=$4
shift 4
CONDS=${*:-none full diag auto}
HERE=$(cd "$(dirname "$0")/.." && pwd)
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
CACHE=${GPUSPEECH_GRAPH_CACHE:-$HOME/.cache/gpuspeech}
mkdir -p "$W/clean"
: >"$W/clean/fileids"; : >"$W/clean/transcription"; : >"$W/spk2utt"
for v in $VOICES; do
  line="$v"
  i=0
  while read -r s && [ $i -lt "$N" ]; do
    i=$((i + 1)); id=$(printf '%s-%02d' "$v" $i)
    if [ ! -f "$W/clean/$id.wav" ]; then
      flite -voice "$v" -t "$s" -o "$W/tmp.wav" &&
        sox -R -D "$W/tmp.wav" -r 16000 -b 16 -c 1 "$W/clean/$id.wav" ||
        { echo "fmllr_dev_wer.sh: flite/sox failed for $id" >&2; exit 1; }
    fi
    echo "$id" >>"$W/clean/fileids"
    echo "$s ($id)" >>"$W/clean/transcription"
    line="$line $id"
  done <"$HERE/data/fmllr_dev/sentences.txt"
  echo "$line" >>"$W/spk2utt"
done
"$HERE/data/make_mismatched_librivox.sh" "$W/clean" "$W/phone" || exit 1
cp "$W/clean/transcription" "$W/ref.trn"  # "text (id)": already sclite's trn
for set in clean phone; do
  files=()
  while read -r id; do files+=("$W/$set/$id.wav"); done <"$W/clean/fileids"
  for c in $CONDS; do
    args=(--fmllr none)
    # shellcheck disable=SC2206
    [ "$c" = none ] || args=(--fmllr two-pass --spk2utt "$W/spk2utt" --fmllr-update "$c" ${FMLLR_ARGS:-})
    "$TOOL" --backend cpu --search cpu --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" \
      --lm "$M/en-us.lm.bin" --cache "$CACHE" "${args[@]}" "${files[@]}" \
      >"$W/$set-$c.hyp" 2>"$W/$set-$c.log" || { echo "$set $c: transcribe failed"; tail -3 "$W/$set-$c.log"; continue; }
    sed -E 's/<\/?s>|<sil>|\[[^]]*\]//g; s/ +/ /g; s/^ //' "$W/$set-$c.hyp" >"$W/$set-$c.trn"
    sctk sclite -r "$W/ref.trn" trn -h "$W/$set-$c.trn" trn -i rm -o sum stdout >"$W/$set-$c.sclite" 2>&1
    awk -v s="$set" -v c="$c" '/Sum\/Avg/ { gsub(/\|/, " "); printf "%-6s %-7s WER %5s %%  (%s words)\n", s, c, $(NF - 1), $3; exit }' "$W/$set-$c.sclite"
    grep 'fmllr speaker' "$W/$set-$c.log" | sed 's/^gpuspeech-transcribe: /    /' | cut -c1-170
  done
done
