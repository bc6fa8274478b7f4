#include "vocabulary_check.h"

#include <unordered_set>

#include "model_error.h"

namespace gpuspeech {

namespace {

std::string dictionary_name(const Dictionary& d) {
  if (d.files().empty()) return "(built in code)";
  std::string s;
  for (const std::string& f : d.files()) s += (s.empty() ? "" : " + ") + f;
  return s;
}

[[noreturn]] void report(const std::string& source, const std::vector<std::string>& missing,
                         const Dictionary& d) {
  const size_t shown = std::min<size_t>(missing.size(), 20);
  std::string msg = source + ": " + std::to_string(missing.size()) +
                    (missing.size() == 1 ? " word is" : " words are") +
                    " not in the dictionary " + dictionary_name(d) + ":";
  for (size_t i = 0; i < shown; ++i) msg += " " + missing[i];
  if (shown < missing.size()) msg += " ... (" + std::to_string(missing.size() - shown) + " more)";
  throw ModelError(msg);
}

}  // namespace

std::vector<std::string> missing_words(const std::vector<std::string>& words,
                                       const Dictionary& dictionary) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const std::string& w : words)
    if (!dictionary.contains(w) && seen.insert(w).second) out.push_back(w);
  return out;
}

void check_words(const WordGraph& grammar, const Dictionary& dictionary) {
  const std::vector<std::string> missing = missing_words(grammar.used_words(), dictionary);
  if (!missing.empty()) report(grammar.source, missing, dictionary);
}

void check_words(const KeyphraseList& phrases, const Dictionary& dictionary) {
  std::vector<std::string> words;
  for (const Keyphrase& k : phrases.phrases)
    words.insert(words.end(), k.words.begin(), k.words.end());
  const std::vector<std::string> missing = missing_words(words, dictionary);
  if (!missing.empty()) report(phrases.source, missing, dictionary);
}

std::vector<std::string> lm_words_missing_from(const NgramModel& lm,
                                               const Dictionary& dictionary) {
  std::vector<std::string> out;
  for (const std::string& w : lm.vocabulary()) {
    if (w == "<s>" || w == "</s>" || w == "<unk>" || w == "<UNK>") continue;
    if (!dictionary.contains(w)) out.push_back(w);
  }
  return out;
}

}  // namespace gpuspeech
