#include "word_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace gpuspeech {

int WordGraph::find_word(std::string_view word) const {
  if (word_index_.size() != words.size()) {
    // `words` was filled directly: index it now.
    word_index_.clear();
    for (size_t i = 0; i < words.size(); ++i) word_index_.emplace(words[i], static_cast<int>(i));
  }
  auto it = word_index_.find(std::string(word));
  return it == word_index_.end() ? -1 : it->second;
}

int WordGraph::intern_word(std::string_view word) {
  const int found = find_word(word);
  if (found >= 0) return found;
  const int id = static_cast<int>(words.size());
  words.emplace_back(word);
  word_index_.emplace(std::string(word), id);
  return id;
}

void WordGraph::add_arc(int from, int to, int word, float log_prob) {
  WordArc a;
  a.from = from;
  a.to = to;
  a.word = word;
  a.log_prob = log_prob;
  arcs.push_back(a);
}

void WordGraph::validate() const {
  auto bad = [&](const std::string& why) {
    throw std::logic_error("WordGraph " + name + " (" + source + "): " + why);
  };
  if (num_states < 1) bad("no states");
  if (start_state < 0 || start_state >= num_states) bad("start state out of range");
  if (final_state < 0 || final_state >= num_states) bad("final state out of range");
  for (const WordArc& a : arcs) {
    if (a.from < 0 || a.from >= num_states || a.to < 0 || a.to >= num_states)
      bad("arc state out of range");
    if (a.word != kEpsilon && (a.word < 0 || a.word >= static_cast<int>(words.size())))
      bad("arc word out of range");
  }
}

namespace {

using StateSet = std::vector<int>;  // sorted, unique

struct Adjacency {
  std::vector<std::vector<int>> eps;                        // state -> targets
  std::vector<std::vector<std::pair<int, int>>> labelled;  // state -> (word, target)
};

Adjacency adjacency(const WordGraph& g) {
  Adjacency adj;
  adj.eps.resize(g.num_states);
  adj.labelled.resize(g.num_states);
  for (const WordArc& a : g.arcs) {
    if (a.word == WordGraph::kEpsilon)
      adj.eps[a.from].push_back(a.to);
    else
      adj.labelled[a.from].emplace_back(a.word, a.to);
  }
  return adj;
}

StateSet closure(const Adjacency& adj, StateSet s) {
  std::vector<char> seen(adj.eps.size(), 0);
  for (int x : s) seen[x] = 1;
  for (size_t i = 0; i < s.size(); ++i)
    for (int t : adj.eps[s[i]])
      if (!seen[t]) {
        seen[t] = 1;
        s.push_back(t);
      }
  std::sort(s.begin(), s.end());
  return s;
}

}  // namespace

bool WordGraph::accepts(const std::vector<std::string>& sentence) const {
  validate();
  const Adjacency adj = adjacency(*this);
  StateSet cur = closure(adj, {start_state});
  for (const std::string& w : sentence) {
    const int id = find_word(w);
    if (id < 0) return false;
    StateSet next;
    for (int s : cur)
      for (const auto& [word, to] : adj.labelled[s])
        if (word == id) next.push_back(to);
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (next.empty()) return false;
    cur = closure(adj, std::move(next));
  }
  return std::binary_search(cur.begin(), cur.end(), final_state);
}

namespace {

// Relaxes `score` along epsilon arcs until nothing improves (at most
// num_states rounds, which settles every path without a positive cycle).
void epsilon_relax(const WordGraph& g, std::vector<double>& score) {
  for (int round = 0; round < g.num_states; ++round) {
    bool changed = false;
    for (const WordArc& a : g.arcs) {
      if (a.word != WordGraph::kEpsilon || score[a.from] == -HUGE_VAL) continue;
      const double s = score[a.from] + a.log_prob;
      if (s > score[a.to] + 1e-12) {
        score[a.to] = s;
        changed = true;
      }
    }
    if (!changed) return;
  }
}

}  // namespace

double WordGraph::best_log_prob(const std::vector<std::string>& sentence) const {
  validate();
  std::vector<double> score(num_states, -HUGE_VAL);
  score[start_state] = 0.0;
  epsilon_relax(*this, score);
  for (const std::string& w : sentence) {
    const int id = find_word(w);
    if (id < 0) return -HUGE_VAL;
    std::vector<double> next(num_states, -HUGE_VAL);
    for (const WordArc& a : arcs)
      if (a.word == id && score[a.from] != -HUGE_VAL)
        next[a.to] = std::max(next[a.to], score[a.from] + a.log_prob);
    score.swap(next);
    epsilon_relax(*this, score);
  }
  return score[final_state];
}

std::vector<std::vector<std::string>> WordGraph::sentences(size_t max_words,
                                                           size_t max_sentences,
                                                           bool* complete) const {
  validate();
  const Adjacency adj = adjacency(*this);
  std::vector<std::vector<std::string>> out;
  bool done = true;
  std::vector<std::string> prefix;
  // Depth-first over the subset construction, children in word order: each
  // accepted string is met exactly once.
  auto expand = [&](const StateSet& set, auto& self) -> void {
    if (!done) return;
    if (std::binary_search(set.begin(), set.end(), final_state)) {
      if (out.size() >= max_sentences) {
        done = false;
        return;
      }
      out.push_back(prefix);
    }
    if (prefix.size() >= max_words) return;
    std::map<std::string, StateSet> next;  // ordered by spelling
    for (int s : set)
      for (const auto& [word, to] : adj.labelled[s]) next[words[word]].push_back(to);
    for (auto& [w, targets] : next) {
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      prefix.push_back(w);
      self(closure(adj, targets), self);
      prefix.pop_back();
      if (!done) return;
    }
  };
  expand(closure(adj, {start_state}), expand);
  std::sort(out.begin(), out.end());
  if (complete) *complete = done;
  return out;
}

std::vector<std::string> WordGraph::used_words() const {
  std::vector<char> used(words.size(), 0);
  for (const WordArc& a : arcs)
    if (a.word >= 0 && a.word < static_cast<int>(words.size())) used[a.word] = 1;
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i)
    if (used[i]) out.push_back(words[i]);
  return out;
}

}  // namespace gpuspeech
