#!/bin/bash
# The live chain on long recordings (issue 15): `gpufeatures ! gpudecoder`
# against Debian's pocketsphinx GStreamer element (gstreamer1.0-pocketsphinx,
# its defaults), and gpuspeech-transcribe on the same audio cut into its
# utterances, per condition of tests/bench/degraded_set.sh; WER by sclite.
#
# The recordings: the first N sentences of tests/data/fmllr_dev/sentences.txt
# (as noisy_wer.sh makes them), one recording per voice: that voice's
# sentences in order with 1.2 s of silence between them, as a microphone or
# a stream gives them, then degraded as a whole (the noise runs through the
# pauses; 0.4 s of digital zeros first). Each element's final results are
# joined per recording; the transcribe column decodes the degraded
# recording cut at the sentence boundaries (0.6 s of the pause on each
# side), its words joined per recording the same way.
#
# Usage: live_wer.sh WORKDIR N "VOICE..." [NAME=FEATURE_PROPS/DECODER_PROPS[/BETWEEN]]...
#   VOICE: a flite voice, or espeak-NAME for espeak-ng's voice NAME
#   (degraded_set.sh's make_clean_set).
#   Each NAME=... is a column of ours: gpufeatures and gpudecoder (backend
#   cpu) with those extra properties (space-separated, either side may be
#   empty), and BETWEEN, if given, a pipeline fragment put between the two
#   (e.g. "gpufmllr update-type=auto"); with none, one column "live" with
#   the defaults. A pocketsphinx-element column and a transcribe column
#   (its defaults, the cut utterances) are added.
# env: LIVE_WER_COLUMNS, which of "ours element cut cut1" to run (default
#   "ours element cut"; e.g. "cut" alone after a change to transcribe's
#   defaults). cut1: transcribe on the cut audio with each sentence its
#   own speaker (--no-cluster-speakers; transcribe's default before
#   2026-12-01), adapted with its own speech alone, where the default
#   adapts each with all the sentences of its speaker.
#   LIVE_WER_MIXED=1: one recording ("mixed") of all the sentences in
#   their order, the voices taking turns sentence by sentence, instead of
#   one recording per voice: a stream whose speaker keeps changing.
#   LIVE_WER_SEGMENTED=1: the live columns (ours and the element) decode each
#   recording as its cut sentences (the transcribe column's files) joined
#   by `concat` into one stream of segments, as a playlist of one source's
#   clips or a push-to-talk app's presses give them: each new segment ends
#   an utterance in gpufeatures, as a pause does not.
# Not part of the test suite (minutes of CPU decoding).
set -u
[ $# -ge 3 ] || { echo "usage: live_wer.sh WORKDIR N \"VOICE...\" [NAME=FEATURE_PROPS/DECODER_PROPS[/BETWEEN]]..." >&2; exit 2; }
W=$1 N=$2 VOICES=($3)
shift 3
SYSTEMS=("$@")
[ ${#SYSTEMS[@]} -gt 0 ] || SYSTEMS=("live=/")
HERE=$(cd "$(dirname "$0")/.." && pwd)
. "$HERE/bench/live_wer_env.sh"
for t in flite sox soxi sctk gst-launch-1.0 gst-inspect-1.0; do
  command -v $t >/dev/null || degraded_die "missing $t"
done
gst-inspect-1.0 pocketsphinx >/dev/null 2>&1 ||
  degraded_die "missing the pocketsphinx GStreamer element (gstreamer1.0-pocketsphinx)"
export GST_PLUGIN_PATH=$BUILD/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}
gst-inspect-1.0 gpudecoder >/dev/null 2>&1 || degraded_die "no gpudecoder under $BUILD/gst (GPUSPEECH_BUILD)"

make_clean_set "$N" "${VOICES[@]}"
make_noises

# One recording per voice, its reference, and where each sentence lies in
# it (seconds, before the 0.4 s of zeros that degrade adds).
L=$W/long
mkdir -p "$L/clean" || degraded_die "cannot create $L"
# -R: the dither sox puts on the generated silence (about 1 LSB) is the
# same on every run; without it the pauses, and the results, varied by
# run (GSM 15.7-16.9 % on one build).
sox -R -n -r 16000 -c 1 -b 16 "$L/pause.wav" trim 0 1.2 || degraded_die "sox (pause)"
: >"$L/ref.trn"; : >"$L/spans"
RECORDING_NAMES=("${VOICES[@]}")
[ "${LIVE_WER_MIXED:-0}" = 1 ] && RECORDING_NAMES=(mixed)
for v in "${RECORDING_NAMES[@]}"; do
  parts=(); words=""; t=0
  while read -r line; do
    id=${line##*(}; id=${id%)}
    [[ $v == mixed || $id == *-"$v" ]] || continue
    [ ${#parts[@]} -gt 0 ] && { parts+=("$L/pause.wav"); t=$(awk -v t="$t" 'BEGIN { print t + 1.2 }'); }
    parts+=("$W/clean/$id.wav")
    d=$(soxi -D "$W/clean/$id.wav")
    echo "$v $id $t $d" >>"$L/spans"
    t=$(awk -v t="$t" -v d="$d" 'BEGIN { print t + d }')
    words="$words ${line% (*}"
  done <"$W/ref.trn"
  [ ${#parts[@]} -gt 0 ] || continue
  if [ ${#parts[@]} -eq 1 ]; then cp "${parts[0]}" "$L/clean/$v.wav"; else sox -R "${parts[@]}" "$L/clean/$v.wav"; fi ||
    degraded_die "sox (joining $v)"
  echo "${words# } ($v)" >>"$L/ref.trn"
done
RECORDINGS=($(awk '{ print $1 }' "$L/spans" | uniq))
# The long recordings are joined again on every run (another N or voice
# order gives other ones), so their degraded copies are made again too:
# degrade_all keeps files already there.
for cond in $DEGRADED_CONDITIONS; do [ "$cond" = clean ] || rm -rf "${L:?}/$cond"; done
degrade_all "$L/clean" "$L" 11.3 60 "${RECORDINGS[@]}"
wer_normalise "$L/ref.trn" >"$L/ref.norm"

COLUMNS_RUN=" ${LIVE_WER_COLUMNS:-ours element cut} "
# The degraded recordings of a condition cut into their sentences (the
# clean one has no zeros before it), 0.6 s of the pause on each side:
# cut-COND/ID.wav. Once a condition per run (the segmented live columns
# and the transcribe columns read the same files).
declare -A CUT_DONE=()
cut_sentences() {
  local cond=$1 lead=0.4 v id t d total from len
  [ -n "${CUT_DONE[$cond]:-}" ] && return
  CUT_DONE[$cond]=1
  [ "$cond" = clean ] && lead=0
  mkdir -p "$L/cut-$cond"
  while read -r v id t d; do
    total=$(soxi -D "$L/$cond/$v.wav")
    from=$(awk -v t="$t" -v l="$lead" 'BEGIN { s = t + l - 0.6; print s < 0 ? 0 : s }')
    len=$(awk -v t="$t" -v l="$lead" -v d="$d" -v f="$from" -v n="$total" \
      'BEGIN { e = t + l + d + 0.6; if (e > n) e = n; print e - f }')
    sox -R "$L/$cond/$v.wav" "$L/cut-$cond/$id.wav" trim "$from" "$len" || degraded_die "sox (cutting $id)"
  done <"$L/spans"
}
# What a live column reads for recording $2 of condition $1: the long
# recording, or (LIVE_WER_SEGMENTED=1) its cut sentences through concat.
# Its output, gst-launch fragments: SOURCE, ending in raw audio, starts
# the pipeline; SOURCE_BRANCHES, after the sink, feeds concat its
# sentences in order (concat plays its pads in the order they are linked).
live_source() {
  local cond=$1 v=$2 id
  SOURCE_BRANCHES=()
  if [ "${LIVE_WER_SEGMENTED:-0}" = 1 ]; then
    SOURCE=(concat name=segments ! audioconvert ! audioresample)
    for id in $(recording_utterances "$L/spans" "$v"); do
      SOURCE_BRANCHES+=(filesrc location="$L/cut-$cond/$id.wav" ! wavparse ! segments.)
    done
  else
    SOURCE=(filesrc location="$L/$cond/$v.wav" ! decodebin ! audioconvert ! audioresample)
  fi
}
runs() { [[ $COLUMNS_RUN == *" $1 "* ]]; }
runs ours || SYSTEMS=()
header="| condition |"; rule="| --- |"
for sys in "${SYSTEMS[@]}"; do header="$header ${sys%%=*} |"; rule="$rule ---: |"; done
runs element && { header="$header pocketsphinx element |"; rule="$rule ---: |"; }
runs cut && { header="$header transcribe, cut |"; rule="$rule ---: |"; }
runs cut1 && { header="$header transcribe, cut, each sentence its own speaker |"; rule="$rule ---: |"; }
rows=()
for cond in $DEGRADED_CONDITIONS; do
  row="| $cond |"
  [ "${LIVE_WER_SEGMENTED:-0}" = 1 ] && cut_sentences "$cond"
  for sys in "${SYSTEMS[@]}"; do
    name=${sys%%=*}; props=${sys#*=}
    fprops=(${props%%/*}); rest=${props#*/}
    dprops=(${rest%%/*}); between=()
    [[ $rest == */* ]] && between=(${rest#*/} !)
    hyp="$L/$cond.$name.trn"; : >"$hyp"
    for v in "${RECORDINGS[@]}"; do
      log="$L/$cond.$name.$v.log"
      live_source "$cond" "$v"
      gst-launch-1.0 -m "${SOURCE[@]}" ! \
        gpufeatures backend=cpu "${fprops[@]}" ! "${between[@]}" \
        gpudecoder hmm="$M/en-us" dict="$M/cmudict-en-us.dict" lm="$M/en-us.lm.bin" cache-dir="$CACHE" \
        backend=cpu "${dprops[@]}" ! fakesink "${SOURCE_BRANCHES[@]}" >"$log" 2>&1 ||
        echo "live_wer.sh: $name failed on $cond/$v (see $log)" >&2
      echo "$(wer_gst_finals gpudecoder "$log") ($v)" >>"$hyp"
    done
    row="$row $(wer_percent "$L/ref.norm" "$hyp" || echo "?") |"
  done
  if runs element; then
  hyp="$L/$cond.pocketsphinx.trn"; : >"$hyp"
  for v in "${RECORDINGS[@]}"; do
    log="$L/$cond.pocketsphinx.$v.log"
    live_source "$cond" "$v"
    gst-launch-1.0 -m "${SOURCE[@]}" ! \
      pocketsphinx hmm="$M/en-us" dict="$M/cmudict-en-us.dict" lm="$M/en-us.lm.bin" ! fakesink "${SOURCE_BRANCHES[@]}" \
      >"$log" 2>&1 || echo "live_wer.sh: the pocketsphinx element failed on $cond/$v (see $log)" >&2
    echo "$(wer_gst_finals pocketsphinx "$log") ($v)" >>"$hyp"
  done
  row="$row $(wer_percent "$L/ref.norm" "$hyp" || echo "?") |"
  fi
  if runs cut || runs cut1; then
  # The degraded recording cut into its sentences, decoded by
  # gpuspeech-transcribe, joined per recording.
  cut_sentences "$cond"
  cut=(); while read -r v id t d; do cut+=("$L/cut-$cond/$id.wav"); done <"$L/spans"
  for column in cut cut1; do
    runs $column || continue
    flags=(); [ $column = cut1 ] && flags=(--no-cluster-speakers)
    transcribe_cut "$L/$cond.$column.hyp" "$L/$cond.$column.log" "${flags[@]}" "${cut[@]}" ||
      echo "live_wer.sh: transcribe ($column) failed on $cond (see $L/$cond.$column.log)" >&2
    hyp="$L/$cond.$column.trn"; : >"$hyp"
    for v in "${RECORDINGS[@]}"; do
      # The recording's sentences in order.
      echo "$(recording_utterances "$L/spans" "$v" | while read -r id; do
          utterance_words "$L/$cond.$column.hyp" "$id"; done | tr '\n' ' ' |
        wer_normalise_text) ($v)" >>"$hyp"
    done
    row="$row $(wer_percent "$L/ref.norm" "$hyp" || echo "?") |"
  done
  fi
  rows+=("$row")
  echo "$row" >&2
done
words=$(awk '{ n += NF - 1 } END { print n }' "$L/ref.norm")
turns=""; [ "${LIVE_WER_MIXED:-0}" = 1 ] && turns=", taking turns in one recording"
[ "${LIVE_WER_SEGMENTED:-0}" = 1 ] && turns="$turns, live columns: each sentence a segment"
echo "WER % (live chain, ${#RECORDINGS[@]} recordings of $N sentences, $words words, voices: ${VOICES[*]}$turns)"
echo "$header"; echo "$rule"
printf '%s\n' "${rows[@]}"
