// A finite-state grammar over words: what a Sphinx FSG file holds (fsg.h)
// and what a JSGF grammar compiles to (jsgf.h). States are 0..num_states-1;
// an arc carries one word or nothing (epsilon) and a natural-log weight;
// sentences are the word strings of paths from the start state to the
// final state. Weights are not normalised: an FSG file's probabilities and
// a JSGF grammar's /weights/ are taken as given, as pocketsphinx does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuspeech {

struct WordArc {
  int from = 0;
  int to = 0;
  int word = -1;          // index into WordGraph::words, or kEpsilon
  float log_prob = 0.0f;  // natural log
};

class WordGraph {
 public:
  static constexpr int kEpsilon = -1;

  std::string name;    // FSG_BEGIN name or JSGF rule name
  std::string source;  // the file it came from, for messages
  int num_states = 0;
  int start_state = 0;
  int final_state = 0;
  std::vector<std::string> words;  // vocabulary, first-use order
  std::vector<WordArc> arcs;       // in the order they were added

  // Index of `word` in `words`, adding it if new.
  int intern_word(std::string_view word);
  // Index of `word`, or -1.
  int find_word(std::string_view word) const;
  int add_state() { return num_states++; }
  void add_arc(int from, int to, int word, float log_prob);

  // Throws std::logic_error if a state or word index is out of range.
  void validate() const;

  // True if `sentence` is the word string of some start-to-final path.
  bool accepts(const std::vector<std::string>& sentence) const;

  // The highest total log_prob over the paths that say `sentence`; -infinity
  // if none does. (Epsilon cycles of positive weight are followed at most
  // num_states times.)
  double best_log_prob(const std::vector<std::string>& sentence) const;

  // Every distinct accepted sentence of at most `max_words` words, sorted,
  // stopping (and setting *complete to false) after `max_sentences`.
  std::vector<std::vector<std::string>> sentences(size_t max_words, size_t max_sentences,
                                                  bool* complete = nullptr) const;

  // Words that occur on some arc (not merely interned), in `words` order.
  std::vector<std::string> used_words() const;

 private:
  mutable std::unordered_map<std::string, int> word_index_;  // rebuilt if `words` changed
};

}  // namespace gpuspeech
