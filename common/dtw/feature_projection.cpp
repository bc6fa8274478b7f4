#include "common/dtw/feature_projection.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <locale>
#include <sstream>
#include <stdexcept>

#include "common/model/text_lines.h"

namespace gpuspeech {

namespace {

// Limits that keep a hostile file from asking for gigabytes: a DTW frame is
// tens of values, and a few frames of context is all a map needs.
constexpr int kMaxDim = 4096;
constexpr int kMaxSplice = 32;
// And no more weights than 16 MiB of floats, whatever the dimensions say.
constexpr int64_t kMaxWeights = int64_t{1} << 22;
// A threshold per number of templates a word has: more than a few dozen
// would say nothing new (the simulation draws up to eight).
constexpr size_t kMaxThresholds = 64;

class LineReader {
 public:
  LineReader(const std::string& text, const std::string& source) : in_(text), source_(source) {}

  // The next line that is neither blank nor a comment, split into words;
  // false at the end of the text.
  bool next(std::vector<std::string>& words) {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      std::istringstream split(line);
      words.clear();
      for (std::string w; split >> w;) words.push_back(w);
      return true;
    }
    return false;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(source_ + ":" + std::to_string(line_no_) + ": " + why);
  }

  std::vector<std::string> expect(const char* what) {
    std::vector<std::string> words;
    if (!next(words)) fail(std::string("the text ends where ") + what + " should be");
    return words;
  }

