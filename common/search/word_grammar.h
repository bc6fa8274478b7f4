// A weighted word-level finite-state grammar: the "G" a search graph is
// built from when decoding with a grammar (JSGF, Sphinx FSG, keyphrases)
// rather than an n-gram model. Unlike WordGraph (common/model/word_graph.h,
// what the grammar readers produce) any state may be final, with a cost.
// States and arcs are numbered densely; an arc with word kEpsilon is a null
// transition. Costs are minus natural-log probabilities, before the
// language weight is applied.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpuspeech {

class WordGraph;

struct WordGrammar {
  static constexpr int32_t kEpsilon = -1;
  static constexpr float kNotFinal = std::numeric_limits<float>::infinity();

  struct Arc {
    int32_t from = 0;
    int32_t to = 0;
    int32_t word = kEpsilon;  // index into `words`, or kEpsilon
    float cost = 0.0f;        // -ln probability; +infinity: never taken
  };

  int32_t num_states = 0;
  int32_t start = 0;
  std::vector<Arc> arcs;
  std::vector<float> final_cost;   // per state; kNotFinal where the utterance cannot end
  std::vector<std::string> words;  // word id -> spelling
  std::string source;              // the file it came from, for messages

  int32_t add_state() {
    final_cost.push_back(kNotFinal);
    return num_states++;
  }
  // Interns a word spelling; returns its id.
  int32_t word_id(const std::string& spelling);
  int32_t add_arc(int32_t from, int32_t to, int32_t word, float cost) {
    arcs.push_back({from, to, word, cost});
    return static_cast<int32_t>(arcs.size() - 1);
  }
  // Words on some arc, each once, in first-use order.
  std::vector<std::string> used_words() const;

  // Throws std::invalid_argument "SOURCE: reason" on out-of-range states or
  // words, NaN or negative-infinity costs, or a missing start state.
  void validate() const;

  // A WordGraph's language and weights: log probabilities become costs, its
  // final state gets cost 0.
  static WordGrammar from(const WordGraph& graph);

 private:
  std::unordered_map<std::string, int32_t> word_index_;  // filled by word_id()
  size_t indexed_ = 0;                                  // words[0, indexed_) are in it
};

}  // namespace gpuspeech
