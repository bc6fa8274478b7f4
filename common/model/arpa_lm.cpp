#include "arpa_lm.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "byte_reader.h"  // read_model_file
#include "model_error.h"
#include "text_lines.h"

namespace gpuspeech {

namespace {

class ArpaParser {
 public:
  ArpaParser(std::string_view text, const std::string& name) : lines_(text), name_(name),
                                                              size_(text.size()) {}

  NgramModel parse();

 private:
  [[noreturn]] void fail(long line, const std::string& why) const {
    throw ModelError(name_ + ":" + std::to_string(line) + ": " + why);
  }
  // Next line that is not blank, trimmed; false at the end of the text.
  bool next_content(std::string_view& line) {
    while (lines_.next(line)) {
      line = trim(line);
      if (!line.empty()) return true;
    }
    return false;
  }
  void read_counts();
  void read_section(int k);

  TextLines lines_;
  std::string name_;
  size_t size_;
  std::vector<unsigned long long> counts_;
  std::vector<long> count_lines_;
  long data_line_ = 0;
  std::string_view pending_;  // a line read ahead
  bool have_pending_ = false;
  long pending_line_ = 0;
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<NgramList> lists_;
  std::vector<std::string> warnings_;
};

void ArpaParser::read_counts() {
  std::string_view line;
  for (;;) {
    if (!lines_.next(line))
      throw ModelError(name_ + ": no \\data\\ line: this is not an ARPA language model");
    if (trim(line) == "\\data\\") break;
  }
  data_line_ = lines_.line_number();
  while (next_content(line)) {
    if (line.substr(0, 5) != "ngram" || line.size() == 5 || !is_blank(line[5])) {
      pending_ = line;
      have_pending_ = true;
      pending_line_ = lines_.line_number();
      break;
    }
    // "ngram N=C", tolerating blanks around '='.
    std::string_view rest = trim(line.substr(5));
    const size_t eq = rest.find('=');
    long long n = 0, c = 0;
    if (eq == std::string_view::npos || !parse_int(trim(rest.substr(0, eq)), n) ||
        !parse_int(trim(rest.substr(eq + 1)), c))
      fail(lines_.line_number(), "malformed count line " + quote_for_message(line) +
                                     " (expected 'ngram N=COUNT')");
    if (n != static_cast<long long>(counts_.size()) + 1)
      fail(lines_.line_number(), "count for order " + std::to_string(n) + " where order " +
                                     std::to_string(counts_.size() + 1) + " was expected");
    if (n > NgramModel::kMaxOrder)
      fail(lines_.line_number(), "order " + std::to_string(n) + " is above the supported " +
                                     std::to_string(NgramModel::kMaxOrder));
    if (c < 0) fail(lines_.line_number(), "negative n-gram count");
    // Every entry takes at least a digit, a word per order, a separator
    // each and a newline: a count above that cannot be true, and must not
    // size an allocation.
    const unsigned long long min_bytes = 2ull * static_cast<unsigned long long>(n) + 2;
    if (static_cast<unsigned long long>(c) > size_ / min_bytes)
      fail(lines_.line_number(), "declares " + std::to_string(c) + " " + std::to_string(n) +
                                     "-grams, more than a file of " + std::to_string(size_) +
                                     " bytes can hold");
    counts_.push_back(static_cast<unsigned long long>(c));
    count_lines_.push_back(lines_.line_number());
  }
  if (counts_.empty()) fail(data_line_, "\\data\\ is not followed by any 'ngram N=COUNT' line");
  if (counts_[0] == 0) fail(count_lines_[0], "the model declares no unigrams");
}

void ArpaParser::read_section(int k) {
  std::string_view line;
  long header_line;
  if (have_pending_) {
    line = pending_;
    header_line = pending_line_;
    have_pending_ = false;
  } else {
    if (!next_content(line))
      throw ModelError(name_ + ": truncated: the \\" + std::to_string(k) +
                       "-grams: section is missing");
    header_line = lines_.line_number();
  }
  const std::string header = "\\" + std::to_string(k) + "-grams:";
  if (line != header)
    fail(header_line, "expected " + header + ", found " + quote_for_message(line));

  const unsigned long long declared = counts_[k - 1];
  NgramList list;
  list.order = k;
  list.words.reserve(declared * k);
  list.log10_prob.reserve(declared);
  list.log10_backoff.reserve(declared);
  list.lines.reserve(declared);
  if (k == 1) {
    vocab_.reserve(declared);
    index_.reserve(declared);
  }
  const int N = static_cast<int>(counts_.size());
  std::vector<std::string_view> fields;
  bool warned_top_backoff = false;
  while (next_content(line)) {
    if (line[0] == '\\') {
      pending_ = line;
      have_pending_ = true;
      pending_line_ = lines_.line_number();
      break;
    }
    const long ln = lines_.line_number();
    if (list.size() >= declared)
      fail(ln, "more " + std::to_string(k) + "-grams than the " + std::to_string(declared) +
                   " declared at line " + std::to_string(count_lines_[k - 1]));
    split_fields(line, fields);
    if (fields.size() != static_cast<size_t>(k) + 1 && fields.size() != static_cast<size_t>(k) + 2)
      fail(ln, "a " + std::to_string(k) + "-gram needs a probability, " + std::to_string(k) +
                   " word" + (k > 1 ? "s" : "") + " and an optional back-off weight; found " +
                   std::to_string(fields.size()) + " fields");
    // Values are kept as floats: a number beyond float's range would become
    // an infinity there (a back-off weight of -inf, which this reader
    // refuses when written out and read back; a probability of +inf). A
    // log probability below -FLT_MAX is the -inf of an impossible event.
    double p = 0, bo = 0;
    if (!parse_double(fields[0], p) || std::isnan(p) || p > FLT_MAX)
      fail(ln, "bad log probability " + quote_for_message(fields[0]));
    if (fields.size() == static_cast<size_t>(k) + 2) {
      if (!parse_double(fields[k + 1], bo) || !(std::fabs(bo) <= FLT_MAX))
        fail(ln, "bad log back-off weight " + quote_for_message(fields[k + 1]) +
                     " (not a finite float)");
      if (k == N) {
        if (!warned_top_backoff)
          warnings_.push_back(name_ + ":" + std::to_string(ln) +
                              ": back-off weights on the highest order are ignored");
        warned_top_backoff = true;
        bo = 0;
      }
    }
    if (k == 1) {
      if (p > 0) {
        warnings_.push_back(name_ + ":" + std::to_string(ln) + ": unigram " +
                            quote_for_message(fields[1]) +
                            " has a positive log probability; set to 0");
        p = 0;
      }
      const uint32_t id = static_cast<uint32_t>(vocab_.size());
      auto res = index_.emplace(std::string(fields[1]), id);
      if (!res.second)
        fail(ln, "unigram " + quote_for_message(fields[1]) + " is listed twice (first at line " +
                     std::to_string(list.lines[res.first->second]) + ")");
      vocab_.emplace_back(fields[1]);
      list.words.push_back(id);
    } else {
      for (int j = 1; j <= k; ++j) {
        auto it = index_.find(std::string(fields[j]));
        if (it == index_.end())
          fail(ln, "word " + quote_for_message(fields[j]) + " of this " + std::to_string(k) +
                       "-gram is not among the unigrams");
        list.words.push_back(it->second);
      }
    }
    list.log10_prob.push_back(static_cast<float>(p));
    list.log10_backoff.push_back(static_cast<float>(bo));
    list.lines.push_back(ln);
  }
  if (list.size() != declared)
    fail(header_line, "section " + header + " has " + std::to_string(list.size()) +
                          " entries but line " + std::to_string(count_lines_[k - 1]) +
                          " declared " + std::to_string(declared) +
                          (have_pending_ ? "" : " (truncated file?)"));
  lists_.push_back(std::move(list));
}

NgramModel ArpaParser::parse() {
  read_counts();
  const int N = static_cast<int>(counts_.size());
  for (int k = 1; k <= N; ++k) read_section(k);
  std::string_view line;
  long ln;
  if (have_pending_) {
    line = pending_;
    ln = pending_line_;
  } else if (next_content(line)) {
    ln = lines_.line_number();
  } else {
    throw ModelError(name_ + ": truncated: no \\end\\ after the " + std::to_string(N) +
                     "-grams");
  }
  if (line != "\\end\\")
    fail(ln, "expected \\end\\ after the " + std::to_string(N) + "-grams, found " +
                 quote_for_message(line));
  NgramModel m = NgramModel::build(std::move(vocab_), std::move(lists_), name_,
                                   LmFileFormat::kArpa);
  for (std::string& w : warnings_) m.add_warning(std::move(w));
  return m;
}

}  // namespace

NgramModel read_arpa_lm(const std::string& path) {
  const std::string text = read_model_file(path);
  return parse_arpa_lm(text, path);
}

NgramModel parse_arpa_lm(std::string_view text, const std::string& name) {
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1F &&
      static_cast<unsigned char>(text[1]) == 0x8B)
    throw ModelError(name + ": gzip-compressed; decompress it first (gunzip)");
  return ArpaParser(text, name).parse();
}

std::string format_arpa_lm(const NgramModel& model, int decimals) {
  std::string out = "\\data\\\n";
  for (int n = 1; n <= model.order(); ++n)
    out += "ngram " + std::to_string(n) + "=" + std::to_string(model.num_ngrams(n)) + "\n";
  char buf[64];
  for (int n = 1; n <= model.order(); ++n) {
    out += "\n\\" + std::to_string(n) + "-grams:\n";
    model.for_each_ngram(n, [&](const int* words, int k, float p, float bo, bool) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(p));
      out += buf;
      for (int i = 0; i < k; ++i) {
        out += '\t';
        out += model.word(words[i]);
      }
      if (n < model.order()) {
        std::snprintf(buf, sizeof buf, "\t%.*f", decimals, static_cast<double>(bo));
        out += buf;
      }
      out += '\n';
    });
  }
  out += "\n\\end\\\n";
  return out;
}

}  // namespace gpuspeech
