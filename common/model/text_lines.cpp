#include "text_lines.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace gpuspeech {

bool TextLines::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  line = text_.substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = end + 1;
  ++line_;
  return true;
}

void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    while (i < n && is_blank(line[i])) ++i;
    if (i >= n) break;
    size_t j = i;
    while (j < n && !is_blank(line[j])) ++j;
    fields.push_back(line.substr(i, j - i));
    i = j;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool parse_double(std::string_view s, double& value) {
  if (s.empty()) return false;
  // from_chars rejects a leading '+', which printf-style writers may emit.
  if (s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() == '-' || s.front() == '+') return false;
  }
  const char* end = s.data() + s.size();
  auto res = std::from_chars(s.data(), end, value, std::chars_format::general);
  if (res.ec != std::errc() || res.ptr != end) return false;
  return true;
}

bool parse_int(std::string_view s, long long& value) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto res = std::from_chars(s.data(), end, value, 10);
  return res.ec == std::errc() && res.ptr == end;
}

std::string quote_for_message(std::string_view s, size_t max_len) {
  std::string out = "'";
  size_t shown = 0;
  for (char c : s) {
    if (shown >= max_len) {
      out += "...";
      break;
    }
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;
    }
    ++shown;
  }
  out += "'";
  return out;
}

}  // namespace gpuspeech
