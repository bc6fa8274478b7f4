#include "dictionary.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "byte_reader.h"  // read_model_file
#include "model_error.h"
#include "text_lines.h"

namespace gpuspeech {

namespace {

std::string fold_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Splits "word(2)" into "word" and "2" the way pocketsphinx does: the last
// character is ')' and a '(' follows at least one character of base word.
bool split_alternate(std::string_view spelling, std::string_view& base,
                     std::string_view& variant) {
  if (spelling.size() < 3 || spelling.back() != ')') return false;
  for (size_t i = spelling.size() - 2; i > 0; --i) {
    if (spelling[i] == '(') {
      base = spelling.substr(0, i);
      variant = spelling.substr(i + 1, spelling.size() - i - 2);
      return true;
    }
  }
  return false;
}

bool is_sentence_marker(std::string_view w) { return w == "<s>" || w == "</s>"; }

}  // namespace

Dictionary::Dictionary(DictionaryOptions options) : options_(options) {}

Dictionary Dictionary::load(const std::string& dict_path, const std::string& filler_path,
                            DictionaryOptions options, const std::string& silence_phone) {
  Dictionary d(options);
  d.add_file(dict_path, false);
  if (!filler_path.empty()) d.add_file(filler_path, true);
  d.add_sentence_markers(silence_phone);
  return d;
}

std::string Dictionary::key(std::string_view word) const {
  return options_.case_sensitive ? std::string(word) : fold_ascii(word);
}

std::string Dictionary::where(int file, long line) const {
  if (file < 0) return "<added by code>";
  return files_[file] + ":" + std::to_string(line);
}

int Dictionary::intern_phone(std::string_view name) {
  std::string folded;
  std::string_view k = name;
  if (!options_.case_sensitive) {
    folded = fold_ascii(name);
    k = folded;
  }
  auto it = phone_index_.find(k);
  if (it != phone_index_.end()) return it->second;
  const int id = static_cast<int>(phone_names_.size());
  phone_names_.emplace_back(name);
  phone_keys_.emplace_back(k);
  phone_index_.emplace(std::string_view(phone_keys_.back()), id);
  return id;
}

int Dictionary::add_entry(std::string_view spelling, const std::vector<std::string_view>& phones,
                          bool filler, int file, long line) {
  std::string spelling_key = key(spelling);
  if (spelling_index_.count(spelling_key)) {
    const Pronunciation& first = prons_[spelling_index_[spelling_key]];
    warnings_.push_back(where(file, line) + ": " + quote_for_message(spelling) +
                        " is already defined at " + where(first.file, first.line) +
                        "; the first definition is kept");
    return -1;
  }
  std::string_view base = spelling, variant;
  const bool alternate = split_alternate(spelling, base, variant);
  int word;
  if (alternate) {
    auto it = spelling_index_.find(key(base));
    if (it == spelling_index_.end()) {
      const std::string msg = where(file, line) + ": alternate pronunciation " +
                              quote_for_message(spelling) + " comes before its base word " +
                              quote_for_message(base);
      if (!options_.skip_bad_entries) throw ModelError(msg);
      warnings_.push_back(msg + "; skipped");
      return -1;
    }
    word = prons_[it->second].word;
  } else {
    word = static_cast<int>(words_.size());
    Word w;
    w.text = std::string(spelling);
    w.filler = filler && !is_sentence_marker(spelling);
    words_.push_back(std::move(w));
  }
  const int id = static_cast<int>(prons_.size());
  Pronunciation p;
  p.word = word;
  p.variant = alternate ? std::string(variant) : std::string();
  p.phones.reserve(phones.size());
  for (std::string_view ph : phones) p.phones.push_back(intern_phone(ph));
  p.file = file;
  p.line = line;
  prons_.push_back(std::move(p));
  words_[word].prons.push_back(id);
  spelling_index_.emplace(std::move(spelling_key), id);
  return id;
}

void Dictionary::add_file(const std::string& path, bool filler) {
  const std::string text = read_model_file(path);
  add_text(text, path, filler);
}

void Dictionary::add_text(std::string_view text, const std::string& name, bool filler) {
  const int file = static_cast<int>(files_.size());
  files_.push_back(name);
  // One entry per line, near enough: for a large file, reserve once instead
  // of growing step by step.
  if (text.size() > (size_t{1} << 16)) {
    const size_t lines_in_text =
        static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    spelling_index_.reserve(spelling_index_.size() + lines_in_text);
    prons_.reserve(prons_.size() + lines_in_text);
    words_.reserve(words_.size() + lines_in_text);
  }
  TextLines lines(text);
  std::string_view line;
  std::vector<std::string_view> fields;
  while (lines.next(line)) {
    // pocketsphinx's comment markers, at the very start of the line only.
    if (line.size() >= 2 &&
        ((line[0] == ';' && line[1] == ';') || (line[0] == '#' && line[1] == '#')))
      continue;
    split_fields(line, fields);
    if (fields.empty()) continue;
    if (fields.size() == 1) {
      const std::string msg = name + ":" + std::to_string(lines.line_number()) + ": word " +
                              quote_for_message(fields[0]) + " has no phones";
      if (!options_.skip_bad_entries) throw ModelError(msg);
      warnings_.push_back(msg + "; skipped");
      continue;
    }
    const std::string_view spelling = fields[0];
    fields.erase(fields.begin());
    add_entry(spelling, fields, filler, file, lines.line_number());
  }
}

int Dictionary::add_pronunciation(const std::string& word,
                                  const std::vector<std::string>& phones, bool filler) {
  if (word.empty()) throw std::invalid_argument("Dictionary: empty word");
  if (phones.empty()) throw std::invalid_argument("Dictionary: word '" + word + "' has no phones");
  std::vector<std::string_view> views;
  for (const std::string& p : phones) {
    if (p.empty()) throw std::invalid_argument("Dictionary: empty phone name in '" + word + "'");
    for (char c : p)
      if (is_blank(c))
        throw std::invalid_argument("Dictionary: phone name with whitespace in '" + word + "'");
    views.push_back(p);
  }
  for (char c : word)
    if (is_blank(c)) throw std::invalid_argument("Dictionary: word with whitespace: '" + word + "'");
  return add_entry(word, views, filler, -1, 0);
}

void Dictionary::add_sentence_markers(const std::string& silence_phone) {
  if (!contains("<s>")) add_pronunciation("<s>", {silence_phone}, false);
  if (!contains("</s>")) add_pronunciation("</s>", {silence_phone}, false);
  if (!contains("<sil>")) add_pronunciation("<sil>", {silence_phone}, true);
}

int Dictionary::word_id(std::string_view word) const {
  auto it = spelling_index_.find(key(word));
  return it == spelling_index_.end() ? kNoWord : prons_[it->second].word;
}

std::vector<std::string> Dictionary::phones(int pron_id) const {
  std::vector<std::string> out;
  for (int p : prons_.at(pron_id).phones) out.push_back(phone_names_[p]);
  return out;
}

void Dictionary::validate_phones(const std::function<bool(const std::string&)>& has_phone) const {
  // Ask once per distinct phone, then find the first entry that uses a
  // missing one: the dictionary has ~40 phones but 10^5 entries.
  std::vector<char> missing(phone_names_.size(), 0);
  bool any = false;
  for (size_t i = 0; i < phone_names_.size(); ++i)
    if (!has_phone(phone_names_[i])) missing[i] = any = true;
  if (!any) return;
  const Pronunciation* first = nullptr;
  int first_phone = -1;
  long others = 0;
  std::vector<std::string> missing_names;
  for (size_t i = 0; i < phone_names_.size(); ++i)
    if (missing[i]) missing_names.push_back(phone_names_[i]);
  for (const Pronunciation& p : prons_) {
    for (int ph : p.phones) {
      if (!missing[ph]) continue;
      if (!first) {
        first = &p;
        first_phone = ph;
      } else {
        ++others;
      }
      break;
    }
  }
  if (!first) return;  // unreachable: every phone belongs to a pronunciation
  std::string msg = where(first->file, first->line) + ": word " +
                    quote_for_message(words_[first->word].text +
                                      (first->variant.empty() ? std::string()
                                                              : "(" + first->variant + ")")) +
                    " uses phone " + quote_for_message(phone_names_[first_phone]) +
                    ", which the acoustic model does not have";
  if (others > 0) {
    msg += " (" + std::to_string(others) + " more pronunciation" + (others > 1 ? "s" : "") +
           " use missing phones; all missing:";
    for (const std::string& n : missing_names) msg += " " + n;
    msg += ")";
  }
  throw ModelError(msg);
}

void Dictionary::validate_phones(const std::vector<std::string>& phone_set) const {
  std::unordered_set<std::string> set;
  for (const std::string& p : phone_set) set.insert(key(p));
  validate_phones([&](const std::string& name) { return set.count(key(name)) > 0; });
}

}  // namespace gpuspeech
