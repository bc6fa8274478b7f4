// A second pass over the word records of one utterance: the best path
// through the word lattice they form, with the full n-gram LM at a
// language weight of its own (pocketsphinx's -bestpath pass, at its
// -bestpathlw).
//
// Every word record the search made (token_passing.h) is a word exit: the
// word, the frame boundary its label was passed at (its end), the boundary
// its predecessor's was passed at (its start) and the acoustic cost of the
// frames between, which the searcher keeps apart from the rest of the path
// cost (WordRecord::acoustic). Records with the same (word, start, end) are
// one lattice node with the lowest of their acoustic costs. A node may
// follow every node that ends where it starts, whatever word that is; the
// acoustic cost of a node is taken as the same whatever precedes it, which
// is the lattice's approximation (the path that made the record had one
// predecessor and one cross-word context; pocketsphinx's back-pointer table
// makes the same one).
//
// A path from boundary 0 to one of the utterance's end nodes costs
//   sum over its nodes of  acoustic + language
// with language = language_weight * -ln P_full(word | the previous N - 1
// non-filler words, <s> first) - ln(word_insertion_penalty) for a word,
// -ln(silence_prob) for <sil> and -ln(filler_prob) for other fillers
// (transparent to the history: the graph's n-gram filler costs, unscaled),
// plus at the end the acoustic cost of the end token's frames after its
// last record and language_weight * -ln P(</s> | history). The graph's
// transition and pronunciation costs are left out: a node's cost is what
// the records can give apart from the graph's weights, which determinisation
// moves between words (docs/benchmarks.md, "Where pocketsphinx_batch's lead
// on the lost rows comes from").
//
// The search is a dynamic programme over (node, LM history) in the order of
// start boundaries. At each boundary the paths arriving there are kept
// best per history, at most max_histories of them (the cheapest), so the
// work is bounded by nodes x max_histories LM lookups however large the
// lattice; nodes from which no end node can be reached are dropped first.
// The ends' own record chains are paths of the lattice; the cheapest of
// them bounds the best total from above, and with a lower bound on the
// cost from each boundary to an end (acoustic and fixed costs, the LM's
// part taken as 0), paths that cannot beat it are dropped as they come.
// That changes no result: if the history bound has dropped every path
// that cheap, the programme runs again without the upper bound.
#pragma once

#include <cstdint>
#include <vector>

#include "common/search/lattice_options.h"
#include "common/search/token_passing.h"

namespace gpuspeech {

class NgramModel;


// One word of the lattice's best path.
struct LatticeWord {
  int32_t word = 0;   // graph word id
  int32_t start = 0;  // boundary the word starts at (its first frame)
  int32_t end = 0;    // boundary its label was passed at (last frame + 1)
  float acoustic = 0.0f;
};

// An end of the utterance: the last record of a token the result may end
// in, and the acoustic cost of that token's frames after the record.
struct LatticeEnd {
  int32_t record = -1;
  float tail_acoustic = 0.0f;
};

struct LatticePath {
  std::vector<LatticeWord> words;  // fillers included, in time order
  double cost = 0.0;               // acoustic + language, as above
  bool found = false;              // false: no end is reachable from boundary 0
  int64_t nodes = 0;               // distinct (word, start, end) in the records
  int64_t nodes_used = 0;          // of them, those an end can be reached from
};

// The best path through the lattice of `records` ending in one of `ends`.
// graph_words: the graph's word spellings; word_is_filler its filler mask;
// full_of_graph: graph word -> the LM's id (LmRescorer::full_of_graph(),
// -1 for fillers). The LM's order must be 3 or less (std::invalid_argument).
LatticePath lattice_best_path(const WordRecordStore& records, const std::vector<LatticeEnd>& ends,
                              const NgramModel& lm, const std::vector<int>& full_of_graph,
                              const std::vector<std::string>& graph_words,
                              const std::vector<uint8_t>& word_is_filler,
                              const LatticeOptions& options);

}  // namespace gpuspeech
