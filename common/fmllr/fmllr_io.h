// fMLLR transforms as text, in Kaldi's text matrix layout (what
// `copy-matrix --binary=false` writes, and what Kaldi's transform-feats
// reads):
//
//    [
//     1.02 -0.01 ... 0.3
//     ...
//     0.00 0.98 ... -0.1 ]
//
// d rows of d + 1 numbers, [A b]. Between '[' and ']' numbers are separated
// by spaces or tabs and rows by newlines; the ']' may end the last row's line
// or stand on its own. Only whitespace may come before '[' and after ']'.
// Numbers are decimal floating point (strtod's syntax, C locale) and must be
// finite. Every problem is an FmllrFormatError "FILE:LINE: reason".
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "common/fmllr/fmllr_transform.h"

namespace gpuspeech {

class FmllrFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TextMatrix {
  int rows = 0;
  int cols = 0;
  std::vector<double> data;  // rows x cols
};

// `source` names the text in error messages (a file name).
TextMatrix parse_kaldi_text_matrix(const std::string& text, const std::string& source);
std::string format_kaldi_text_matrix(const TextMatrix& m);

// A whole file as text, and text written as a whole file (truncating),
// for the readers and writers here and in fmllr_stats_io.h. Throws
// FmllrFormatError "PATH: cannot open: ..." / "PATH: read error" /
// "PATH: cannot create: ..." / "PATH: write error".
std::string read_fmllr_text_file(const std::string& path);
void write_fmllr_text_file(const std::string& path, const std::string& text);

// Reads a transform; expected_dim >= 0 also requires that dimension
// ("FILE: a 13 x 14 transform, the features have dimension 39").
FmllrTransform read_fmllr_transform(const std::string& path, int expected_dim = -1);
// Parses text already in memory, for the same checks (`source` in messages).
FmllrTransform parse_fmllr_transform(const std::string& text, const std::string& source,
                                     int expected_dim = -1);
// Writes with enough digits to read back the same doubles. Throws
// FmllrFormatError if the file cannot be written.
void write_fmllr_transform(const std::string& path, const FmllrTransform& t);

}  // namespace gpuspeech
