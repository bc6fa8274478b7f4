# The degraded speech of issue 15, made here from audio on this machine;
# sourced by noisy_wer.sh (utterances, pocketsphinx_batch) and live_wer.sh
# (long recordings, the pocketsphinx GStreamer element). Every file is the
# same on every run: flite is deterministic, and noise comes from one 120 s
# recording per colour made by `sox -R`, each file taking its own stretch.
#
# Needs W (the work directory) and HERE (tests/) set by the caller. Every
# sox call takes -R, so that its dither is repeatable too (without it the
# files differed run to run in their last bits).
#
# Conditions, applied to a clean 16 kHz 16-bit file:
#   clean      as synthesised
#   farfield   reverb 50 50 100, pink noise 20 dB below the speech, 0.4 s of
#              digital silence (zeros) before it (the issue's far-field set)
#   pink20 pink10 white20 white10 brown20 brown10
#              that noise colour at that SNR, 0.4 s of zeros before
#   phone      300-3400 Hz band at 8 kHz, resampled back to 16 kHz, white
#              noise at 20 dB, 0.4 s of zeros before
#   clipped    peaks normalised to -1 dBFS, then 12 dB more gain: every
#              sample beyond full scale clipped (as an overdriven input
#              gives it), 0.4 s of zeros before and after
#   gsm        the 8 kHz GSM 06.10 full-rate telephone codec (sox), back to
#              16 kHz, 0.4 s of zeros before and after
#   mulaw      G.711 mu-law at 8 kHz (sox), back to 16 kHz, 0.4 s of zeros
#              before and after (not in the default list)
#   opus16     Opus at 16 kb/s through GStreamer's opusenc (Ogg), decoded by
#              decodebin, 0.4 s of zeros before and after
#   mp3        MP3 at 32 kb/s CBR through GStreamer's lamemp3enc, decoded by
#              decodebin, 0.4 s of zeros before and after
# The zeros are added after decoding, so they stay exact digital silence.
# SNR is the ratio of the RMS of the clean file (with its pauses) to the
# RMS of the noise added. DEGRADED_CONDITIONS, set before this file is
# sourced, picks some of them (the scripts' tables then have those rows).
DEGRADED_CONDITIONS=${DEGRADED_CONDITIONS:-"clean farfield pink20 pink10 white20 white10 brown20 brown10 phone clipped gsm opus16 mp3"}

degraded_die() { echo "$(basename "$0"): $*" >&2; exit 1; }

