#!/bin/sh
# Regenerates the sphinx_fe reference cepstra used by test_sphinx_reference.
# Needs Debian's sphinxbase-utils, pocketsphinx-en-us and pocketsphinx-testdata.
# sphinx_fe runs with the en-us model's feat.params, and with its
# noise-removal and silence-removal stages off (-remove_noise no
# -remove_silence no): those are decoder-side front-end options, not MFCC.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/pocketsphinx/test/data
params=/usr/share/pocketsphinx/model/en-us/en-us/feat.params
fe() { sphinx_fe -remove_noise no -remove_silence no "$@" >/dev/null 2>&1; }

fe -argfile "$params" -raw yes -i "$data/goforward.raw" -o "$here/goforward.mfc"
for f in "$data"/librivox/*.wav; do
  b=$(basename "$f" .wav)
  fe -argfile "$params" -mswav yes -i "$f" -o "$here/$b.mfc"
done
# 8 kHz: the goforward recording resampled with sox, and an 8 kHz
# configuration (the values of CMU's 8 kHz models: 31 filters, 200-3500 Hz).
sox -D -t raw -r 16000 -e signed -b 16 -c 1 "$data/goforward.raw" \
    -t raw "$here/goforward-8k.raw" rate -h 8000
# sphinx_fe's -argfile overrides its command line, so each variant has its
# own params file.
fe -argfile "$here/feat-8k.params" -raw yes -i "$here/goforward-8k.raw" \
   -o "$here/goforward-8k.mfc"
# The legacy transform without lifter, the other Sphinx cepstral path.
fe -argfile "$here/feat-legacy.params" -raw yes -i "$data/goforward.raw" \
   -o "$here/goforward-legacy.mfc"

# Sphinx's defaults, noise removal and silence removal on (-remove_noise yes
# -remove_silence yes, -vad_threshold 2.0 -vad_prespeech 20
# -vad_postspeech 50 -vad_startspeech 10): the front end pocketsphinx decodes
# with. Compared by test_sphinx_noise; goforward's result is also the
# goforward.mfc that pocketsphinx-testdata ships.
fe_default() { sphinx_fe "$@" >/dev/null 2>&1; }
fe_default -argfile "$params" -raw yes -i "$data/goforward.raw" -o "$here/goforward.nr.mfc"
cmp "$here/goforward.nr.mfc" "$data/goforward.mfc"
for f in "$data"/librivox/*.wav; do
  b=$(basename "$f" .wav)
  fe_default -argfile "$params" -mswav yes -i "$f" -o "$here/$b.nr.mfc"
done
# Noise removal alone (every frame kept), and a non-default VAD.
fe_default -argfile "$here/feat-noise-only.params" -raw yes -i "$data/goforward.raw" \
   -o "$here/goforward-noise-only.mfc"
fe_default -argfile "$here/feat-vad.params" -raw yes -i "$data/goforward.raw" \
   -o "$here/goforward-vad.mfc"
# goforward between stretches of faint noise and digital silence, so that
# the VAD starts and ends speech several times (goforward alone is speech
# from its first frame). The noise is a fixed LCG sequence that
# test_sphinx_noise.cpp rebuilds; only the cepstra are stored.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$data/goforward.raw" "$tmp/padded.raw" <<'PY'
import struct, sys
gf = open(sys.argv[1], "rb").read()
state = 12345
def noise(n):
    global state
    out = bytearray()
    for _ in range(n):
        state = (1103515245 * state + 12345) & 0x7fffffff
        out += struct.pack("<h", ((state >> 16) % 61) - 30)
    return bytes(out)
audio = noise(19200) + gf + bytes(2 * 4800) + noise(11200) + gf[:2 * 24000]
open(sys.argv[2], "wb").write(audio)
PY
fe_default -argfile "$params" -raw yes -i "$tmp/padded.raw" -o "$here/goforward-padded.nr.mfc"

# The tidigits model's front end (its feat.params with -dither no):
# -round_filters no, -remove_dc yes, 20 filters from 1 to 4000 Hz, on the
# one raw recording pocketsphinx-testdata ships for it. Compared by
# test_tidigits.
fe -argfile "$here/feat-tidigits.params" -raw yes -i "$data/tidigits/dhd.2934z.raw" \
   -o "$here/dhd.2934z.mfc"
