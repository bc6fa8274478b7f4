#include "common/features/cmn_trace.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/features/postprocess.h"

namespace gpuspeech {

void CmnTrace::append(const CmnTrace& more) {
  if (more.rows() == 0) return;
  if (rows() == 0) dim = more.dim;
  if (more.dim != dim)
    throw std::invalid_argument("CMN trace: appending rows of dim " + std::to_string(more.dim) +
                                " to a trace of dim " + std::to_string(dim));
  append(more.offsets.data(), more.learned.data(), more.rows());
}

void CmnTrace::append(const float* offsets_rows, const uint8_t* learned_rows, int64_t n) {
  if (n <= 0) return;
  offsets.insert(offsets.end(), offsets_rows, offsets_rows + n * dim);
  learned.insert(learned.end(), learned_rows, learned_rows + n);
}

std::vector<uint8_t> static_dims_of_layout(const DeltaOptions& delta, int base_dim) {
  FeatureMatrix ones;
  ones.dim = base_dim;
  ones.rows = 1;
  ones.data.assign(static_cast<size_t>(base_dim), 1.0f);
  std::vector<float> out;
  if (delta.layout == DeltaOptions::Layout::kNone) {
    out = ones.data;
  } else {
    FeatureMatrix full = add_deltas(ones, delta);
    out = full.data;
  }
  std::vector<uint8_t> mask(out.size());
  // Exactly 1 or 0: a delta filter's taps sum to zero (and are exact in
  // float for small integers, as Sphinx's are); a regression's sum within
  // rounding.
  for (size_t d = 0; d < out.size(); ++d) mask[d] = std::fabs(out[d] - 1.0f) < 1e-3f;
  return mask;
}

void CmnSums::add(const CmnSums& o) {
  if (sum.empty()) sum.assign(o.sum.size(), 0.0);
  if (o.sum.size() != sum.size())
    throw std::invalid_argument("CMN sums of " + std::to_string(o.sum.size()) + " and " +
                                std::to_string(sum.size()) + " dims");
  for (size_t d = 0; d < sum.size(); ++d) sum[d] += o.sum[d];
  count += o.count;
}

void CmnSums::halve() {
  for (double& x : sum) x *= 0.5;
  count *= 0.5;
}

std::vector<float> CmnSums::mean() const {
  std::vector<float> m(sum.size(), 0.0f);
  if (count > 0.0)
    for (size_t d = 0; d < sum.size(); ++d) m[d] = static_cast<float>(sum[d] / count);
  return m;
}

namespace {

void check_covered(int64_t rows, int dim, const CmnTrace& trace,
                   const std::vector<uint8_t>& static_dims) {
  if (trace.dim != dim || trace.rows() != rows || static_cast<int>(static_dims.size()) != dim)
    throw std::invalid_argument("CMN trace of " + std::to_string(trace.rows()) + " x " +
                                std::to_string(trace.dim) + " for features of " +
                                std::to_string(rows) + " x " + std::to_string(dim));
}

}  // namespace

CmnSums learned_sums(const float* features, int64_t rows, int dim, const CmnTrace& trace,
                     const std::vector<uint8_t>& static_dims) {
  check_covered(rows, dim, trace, static_dims);
  CmnSums s;
  s.sum.assign(static_cast<size_t>(dim), 0.0);
  for (int64_t t = 0; t < rows; ++t) {
    if (!trace.learned[static_cast<size_t>(t)]) continue;
    const float* x = features + t * dim;
    const float* o = trace.offsets.data() + t * dim;
    for (int d = 0; d < dim; ++d)
      if (static_dims[static_cast<size_t>(d)]) s.sum[static_cast<size_t>(d)] += x[d] + o[d];
    s.count += 1.0;
  }
  return s;
}

void renormalise_with_mean(float* features, int64_t rows, int dim, const CmnTrace& trace,
                           const std::vector<uint8_t>& static_dims, const std::vector<float>& mean,
                           float* moved) {
  check_covered(rows, dim, trace, static_dims);
  if (static_cast<int>(mean.size()) != dim)
    throw std::invalid_argument("a CMN mean of " + std::to_string(mean.size()) + " values for " +
                                std::to_string(dim) + " dims");
  const int c0 = static_cast<int>(std::find(static_dims.begin(), static_dims.end(), 1) -
                                  static_dims.begin());
  float largest = 0.0f;
  for (int64_t t = 0; t < rows; ++t) {
    float* x = features + t * dim;
    const float* o = trace.offsets.data() + t * dim;
    // Static dims: x + m_t - M; delta dims: x + (deltas of m_t), the
    // deltas of the constant M being zero.
    for (int d = 0; d < dim; ++d)
      x[d] += o[d] - (static_dims[static_cast<size_t>(d)] ? mean[static_cast<size_t>(d)] : 0.0f);
    if (c0 < dim) largest = std::max(largest, std::fabs(o[c0] - mean[static_cast<size_t>(c0)]));
  }
  if (moved) *moved = largest;
}

bool normalise_with_own_mean(float* features, int64_t rows, int dim, const CmnTrace& trace,
                             const std::vector<uint8_t>& static_dims, float* moved) {
  if (moved) *moved = 0.0f;
  if (rows <= 0 || trace.dim != dim || trace.rows() != rows ||
      static_cast<int>(static_dims.size()) != dim)
    return false;
  const CmnSums own = learned_sums(features, rows, dim, trace, static_dims);
  if (own.count <= 0.0) return false;
  renormalise_with_mean(features, rows, dim, trace, static_dims, own.mean(), moved);
  return true;
}

}  // namespace gpuspeech
