#!/bin/sh
# Regenerates the reference outputs of Sphinx's own tools that
# tests/test_lm.cpp compares the language-model readers with. Needs Debian's
# sphinxbase-utils, pocketsphinx-en-us and pocketsphinx-testdata.
#
#   *.arpa      sphinx_lm_convert's ARPA text of the small binary models
#               (it asserts on the large en-us model, so that one has none)
#   *.lm_eval   sphinx_lm_eval's per-word scores (log base 1.0001, "log
#               P(word|history ) = score") of the sentences in *.sentences
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/pocketsphinx/test/data
model=/usr/share/pocketsphinx/model/en-us

sphinx_lm_convert -i "$data/turtle.lm.bin" -o "$here/turtle.arpa" >/dev/null 2>&1
sphinx_lm_convert -i "$data/tidigits/lm/tidigits.lm.bin" -o "$here/tidigits.arpa" >/dev/null 2>&1

lm_eval() {
  sphinx_lm_eval -lm "$1" -lsn "$2" -verbose yes 2>/dev/null | grep '^log P(' > "$3"
}
lm_eval "$data/turtle.lm.bin" "$here/turtle.sentences" "$here/turtle.lm_eval"
lm_eval "$model/en-us.lm.bin" "$here/en-us.sentences" "$here/en-us.lm_eval"
