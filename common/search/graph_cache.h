// Search graphs from files, compiled once: the graph for (acoustic model,
// dictionaries, grammar or LM, options) is looked up in a cache directory
// by a content hash of those files' bytes and the options, and compiled
// (then stored) only when absent. A large LM is pruned first when asked
// (lm_pruning.h); the pruned model is stored next to the graph for the
// word-end rescorer, as an n-gram image (ngram_image.h: read in tens of
// milliseconds, where its ARPA text took 0.6 s to parse).
//
// Cache entries: DIR/graph-KEY.gsg (SearchGraph::save) and, for pruned
// LMs, DIR/graph-KEY.pruned.lm (write_ngram_image). Caches written before
// images hold the pruned LM as ARPA text, DIR/graph-KEY.pruned.arpa: it is
// read then, and its image written beside it for the next start.
// KEY = graph_cache_key(); the graph's source_hash is KEY. Writes go to a
// temporary name and are renamed into place, so concurrent builders and
// readers never see half a file; and a compilation holds an advisory lock
// on DIR/graph-KEY.lock, so that processes that miss the cache together
// compile once (the others wait for it, then load the entry).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/search/graph_compiler.h"
#include "common/search/lm_pruning.h"
#include "common/search/search_graph.h"

namespace gpuspeech {

enum class GraphSourceKind { kNgram, kJsgf, kFsg };
const char* to_string(GraphSourceKind kind);

struct GraphSources {
  std::string model_dir;          // acoustic model directory (mdef, transition_matrices)
  std::string dictionary;         // pocketsphinx -dict
  std::string filler_dictionary;  // -fdict; "" = MODEL_DIR/noisedict if present
  GraphSourceKind kind = GraphSourceKind::kNgram;
  std::string grammar;            // the LM, JSGF or FSG file
  std::string jsgf_rule;          // "" = the first public rule

  // The filler dictionary actually used ("" if none).
  std::string filler_path() const;
};

struct GraphBuildOptions {
  GraphCompileOptions compile;
  LmPruneOptions prune;      // n-gram models only
  // With no pruning asked for in `prune`, an LM with more n-grams of order
  // >= 2 than this is pruned to `auto_prune` anyway (0: never): the default
  // en-us LM (3.7 M) could not be compiled whole in reasonable time and
  // memory. The rescorer applies the full LM at word ends.
  int64_t auto_prune_above = 2'500'000;
  LmPruneOptions auto_prune{2, 1'000'000};
  // "" = default_graph_cache_dir(); "-" = no cache (always compile).
  std::string cache_dir;
  bool rebuild = false;      // compile even if cached (and replace the entry)
  // On a cache hit of a graph whose n-gram LM was pruned, also read the
  // two LMs that word-end rescoring needs, the cached pruned LM and the
  // full one (the grammar), into GraphBuildResult::pruned_lm and full_lm,
  // each on a thread of its own while the graph loads: the three are most
  // of a cached start, and each is one core's work. Nothing is read when
  // the LM was not pruned, or on a miss (compiling dominates then).
  bool read_rescoring_lms = false;
};

struct GraphBuildResult {
  SearchGraph graph;
  bool from_cache = false;
  std::string cache_path;      // "" when not cached
  // The pruned LM in the cache, when the LM was pruned: an image, or ARPA
  // text in a cache written before images (read_cached_ngram_model reads
  // either).
  std::string pruned_lm_path;
  // The pruned LM itself, when it was pruned here, or on a cache hit with
  // GraphBuildOptions::read_rescoring_lms (otherwise read pruned_lm_path).
  std::shared_ptr<const NgramModel> pruned_lm;
  // The full LM, read on a cache hit with read_rescoring_lms when the LM
  // was pruned; null otherwise.
  std::shared_ptr<const NgramModel> full_lm;
  GraphCompileReport report;   // empty when from the cache
  LmPruneOptions prune;        // the pruning applied (none, asked for, or automatic)
  LmPruneReport prune_report;
  std::vector<std::string> log;  // what happened, one line each
};

// $GPUSPEECH_CACHE_DIR, else $XDG_CACHE_HOME/gpuspeech, else
// ~/.cache/gpuspeech; "" if none of these is set.
std::string default_graph_cache_dir();

// 32 hex digits: the hash of the cache format version, the kind, the JSGF
// rule, the options that change the graph (automatic pruning's too), and
// the bytes of mdef,
// transition_matrices, the dictionaries and the grammar/LM. Throws
// std::runtime_error "FILE: ..." if a file cannot be read.
std::string graph_cache_key(const GraphSources& sources, const GraphBuildOptions& options);

// Loads the graph from the cache, or compiles and caches it. Throws what
// the readers and the compiler throw (ModelError, GraphInputError, ...),
// and std::runtime_error when the graph is not cached and this build has
// no OpenFst. A damaged cache entry is compiled again (and logged).
GraphBuildResult build_search_graph(const GraphSources& sources, const GraphBuildOptions& options);

}  // namespace gpuspeech
