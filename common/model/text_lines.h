// Line-by-line reading of the text formats in common/model/ (dictionaries,
// ARPA LMs, FSG and keyphrase lists), with the line numbers that error
// messages need. Lines end at '\n'; a '\r' before it is dropped, so files
// written on Windows read the same. The text is not copied: lines are views
// into it and live as long as it does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspeech {

class TextLines {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}

  // The next line (without its end-of-line) into `line`; false at the end.
  bool next(std::string_view& line);
  // 1-based number of the line `next` returned last (0 before the first).
  long line_number() const { return line_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  long line_ = 0;
};

// True for the bytes the Sphinx tools treat as word separators.
inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// The whitespace-separated fields of `line` (cleared first).
void split_fields(std::string_view line, std::vector<std::string_view>& fields);

// `s` without leading and trailing whitespace.
std::string_view trim(std::string_view s);

// Strict number parsing: the whole of `s` must be the number (C locale,
// no leading '+' for integers). False on anything else, overflow included.
bool parse_double(std::string_view s, double& value);
bool parse_int(std::string_view s, long long& value);

// `s` quoted for an error message, shortened if long and with control
// bytes escaped so that a corrupt file cannot garble the terminal.
std::string quote_for_message(std::string_view s, size_t max_len = 60);

}  // namespace gpuspeech
