#!/bin/sh
# Regenerates the FSGs sphinx_jsgf2fsg (Debian's sphinxbase-utils) compiles
# from the JSGF grammars that tests/test_grammar.cpp compiles too: one file
# per public rule, GRAMMAR.RULE.fsg. Needs pocketsphinx-testdata.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/pocketsphinx/test/data

compile() {  # grammar file, rule names...
  gram=$1
  shift
  name=$(basename "$gram" .gram)
  for rule in "$@"; do
    sphinx_jsgf2fsg -jsgf "$gram" -toprule "$name.$rule" -fsg "$here/$name.$rule.fsg" \
      >/dev/null 2>&1
  done
}
compile "$data/goforward.gram" move move2
compile "$data/cards/cards.gram" cards
compile "$here/features.gram" command digits counted nested path ping qualified
compile "$here/sharing.gram" colours
