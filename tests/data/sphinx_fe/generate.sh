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
sox -t raw -r 16000 -e signed -b 16 -c 1 "$data/goforward.raw" \
    -t raw "$here/goforward-8k.raw" rate -h 8000
# sphinx_fe's -argfile overrides its command line, so each variant has its
# own params file.
fe -argfile "$here/feat-8k.params" -raw yes -i "$here/goforward-8k.raw" \
   -o "$here/goforward-8k.mfc"
# The legacy transform without lifter, the other Sphinx cepstral path.
fe -argfile "$here/feat-legacy.params" -raw yes -i "$data/goforward.raw" \
   -o "$here/goforward-legacy.mfc"
