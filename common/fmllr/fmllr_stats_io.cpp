#include "common/fmllr/fmllr_stats_io.h"

#include <cmath>

namespace gpuspeech {

namespace {

// The matrix's rows for dimension d, in 64 bits (d comes from the file).
int64_t stats_rows(int64_t d) { return 1 + d + d * (d + 1); }

}  // namespace

FmllrStats parse_fmllr_stats(const std::string& text, const std::string& source, int expected_dim) {
  const TextMatrix m = parse_kaldi_text_matrix(text, source);
  if (m.rows == 0) throw FmllrFormatError(source + ": the statistics matrix is empty");
  const int64_t d = static_cast<int64_t>(m.cols) - 1;
  if (d < 1 || m.rows != stats_rows(d))
    throw FmllrFormatError(source + ": a " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
                           " matrix is not fMLLR statistics (1 + d + d(d+1) rows of d + 1)");
  if (expected_dim >= 0 && d != expected_dim)
    throw FmllrFormatError(source + ": statistics of dimension " + std::to_string(d) +
                           ", the features have dimension " + std::to_string(expected_dim));
  const size_t cols = static_cast<size_t>(m.cols);
  FmllrStats s(static_cast<int>(d));
  s.beta = m.data[0];
  if (!(s.beta >= 0.0)) throw FmllrFormatError(source + ": beta (the frame count, row 0) is negative");
  for (size_t c = 1; c < cols; ++c)
    if (m.data[c] != 0.0) throw FmllrFormatError(source + ": row 0 holds beta and then zeros");
  std::copy(m.data.begin() + static_cast<std::ptrdiff_t>(cols),
            m.data.begin() + static_cast<std::ptrdiff_t>(cols * (1 + d)), s.k.begin());
  std::copy(m.data.begin() + static_cast<std::ptrdiff_t>(cols * (1 + d)), m.data.end(), s.g.begin());
  bool any = false;
  for (double v : s.k) any = any || v != 0.0;
  for (int i = 0; i < d; ++i) {
    const double* g = s.g_matrix(i);
    for (size_t r = 0; r < cols; ++r) {
      if (g[r * cols + r] < 0.0)
        throw FmllrFormatError(source + ": G_" + std::to_string(i) + " has a negative diagonal entry");
      for (size_t c = 0; c < cols; ++c) {
        const double a = g[r * cols + c], b = g[c * cols + r];
        any = any || a != 0.0;
        // Accumulated by one formula for both halves: symmetric but for
        // the last bits of whatever else wrote the file.
        if (std::fabs(a - b) > 1e-9 * (std::fabs(a) + std::fabs(b)))
          throw FmllrFormatError(source + ": G_" + std::to_string(i) + " is not symmetric");
      }
    }
  }
  if (any != (s.beta > 0.0))
    throw FmllrFormatError(source + (any ? ": statistics with no frames (beta 0) but non-zero sums"
                                         : ": frames (beta > 0) but all sums zero"));
  return s;
}

FmllrStats read_fmllr_stats(const std::string& path, int expected_dim) {
  return parse_fmllr_stats(read_fmllr_text_file(path), path, expected_dim);
}

std::string format_fmllr_stats(const FmllrStats& s) {
  const size_t d = static_cast<size_t>(s.dim), cols = d + 1;
  if (s.dim < 1 || s.k.size() != d * cols || s.g.size() != d * cols * cols)
    throw FmllrFormatError("fMLLR statistics of the wrong size");
  TextMatrix m;
  m.rows = static_cast<int>(stats_rows(s.dim));
  m.cols = static_cast<int>(cols);
  m.data.assign(cols, 0.0);
  m.data[0] = s.beta;
  m.data.insert(m.data.end(), s.k.begin(), s.k.end());
  m.data.insert(m.data.end(), s.g.begin(), s.g.end());
  for (double v : m.data)
    if (!std::isfinite(v)) throw FmllrFormatError("fMLLR statistics with non-finite entries");
  return format_kaldi_text_matrix(m);
}

void write_fmllr_stats(const std::string& path, const FmllrStats& s) {
  std::string text;
  try {
    text = format_fmllr_stats(s);
  } catch (const FmllrFormatError& e) {
    throw FmllrFormatError(path + ": refusing to write " + e.what());
  }
  write_fmllr_text_file(path, text);
}

}  // namespace gpuspeech
