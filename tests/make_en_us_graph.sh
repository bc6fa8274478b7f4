#!/bin/sh
# Compiles the en-us graph (the default model, dictionary and LM, pruned for
# the graph) into the WER tests' shared cache, as the accuracy suite's
# first test: the compilation takes minutes, and the WER tests that start
# later then only read it (a test that starts while it runs waits for it:
# the cache's compile lock, common/search/graph_cache.h). Fails if the
# graph cannot be compiled or stored.
#
# Usage: make_en_us_graph.sh PATH/TO/gpuspeech-mkgraph CACHE_DIR
# GPUSPEECH_MODEL_DIR overrides where pocketsphinx-en-us is.
set -u
MKGRAPH=$1
CACHE=$2
M=${GPUSPEECH_MODEL_DIR:-/usr/share/pocketsphinx/model}/en-us
"$MKGRAPH" --hmm "$M/en-us" --dict "$M/cmudict-en-us.dict" --lm "$M/en-us.lm.bin" --cache "$CACHE" ||
  { echo "FAIL gpuspeech-mkgraph exited with status $?"; exit 1; }
ls "$CACHE"/graph-*.gsg >/dev/null 2>&1 || { echo "FAIL no graph stored in $CACHE"; exit 1; }
echo "ok   en-us graph in $CACHE"
