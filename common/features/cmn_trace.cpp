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

bool normalise_with_own_mean(float* features, int64_t rows, int dim, const CmnTrace& trace,
                             const std::vector<uint8_t>& static_dims, float* moved) {
  if (moved) *moved = 0.0f;
  if (rows <= 0 || trace.dim != dim || trace.rows() != rows ||
      static_cast<int>(static_dims.size()) != dim)
    return false;
  std::vector<double> sum(static_cast<size_t>(dim), 0.0);
  int64_t count = 0;
  for (int64_t t = 0; t < rows; ++t) {
    if (!trace.learned[static_cast<size_t>(t)]) continue;
    const float* x = features + t * dim;
    const float* o = trace.offsets.data() + t * dim;
    for (int d = 0; d < dim; ++d)
      if (static_dims[static_cast<size_t>(d)]) sum[static_cast<size_t>(d)] += x[d] + o[d];
    ++count;
  }
  if (count == 0) return false;
  std::vector<float> mean(static_cast<size_t>(dim), 0.0f);
  for (int d = 0; d < dim; ++d)
    if (static_dims[static_cast<size_t>(d)])
      mean[static_cast<size_t>(d)] = static_cast<float>(sum[static_cast<size_t>(d)] / count);
  const int c0 = static_cast<int>(std::find(static_dims.begin(), static_dims.end(), 1) -
                                  static_dims.begin());
  float largest = 0.0f;
  for (int64_t t = 0; t < rows; ++t) {
    float* x = features + t * dim;
    const float* o = trace.offsets.data() + t * dim;
    // Static dims: x + m_t - M; delta dims: x + (deltas of m_t), the
    // deltas of the constant M being zero.
    for (int d = 0; d < dim; ++d) x[d] += o[d] - mean[static_cast<size_t>(d)];
    if (c0 < dim) largest = std::max(largest, std::fabs(o[c0] - mean[static_cast<size_t>(c0)]));
  }
  if (moved) *moved = largest;
  return true;
}

}  // namespace gpuspeech
