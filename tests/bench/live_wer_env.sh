# What live_wer.sh and live_wer_causal_cut.sh share, sourced by both with
# HERE set to the tests directory: the build, the default model, the graph
# cache, the degraded set's and sclite's helpers, and transcribe as their
# cut columns run it.
# env: GPUSPEECH_BUILD (default: the build directory beside tests/),
#   GPUSPEECH_MODEL_DIR (en-us under it), GPUSPEECH_GRAPH_CACHE.
BUILD=${GPUSPEECH_BUILD:-$HERE/../build}
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
CACHE=${GPUSPEECH_GRAPH_CACHE:-$HOME/.cache/gpuspeech}
. "$HERE/bench/degraded_set.sh"
. "$HERE/wer_util.sh"
TRANSCRIBE=$BUILD/tools/gpuspeech-transcribe
[ -x "$TRANSCRIBE" ] || degraded_die "no $TRANSCRIBE"

# transcribe_cut HYP LOG [FLAG...] WAV...: gpuspeech-transcribe, its
# defaults, the default model, on the CPU; words to HYP, messages to LOG.
transcribe_cut() {
  local hyp=$1 log=$2
  shift 2
  "$TRANSCRIBE" --backend cpu --search cpu --cache "$CACHE" --hmm "$M/en-us" \
    --dict "$M/cmudict-en-us.dict" --lm "$M/en-us.lm.bin" "$@" >"$hyp" 2>"$log"
}

# utterance_words HYP ID: the words of utterance ID in transcribe's output.
utterance_words() { grep -F "($2)" "$1" | sed -E 's/ *\([^)]*\)$//'; }

# recording_utterances SPANS VOICE: the utterance ids of VOICE's recording,
# in the order spoken (SPANS: "voice id start duration" lines).
recording_utterances() { awk -v v="$2" '$1 == v { print $2 }' "$1"; }
