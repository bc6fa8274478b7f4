#include "common/fmllr/fmllr_io.h"

#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace gpuspeech {

namespace {

[[noreturn]] void fail(const std::string& source, int line, const std::string& why) {
  throw FmllrFormatError(source + ":" + std::to_string(line) + ": " + why);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// A number token: strtod in the C locale, on a NUL-terminated copy.
double parse_number(const std::string& token, const std::string& source, int line) {
  const char* s = token.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0')
    fail(source, line, "'" + token.substr(0, 40) + "' is not a number");
  if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0))
    fail(source, line, "'" + token.substr(0, 40) + "' is not a finite number");
  return v;
}

}  // namespace

TextMatrix parse_kaldi_text_matrix(const std::string& text, const std::string& source) {
  TextMatrix m;
  size_t i = 0;
  int line = 1;
  // Leading whitespace, then '['.
  for (; i < text.size() && text[i] != '['; ++i) {
    if (text[i] == '\n') ++line;
    else if (!is_blank(text[i]))
      fail(source, line, "expected '[' to open the matrix, found '" + std::string(1, text[i]) + "'");
  }
  if (i == text.size()) fail(source, line, "no '[': not a Kaldi text matrix (empty file?)");
  ++i;
  std::vector<double> row;
  int row_line = line;
  auto end_row = [&]() {
    if (row.empty()) return;
    if (m.rows == 0) m.cols = static_cast<int>(row.size());
    else if (static_cast<int>(row.size()) != m.cols)
      fail(source, row_line, "row " + std::to_string(m.rows + 1) + " has " +
                                 std::to_string(row.size()) + " numbers, the first row " +
                                 std::to_string(m.cols));
    m.data.insert(m.data.end(), row.begin(), row.end());
    ++m.rows;
    row.clear();
  };
  bool closed = false;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      end_row();
      ++line;
      row_line = line;
      ++i;
    } else if (is_blank(c)) {
      ++i;
    } else if (c == ']') {
      end_row();
      closed = true;
      ++i;
      break;
    } else if (c == '[') {
      fail(source, line, "a second '[' inside the matrix");
    } else {
      size_t j = i;
      while (j < text.size() && !is_blank(text[j]) && text[j] != '\n' && text[j] != ']' &&
             text[j] != '[')
        ++j;
      if (row.empty()) row_line = line;
      row.push_back(parse_number(text.substr(i, j - i), source, line));
      if (row.size() > 100000) fail(source, line, "a row of more than 100000 numbers");
      i = j;
    }
  }
  if (!closed) fail(source, line, "the matrix is not closed with ']'");
  for (; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    else if (!is_blank(text[i]))
      fail(source, line, "unexpected '" + std::string(1, text[i]) + "' after the closing ']'");
  }
  return m;
}

std::string format_kaldi_text_matrix(const TextMatrix& m) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(std::numeric_limits<double>::max_digits10);
  out << " [";
  for (int r = 0; r < m.rows; ++r) {
    out << "\n ";
    for (int c = 0; c < m.cols; ++c) out << ' ' << m.data[static_cast<size_t>(r) * m.cols + c];
  }
  out << " ]\n";
  return out.str();
}

FmllrTransform parse_fmllr_transform(const std::string& text, const std::string& source,
                                     int expected_dim) {
  const TextMatrix m = parse_kaldi_text_matrix(text, source);
  if (m.rows == 0) throw FmllrFormatError(source + ": the transform matrix is empty");
  if (m.cols != m.rows + 1)
    throw FmllrFormatError(source + ": a " + std::to_string(m.rows) + " x " +
                           std::to_string(m.cols) + " matrix is not an fMLLR transform (d x (d+1))");
  if (expected_dim >= 0 && m.rows != expected_dim)
    throw FmllrFormatError(source + ": a " + std::to_string(m.rows) + " x " +
                           std::to_string(m.cols) + " transform, the features have dimension " +
                           std::to_string(expected_dim));
  FmllrTransform t;
  t.dim = m.rows;
  t.w = m.data;
  return t;
}

std::string read_fmllr_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FmllrFormatError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw FmllrFormatError(path + ": read error");
  return ss.str();
}

void write_fmllr_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw FmllrFormatError(path + ": cannot create: " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) throw FmllrFormatError(path + ": write error");
}

FmllrTransform read_fmllr_transform(const std::string& path, int expected_dim) {
  return parse_fmllr_transform(read_fmllr_text_file(path), path, expected_dim);
}

void write_fmllr_transform(const std::string& path, const FmllrTransform& t) {
  if (!t.all_finite() || t.w.size() != static_cast<size_t>(t.dim) * (t.dim + 1))
    throw FmllrFormatError(path + ": refusing to write a transform with non-finite entries or the wrong size");
  TextMatrix m;
  m.rows = t.dim;
  m.cols = t.dim + 1;
  m.data = t.w;
  write_fmllr_text_file(path, format_kaldi_text_matrix(m));
}

}  // namespace gpuspeech
