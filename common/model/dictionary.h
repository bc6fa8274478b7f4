// Pronunciation dictionaries in the CMU / pocketsphinx format, main and
// filler ("noise") dictionaries alike:
//
//   word        PH1 PH2 ...        one pronunciation per line
//   word(2)     PH1 PH3 ...        an alternate pronunciation of "word"
//   ;; comment  / ## comment       lines starting so are skipped
//
// Fields are separated by any whitespace; blank lines are skipped. As in
// pocketsphinx, an alternate's base word must come earlier, words and phones
// compare case-sensitively unless DictionaryOptions::case_sensitive is off
// (pocketsphinx -dictcase), and a word defined twice keeps its first
// definition (the second is reported in warnings()). Unlike pocketsphinx,
// which logs and skips them, a line with a word but no phones and an
// alternate without its base word are errors unless skip_bad_entries is set.
//
// Words in a filler dictionary are fillers (noise and silence words the
// decoder may insert anywhere), except the sentence markers <s> and </s>,
// which pocketsphinx also keeps out of that class.
//
// Every error is a ModelError "FILE:LINE: reason".
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuspeech {

struct DictionaryOptions {
  // pocketsphinx's default; false folds ASCII case for words and phones.
  bool case_sensitive = true;
  // Skip (with a warning) entries pocketsphinx would skip, instead of failing.
  bool skip_bad_entries = false;
};

struct Pronunciation {
  int word = -1;             // base word id
  std::string variant;       // "" for the base entry, "2" for "word(2)"
  std::vector<int> phones;   // indices into Dictionary::phone_names()
  int file = -1;             // index into Dictionary::files()
  long line = 0;             // 1-based line in that file (0: added by code)
};

class Dictionary {
 public:
  static constexpr int kNoWord = -1;

  explicit Dictionary(DictionaryOptions options = {});

  // A main dictionary and optionally a filler dictionary (pocketsphinx -dict
  // and -fdict), then the sentence markers and <sil> where missing, with
  // `silence_phone` as their pronunciation (see add_sentence_markers).
  static Dictionary load(const std::string& dict_path, const std::string& filler_path = "",
                         DictionaryOptions options = {},
                         const std::string& silence_phone = "SIL");

  // Adds every entry of a file (or of `text`, with `name` standing for the
  // file in messages). Throws ModelError on a malformed entry.
  void add_file(const std::string& path, bool filler);
  void add_text(std::string_view text, const std::string& name, bool filler);

  // Adds one pronunciation from code; "word(2)" adds an alternate. Returns
  // the pronunciation id. Throws std::invalid_argument on empty phones.
  int add_pronunciation(const std::string& word, const std::vector<std::string>& phones,
                        bool filler);

  // Adds <s>, </s> (not fillers) and <sil> (a filler) pronounced
  // `silence_phone`, each only where absent, as pocketsphinx does.
  void add_sentence_markers(const std::string& silence_phone = "SIL");

  int num_words() const { return static_cast<int>(words_.size()); }
  int num_pronunciations() const { return static_cast<int>(prons_.size()); }

  // Base word id of `word` (an alternate spelling "word(2)" finds its base),
  // or kNoWord.
  int word_id(std::string_view word) const;
  bool contains(std::string_view word) const { return word_id(word) != kNoWord; }
  const std::string& word(int id) const { return words_.at(id).text; }
  bool is_filler(int id) const { return words_.at(id).filler; }
  // Pronunciation ids of a word, the base entry first, then alternates in
  // file order.
  const std::vector<int>& pronunciations(int id) const { return words_.at(id).prons; }
  const Pronunciation& pronunciation(int pron_id) const { return prons_.at(pron_id); }
  // The phone names of one pronunciation.
  std::vector<std::string> phones(int pron_id) const;

  // Every distinct phone name used, as first written.
  const std::vector<std::string>& phone_names() const { return phone_names_; }
  const std::vector<std::string>& files() const { return files_; }
  // "FILE:LINE: what" for each tolerated oddity (duplicates, skipped entries).
  const std::vector<std::string>& warnings() const { return warnings_; }
  const DictionaryOptions& options() const { return options_; }

  // Checks every pronunciation against the acoustic model's phones. Throws
  // ModelError "FILE:LINE: word 'W' uses phone 'P', which the acoustic model
  // does not have" for the first offender, with the count of the others.
  void validate_phones(const std::function<bool(const std::string&)>& has_phone) const;
  // The same against a set of names (compared as options().case_sensitive says).
  void validate_phones(const std::vector<std::string>& phone_set) const;

 private:
  struct Word {
    std::string text;
    bool filler = false;
    std::vector<int> prons;
  };

  std::string key(std::string_view word) const;
  int intern_phone(std::string_view name);
  // Interns the phones only if the entry is kept, so that phone_names()
  // holds only phones some pronunciation uses.
  int add_entry(std::string_view spelling, const std::vector<std::string_view>& phones,
                bool filler, int file, long line);
  std::string where(int file, long line) const;

  DictionaryOptions options_;
  std::vector<Word> words_;
  std::vector<Pronunciation> prons_;
  // Lookup key (folded when case-insensitive) of every spelling, base words
  // and alternates alike -> pronunciation id (whose `word` is the base).
  std::unordered_map<std::string, int> spelling_index_;
  std::vector<std::string> phone_names_;
  // Phone lookup by view, the keys owned by phone_keys_ (a deque, so they
  // never move): 10^6 phone fields must not each build a string.
  std::deque<std::string> phone_keys_;
  std::unordered_map<std::string_view, int> phone_index_;
  std::vector<std::string> files_;
  std::vector<std::string> warnings_;
};

}  // namespace gpuspeech
