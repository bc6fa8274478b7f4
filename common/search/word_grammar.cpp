#include "common/search/word_grammar.h"

#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include "common/model/word_graph.h"

namespace gpuspeech {

int32_t WordGrammar::word_id(const std::string& spelling) {
  // `words` may also have been filled directly: index what is new first.
  for (; indexed_ < words.size(); ++indexed_)
    word_index_.emplace(words[indexed_], static_cast<int32_t>(indexed_));
  auto it = word_index_.find(spelling);
  if (it != word_index_.end()) return it->second;
  words.push_back(spelling);
  word_index_.emplace(spelling, static_cast<int32_t>(words.size() - 1));
  indexed_ = words.size();
  return static_cast<int32_t>(words.size() - 1);
}

std::vector<std::string> WordGrammar::used_words() const {
  std::vector<std::string> out;
  std::vector<char> seen(words.size(), 0);
  for (const Arc& a : arcs) {
    if (a.word == kEpsilon || a.word < 0 || static_cast<size_t>(a.word) >= words.size()) continue;
    if (!seen[a.word]) {
      seen[a.word] = 1;
      out.push_back(words[a.word]);
    }
  }
  return out;
}

void WordGrammar::validate() const {
  const std::string where = source.empty() ? std::string("grammar") : source;
  auto bad = [&](const std::string& why) { throw std::invalid_argument(where + ": " + why); };
  if (num_states < 1) bad("no states");
  if (static_cast<int32_t>(final_cost.size()) != num_states) bad("final costs do not match the states");
  if (start < 0 || start >= num_states) bad("start state out of range");
  for (size_t i = 0; i < arcs.size(); ++i) {
    const Arc& a = arcs[i];
    if (a.from < 0 || a.from >= num_states || a.to < 0 || a.to >= num_states)
      bad("transition " + std::to_string(i) + " has a state out of range");
    if (a.word != kEpsilon && (a.word < 0 || static_cast<size_t>(a.word) >= words.size()))
      bad("transition " + std::to_string(i) + " has a word out of range");
    if (std::isnan(a.cost) || a.cost == -std::numeric_limits<float>::infinity())
      bad("transition " + std::to_string(i) + " has an invalid cost");
  }
  for (float f : final_cost)
    if (std::isnan(f) || f == -std::numeric_limits<float>::infinity()) bad("invalid final cost");
}

WordGrammar WordGrammar::from(const WordGraph& g) {
  g.validate();
  WordGrammar w;
  w.num_states = g.num_states;
  w.start = g.start_state;
  w.words = g.words;
  w.source = g.source;
  w.final_cost.assign(static_cast<size_t>(g.num_states), kNotFinal);
  if (g.num_states > 0) w.final_cost[g.final_state] = 0.0f;
  w.arcs.reserve(g.arcs.size());
  for (const WordArc& a : g.arcs)
    w.arcs.push_back({a.from, a.to, a.word < 0 ? kEpsilon : a.word, -a.log_prob});
  return w;
}

}  // namespace gpuspeech