# make_clean_set N VOICE...: the first N sentences of
# tests/data/fmllr_dev/sentences.txt, sentence i spoken by voice i mod the
# number of voices, as $W/clean/uttII-VOICE.wav; their ids in $W/fileids and
# the sclite reference in $W/ref.trn. A VOICE is a flite voice (slt, rms,
# awb, kal16, ...) or espeak-NAME, espeak-ng's voice NAME (espeak-en-us+f2:
# en-us with the female variant f2): flite has one female voice, espeak-ng
# many, of a formant synthesiser further from the model's speakers.
make_clean_set() {
  local n=$1 i=0 s v id
  shift
  local voices=("$@")
  mkdir -p "$W/clean" || degraded_die "cannot create $W/clean"
  : >"$W/fileids"; : >"$W/ref.trn"
  while read -r s && [ $i -lt "$n" ]; do
    v=${voices[$((i % ${#voices[@]}))]}
    i=$((i + 1)); id=$(printf 'utt%02d-%s' $i "$v")
    if [ ! -f "$W/clean/$id.wav" ]; then
      case $v in
        espeak-*) espeak-ng -v "${v#espeak-}" -w "$W/tmp.wav" "$s" ;;
        *) flite -voice "$v" -t "$s" -o "$W/tmp.wav" ;;
      esac &&
        sox -R -D "$W/tmp.wav" -r 16000 -b 16 -c 1 "$W/clean/$id.wav" ||
        degraded_die "synthesis (flite or espeak-ng) or sox failed for $id"
    fi
    echo "$id" >>"$W/fileids"
    echo "$s ($id)" >>"$W/ref.trn"
  done <"$HERE/data/fmllr_dev/sentences.txt"
}

# make_librivox_set DIR: the real speech of pocketsphinx-testdata's LibriVox
# directory DIR (fileids, transcription, 16 kHz WAVs) as the clean set:
# $W/clean/ID.wav (16-bit mono, as they are), $W/fileids and $W/ref.trn.
make_librivox_set() {
  local d=$1 id
  mkdir -p "$W/clean" || degraded_die "cannot create $W/clean"
  [ -r "$d/fileids" ] && [ -r "$d/transcription" ] || degraded_die "no fileids or transcription in $d"
  : >"$W/fileids"
  while read -r id; do
    [ -n "$id" ] || continue
    [ -f "$W/clean/$id.wav" ] || sox -R -D "$d/$id.wav" -r 16000 -b 16 -c 1 "$W/clean/$id.wav" ||
      degraded_die "sox failed for $id"
    echo "$id" >>"$W/fileids"
  done <"$d/fileids"
  cp "$d/transcription" "$W/ref.trn" || degraded_die "cannot copy $d/transcription"
}

degraded_rms() { sox "$1" -n stat 2>&1 | awk '/RMS +amplitude/ { print $3 }'; }

# make_noises: 120 s of pink, white and brown noise in $W/noise.
make_noises() {
  local c
  mkdir -p "$W/noise" || degraded_die "cannot create $W/noise"
  for c in pink white brown; do
    [ -f "$W/noise/$c.wav" ] ||
      sox -R -n -r 16000 -b 16 -c 1 "$W/noise/$c.wav" synth 120 ${c}noise vol 0.3 ||
      degraded_die "sox could not make $c noise"
  done
}

# add_noise IN OUT COLOUR SNR_DB OFFSET_S: noise from OFFSET_S in its
# recording, at the SNR, then 0.4 s of zeros before. A file longer than the
# noise recording's remainder gets what is left of it (sox trim).
add_noise() {
  local in=$1 out=$2 colour=$3 snr=$4 offset=$5 dur s_rms n_rms gain
  dur=$(soxi -D "$in")
  sox -R "$W/noise/$colour.wav" "$W/tmp-noise.wav" trim "$offset" "$dur" || return 1
  s_rms=$(degraded_rms "$in"); n_rms=$(degraded_rms "$W/tmp-noise.wav")
  gain=$(awk -v s="$s_rms" -v n="$n_rms" -v snr="$snr" 'BEGIN { print s / (n * 10 ^ (snr / 20)) }')
  sox -R -m -v 1 "$in" -v "$gain" "$W/tmp-noise.wav" -b 16 "$W/tmp-mix.wav" &&
    sox -R "$W/tmp-mix.wav" "$out" pad 0.4 0
}

# degraded_codec IN OUT EXT ENCODER: IN through a GStreamer ENCODER (a
# gst-launch fragment ending in the encoded stream) into $W/tmp.EXT, decoded
# again by decodebin to 16 kHz 16-bit mono, then 0.4 s of zeros before and
# after.
degraded_codec() {
  local in=$1 out=$2 ext=$3 encoder=$4
  command -v gst-launch-1.0 >/dev/null || degraded_die "missing gst-launch-1.0 (for the codec conditions)"
  # shellcheck disable=SC2086 # the encoder fragment is split into elements on purpose
  gst-launch-1.0 -q filesrc location="$in" ! wavparse ! audioconvert ! audioresample ! $encoder ! \
    filesink location="$W/tmp.$ext" >/dev/null &&
    gst-launch-1.0 -q filesrc location="$W/tmp.$ext" ! decodebin ! audioconvert ! audioresample ! \
      audio/x-raw,format=S16LE,rate=16000,channels=1 ! wavenc ! filesink location="$W/tmp-dec.wav" >/dev/null &&
    sox -R "$W/tmp-dec.wav" -b 16 "$out" pad 0.4 0.4
}

# degrade COND IN OUT OFFSET_S: IN under condition COND (not clean) as OUT.
degrade() {
  local cond=$1 in=$2 out=$3 offset=$4
  case $cond in
    farfield)
      sox -R "$in" "$W/tmp-rev.wav" reverb 50 50 100 &&
        add_noise "$W/tmp-rev.wav" "$out" pink 20 "$offset" ;;
    phone)
      sox -R "$in" "$W/tmp-8k.wav" sinc 300-3400 rate 8000 &&
        sox -R "$W/tmp-8k.wav" -b 16 "$W/tmp-tel.wav" rate 16000 &&
        add_noise "$W/tmp-tel.wav" "$out" white 20 "$offset" ;;
    clipped)
      sox -R "$in" "$W/tmp-norm.wav" gain -n -1 &&
        sox -R "$W/tmp-norm.wav" "$W/tmp-clip.wav" vol 12 dB 2>/dev/null &&
        sox -R "$W/tmp-clip.wav" "$out" pad 0.4 0.4 ;;
    gsm)
      sox -R "$in" -r 8000 "$W/tmp.gsm" &&
        sox -R "$W/tmp.gsm" -r 16000 -b 16 "$W/tmp-gsm.wav" &&
        sox -R "$W/tmp-gsm.wav" "$out" pad 0.4 0.4 ;;
    mulaw)
      sox -R "$in" -r 8000 -e mu-law "$W/tmp-ulaw.wav" &&
        sox -R "$W/tmp-ulaw.wav" -r 16000 -e signed -b 16 "$W/tmp-ulaw16.wav" &&
        sox -R "$W/tmp-ulaw16.wav" "$out" pad 0.4 0.4 ;;
    opus16) degraded_codec "$in" "$out" ogg "opusenc bitrate=16000 ! oggmux" ;;
    mp3) degraded_codec "$in" "$out" mp3 "lamemp3enc target=bitrate bitrate=32 cbr=true" ;;
    *) add_noise "$in" "$out" "${cond%[0-9][0-9]}" "${cond#"${cond%[0-9][0-9]}"}" "$offset" ;;
  esac
}

# degrade_all SRC DEST STEP WRAP NAME...: SRC/NAME.wav under every
# condition but clean as DEST/COND/NAME.wav (files already there are
# kept), the k-th name (from 1) taking its noise from (k * STEP) % WRAP s
# into the 120 s noise recordings (WRAP leaves room for the longest file).
degrade_all() {
  local src=$1 dest=$2 step=$3 wrap=$4 cond k name out
  shift 4
  for cond in $DEGRADED_CONDITIONS; do
    [ "$cond" = clean ] && continue
    mkdir -p "$dest/$cond" || degraded_die "cannot create $dest/$cond"
    k=0
    for name in "$@"; do
      k=$((k + 1))
      out="$dest/$cond/$name.wav"
      [ -f "$out" ] && continue
      degrade "$cond" "$src/$name.wav" "$out" "$(awk -v k=$k -v s="$step" -v w="$wrap" 'BEGIN { print (k * s) % w }')" ||
        degraded_die "could not make $out"
    done
  done
}
