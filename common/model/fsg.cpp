#include "fsg.h"

#include <cmath>
#include <cstdio>

#include "byte_reader.h"  // read_model_file
#include "model_error.h"
#include "text_lines.h"

namespace gpuspeech {

namespace {

class FsgParser {
 public:
  FsgParser(std::string_view text, const std::string& name, std::vector<std::string>* warnings)
      : lines_(text), name_(name), size_(text.size()), warnings_(warnings) {}

  WordGraph parse();

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ModelError(name_ + ":" + std::to_string(lines_.line_number()) + ": " + why);
  }
  // Next line with fields, skipping '#' comments and blank lines.
  bool next_fields() {
    std::string_view line;
    while (lines_.next(line)) {
      if (!line.empty() && line[0] == '#') continue;
      split_fields(line, fields_);
      if (!fields_.empty()) return true;
    }
    return false;
  }
  long long state_field(size_t i, long long n_states, const char* what) {
    long long v = 0;
    if (!parse_int(fields_[i], v))
      fail(std::string(what) + " " + quote_for_message(fields_[i]) + " is not an integer");
    if (v < 0 || v >= n_states)
      fail(std::string(what) + " " + std::to_string(v) + " is out of range: the FSG has " +
           std::to_string(n_states) + " states (0.." + std::to_string(n_states - 1) + ")");
    return v;
  }
  // "KEY value" with KEY the long or the short keyword.
  long long declaration(const char* long_kw, const char* short_kw, const char* what) {
    if (!next_fields())
      throw ModelError(name_ + ": truncated: " + long_kw + " is missing");
    if ((fields_[0] != long_kw && fields_[0] != short_kw) || fields_.size() != 2)
      fail(std::string("expected '") + long_kw + " <" + what + ">', found " +
           quote_for_message(fields_[0]));
    long long v = 0;
    if (!parse_int(fields_[1], v))
      fail(std::string(what) + " " + quote_for_message(fields_[1]) + " is not an integer");
    return v;
  }

  TextLines lines_;
  std::string name_;
  size_t size_;
  std::vector<std::string>* warnings_;
  std::vector<std::string_view> fields_;
};

WordGraph FsgParser::parse() {
  WordGraph g;
  g.source = name_;
  for (;;) {
    if (!next_fields()) throw ModelError(name_ + ": no FSG_BEGIN line: this is not an FSG file");
    if (fields_[0] == "FSG_BEGIN") break;
  }
  if (fields_.size() > 2) fail("malformed FSG_BEGIN line (expected 'FSG_BEGIN [name]')");
  g.name = fields_.size() == 2 ? std::string(fields_[1]) : std::string("unknown");

  const long long n = declaration("NUM_STATES", "N", "number of states");
  if (n <= 0) fail("the number of states must be positive, not " + std::to_string(n));
  // States beyond what the transitions of a file this size could reach are
  // unusable, and a huge count must not size allocations downstream.
  const long long max_states = 16 + 8 * static_cast<long long>(size_);
  if (n > max_states)
    fail(std::to_string(n) + " states is absurd for a file of " + std::to_string(size_) +
         " bytes");
  g.num_states = static_cast<int>(n);
  {
    declaration("START_STATE", "S", "start state");
    g.start_state = static_cast<int>(state_field(1, n, "start state"));
    declaration("FINAL_STATE", "F", "final state");
    g.final_state = static_cast<int>(state_field(1, n, "final state"));
  }

  bool warned_above_one = false;
  for (;;) {
    if (!next_fields())
      throw ModelError(name_ + ": truncated: no FSG_END after line " +
                       std::to_string(lines_.line_number()));
    if (fields_[0] == "FSG_END") break;
    if (fields_[0] != "TRANSITION" && fields_[0] != "T")
      fail("expected TRANSITION or FSG_END, found " + quote_for_message(fields_[0]));
    if (fields_.size() != 4 && fields_.size() != 5)
      fail("malformed transition: expected 'TRANSITION from to prob [word]'");
    const int from = static_cast<int>(state_field(1, n, "from-state"));
    const int to = static_cast<int>(state_field(2, n, "to-state"));
    double p = 0;
    if (!parse_double(fields_[3], p) || std::isnan(p) || std::isinf(p))
      fail("transition probability " + quote_for_message(fields_[3]) + " is not a number");
    if (p <= 0) fail("transition probability " + quote_for_message(fields_[3]) +
                     " must be above 0");
    if (p > 1 && !warned_above_one) {
      warned_above_one = true;
      if (warnings_)
        warnings_->push_back(name_ + ":" + std::to_string(lines_.line_number()) +
                             ": transition probability above 1 (taken as a weight)");
    }
    const int word = fields_.size() == 5 ? g.intern_word(fields_[4]) : WordGraph::kEpsilon;
    g.add_arc(from, to, word, static_cast<float>(std::log(p)));
  }
  return g;
}

}  // namespace

WordGraph read_fsg(const std::string& path, std::vector<std::string>* warnings) {
  const std::string text = read_model_file(path);
  return parse_fsg(text, path, warnings);
}

WordGraph parse_fsg(std::string_view text, const std::string& name,
                    std::vector<std::string>* warnings) {
  return FsgParser(text, name, warnings).parse();
}

std::string format_fsg(const WordGraph& g) {
  std::string out = "FSG_BEGIN " + (g.name.empty() ? std::string("unknown") : g.name) + "\n";
  out += "NUM_STATES " + std::to_string(g.num_states) + "\n";
  out += "START_STATE " + std::to_string(g.start_state) + "\n";
  out += "FINAL_STATE " + std::to_string(g.final_state) + "\n";
  char buf[64];
  for (const WordArc& a : g.arcs) {
    std::snprintf(buf, sizeof buf, "%.9g", std::exp(static_cast<double>(a.log_prob)));
    out += "TRANSITION " + std::to_string(a.from) + " " + std::to_string(a.to) + " " + buf;
    if (a.word != WordGraph::kEpsilon) out += " " + g.words.at(a.word);
    out += "\n";
  }
  out += "FSG_END\n";
  return out;
}

}  // namespace gpuspeech