 private:
  std::istringstream in_;
  std::string source_;
  int line_no_ = 0;
};

// parse_double (from_chars): a program that sets a locale with a decimal
// comma (a desktop app calling setlocale) must read the same file.
double parse_number(const std::string& word, const LineReader& r) {
  double x = 0.0;
  if (!parse_double(word, x) || !std::isfinite(x)) r.fail("'" + word + "' is not a finite number");
  return x;
}

// The shortest text that reads back as the same float, in any locale.
std::string float_text(float x) {
  char buf[64];
  const std::to_chars_result res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

// A weight or threshold: a finite number that a float can hold.
float parse_float(const std::string& word, const LineReader& r) {
  const double x = parse_number(word, r);
  if (std::fabs(x) > static_cast<double>(std::numeric_limits<float>::max()))
    r.fail("'" + word + "' is out of a float's range");
  return static_cast<float>(x);
}

int parse_int_key(LineReader& r, const char* key, int lo, int hi) {
  const std::vector<std::string> w = r.expect(key);
  if (w.size() != 2 || w[0] != key) r.fail(std::string("expected '") + key + " N'");
  const double x = parse_number(w[1], r);
  if (x != std::floor(x) || x < lo || x > hi)
    r.fail(std::string(key) + " must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(x);
}

}  // namespace

void DtwProjection::validate() const {
  if (input_dim < 1 || input_dim > kMaxDim || output_dim < 1 || output_dim > kMaxDim || splice < 0 ||
      splice > kMaxSplice)
    throw std::invalid_argument("DTW projection: dimensions out of range");
  if (static_cast<int64_t>(output_dim) * spliced_dim() > kMaxWeights)
    throw std::invalid_argument("DTW projection: more than " + std::to_string(kMaxWeights) + " weights");
  if (weights.size() != static_cast<size_t>(output_dim) * spliced_dim())
    throw std::invalid_argument("DTW projection: " + std::to_string(weights.size()) + " weights for a " +
                                std::to_string(output_dim) + " x " + std::to_string(spliced_dim()) + " map");
  if (thresholds.size() > kMaxThresholds)
    throw std::invalid_argument("DTW projection: more than " + std::to_string(kMaxThresholds) + " thresholds");
  for (float t : thresholds)
    if (!(std::isfinite(t) && t > 0.0f))
      throw std::invalid_argument("DTW projection: a threshold is not a finite number > 0");
  if (features.empty() || features.find_first_of(" \t\r\n") != std::string::npos)
    throw std::invalid_argument("DTW projection: the features must be one word, got '" + features + "'");
}

float DtwProjection::threshold_for(size_t templates) const {
  if (thresholds.empty()) return 0.0f;
  return thresholds[std::min(std::max<size_t>(templates, 1), thresholds.size()) - 1];
}

FeatureMatrix splice_frames(const FeatureMatrix& m, int k) {
  if (k < 0) throw std::invalid_argument("splice_frames: negative context");
  FeatureMatrix r;
  r.rows = m.rows;
  r.dim = m.dim * (2 * k + 1);
  r.data.resize(static_cast<size_t>(r.rows) * r.dim);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int o = -k; o <= k; ++o) {
      const int64_t src = std::clamp<int64_t>(i + o, 0, m.rows - 1);
      std::copy(m.row(src), m.row(src) + m.dim, r.row(i) + static_cast<size_t>(o + k) * m.dim);
    }
  return r;
}

FeatureMatrix DtwProjection::apply(const FeatureMatrix& m) const {
  if (m.dim != input_dim)
    throw std::invalid_argument("DTW projection: features of " + std::to_string(m.dim) + " values a frame, the map takes " +
                                std::to_string(input_dim));
  const FeatureMatrix s = splice_frames(m, splice);
  const int in = s.dim;
  FeatureMatrix r;
  r.rows = m.rows;
  r.dim = output_dim;
  r.data.resize(static_cast<size_t>(r.rows) * output_dim);
  for (int64_t i = 0; i < s.rows; ++i) {
    const float* x = s.row(i);
    for (int o = 0; o < output_dim; ++o) {
      const float* w = weights.data() + static_cast<size_t>(o) * in;
      double acc = 0.0;
      for (int k = 0; k < in; ++k) acc += static_cast<double>(w[k]) * x[k];
      r.row(i)[o] = static_cast<float>(acc);
    }
  }
  return r;
}

DtwProjection parse_dtw_projection(const std::string& text, const std::string& source) {
  LineReader r(text, source);
  std::vector<std::string> w = r.expect("the header");
  if (w.size() != 2 || w[0] != "gpuspeech-dtw-projection") r.fail("not a gpuspeech DTW projection");
  if (w[1] != "1") r.fail("version " + w[1] + " is not known (this build reads version 1)");
  DtwProjection p;
  w = r.expect("features");
  if (w.size() != 2 || w[0] != "features") r.fail("expected 'features SIGNATURE' (one word)");
  p.features = w[1];
  p.input_dim = parse_int_key(r, "input-dim", 1, kMaxDim);
  p.splice = parse_int_key(r, "splice", 0, kMaxSplice);
  p.output_dim = parse_int_key(r, "output-dim", 1, kMaxDim);
  w = r.expect("threshold");
  if (w.size() < 2 || w[0] != "threshold") r.fail("expected 'threshold X [X ...]'");
  if (w.size() - 1 > kMaxThresholds) r.fail("more than " + std::to_string(kMaxThresholds) + " thresholds");
  if (!(w.size() == 2 && parse_float(w[1], r) == 0.0f))
    for (size_t i = 1; i < w.size(); ++i) {
      const float t = parse_float(w[i], r);
      if (!(t > 0.0f)) r.fail("a threshold must be > 0 ('threshold 0' alone: none learnt)");
      p.thresholds.push_back(t);
    }
  w = r.expect("weights");
  if (w.size() != 1 || w[0] != "weights") r.fail("expected 'weights'");
  const int in = p.spliced_dim();
  if (static_cast<int64_t>(p.output_dim) * in > kMaxWeights)
    r.fail("a map of " + std::to_string(p.output_dim) + " x " + std::to_string(in) + " is larger than " +
           std::to_string(kMaxWeights) + " weights");
  p.weights.reserve(static_cast<size_t>(p.output_dim) * in);
  for (int o = 0; o < p.output_dim; ++o) {
    w = r.expect("a row of weights");
    if (static_cast<int>(w.size()) != in)
      r.fail("a row of weights has " + std::to_string(w.size()) + " numbers, not " + std::to_string(in));
    for (const std::string& x : w) p.weights.push_back(parse_float(x, r));
  }
  if (r.next(w)) r.fail("text after the last row of weights");
  p.validate();
  return p;
}

DtwProjection load_dtw_projection(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open the DTW projection");
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) throw std::runtime_error(path + ": cannot read the DTW projection");
  return parse_dtw_projection(text.str(), path);
}

std::string format_dtw_projection(const DtwProjection& p, const std::string& comment) {
  p.validate();
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << "gpuspeech-dtw-projection 1\n";
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "features " << p.features << "\ninput-dim " << p.input_dim << "\nsplice " << p.splice << "\noutput-dim " << p.output_dim
      << "\nthreshold";
  if (p.thresholds.empty()) out << " 0";
  for (float t : p.thresholds) out << " " << float_text(t);
  out << "\nweights\n";
  const int in = p.spliced_dim();
  for (int o = 0; o < p.output_dim; ++o) {
    for (int k = 0; k < in; ++k) out << (k ? " " : "") << float_text(p.weights[static_cast<size_t>(o) * in + k]);
    out << "\n";
  }
  return out.str();
}

}  // namespace gpuspeech
