#!/bin/bash
# transcribe's cut with only the speech a live stream has heard: sentence k
# of a recording decoded by gpuspeech-transcribe with that recording's
# sentences 1..k as one speaker (--spk2utt), so that its adaptation, like a
# live stream's at the end of sentence k, has nothing that follows. Its
# words for sentence k are kept; the sentences' words are joined per
# recording and scored as live_wer.sh's columns are (docs/benchmarks.md,
# "The 8-sentence set, all fourteen rows").
#
# Usage: live_wer_causal_cut.sh WORKDIR
#   WORKDIR: one that live_wer.sh made with its cut column (LIVE_WER_COLUMNS
#   including cut), for each condition of DEGRADED_CONDITIONS (the same
#   environment as live_wer.sh; default as there).
# Not part of the test suite: k runs of transcribe for a recording of k
# sentences, for each condition. Runs over different conditions of one
# WORKDIR may go side by side (each condition's files are its own).
set -u
[ $# -eq 1 ] || { echo "usage: live_wer_causal_cut.sh WORKDIR" >&2; exit 2; }
W=$1
HERE=$(cd "$(dirname "$0")/.." && pwd)
. "$HERE/bench/live_wer_env.sh"
L=$W/long
[ -f "$L/spans" ] && [ -f "$L/ref.norm" ] || degraded_die "$W: no long recordings (run live_wer.sh first)"
RECORDINGS=($(awk '{ print $1 }' "$L/spans" | uniq))
echo "| condition | transcribe, cut, causal |"
echo "| --- | ---: |"
for cond in $DEGRADED_CONDITIONS; do
  [ -d "$L/cut-$cond" ] || degraded_die "$L/cut-$cond: missing (run live_wer.sh with its cut column)"
  hyp=$L/$cond.causal.trn; : >"$hyp"
  for v in "${RECORDINGS[@]}"; do
    ids=($(recording_utterances "$L/spans" "$v"))
    words=""
    for k in $(seq 1 ${#ids[@]}); do
      files=()
      for id in "${ids[@]:0:$k}"; do files+=("$L/cut-$cond/$id.wav"); done
      echo "$v ${ids[*]:0:$k}" >"$L/$cond.causal.spk2utt"
      transcribe_cut "$L/$cond.causal.hyp" "$L/$cond.causal.log" --spk2utt "$L/$cond.causal.spk2utt" "${files[@]}" ||
        echo "live_wer_causal_cut.sh: transcribe failed on $cond/$v, $k sentences (see $L/$cond.causal.log)" >&2
      words="$words $(utterance_words "$L/$cond.causal.hyp" "${ids[$((k - 1))]}")"
    done
    echo "$(echo "$words" | wer_normalise_text) ($v)" >>"$hyp"
  done
  echo "| $cond | $(wer_percent "$L/ref.norm" "$hyp" || echo "?") |"
done
