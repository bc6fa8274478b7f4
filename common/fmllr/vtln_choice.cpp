#include "common/fmllr/vtln_choice.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/features/linear_vtln.h"
#include "common/fmllr/fmllr_estimate.h"

namespace gpuspeech {

void VtlnChoiceOptions::validate() const {
  if (!(min_warp > 0.5 && min_warp <= 1.0))
    throw std::invalid_argument("VTLN: min-warp must be in (0.5, 1], not " + std::to_string(min_warp));
  if (!(max_warp >= 1.0 && max_warp < 2.0))
    throw std::invalid_argument("VTLN: max-warp must be in [1, 2), not " + std::to_string(max_warp));
  if (!(step > 0.0) || (max_warp - min_warp) / step > 1000.0)
    throw std::invalid_argument("VTLN: the warp step must be positive and give at most 1000 warps, not " +
                                std::to_string(step));
}

LinearVtlnCandidates::LinearVtlnCandidates(const FeatureOptions& front_end, int feature_dim,
                                           const VtlnChoiceOptions& options) {
  options.validate();
  const int blocks = linear_vtln_blocks(front_end);
  base_ = front_end.base_dim();
  if (blocks == 0 || feature_dim != front_end.output_dim())
    throw std::invalid_argument("linear VTLN: features of dimension " + std::to_string(feature_dim) +
                                " are not whole blocks of the front end's " + std::to_string(base_) +
                                " cepstra");
  dim_ = feature_dim;
  // Rounded to 1e-9 so that the grid's 1 is exactly 1.
  const int count = static_cast<int>(std::floor((options.max_warp - options.min_warp) / options.step + 1e-9)) + 1;
  for (int k = 0; k < count; ++k) {
    const double w = std::round((options.min_warp + k * options.step) * 1e9) / 1e9;
    const std::vector<double> c = linear_vtln_matrix(front_end, w);
    FmllrTransform t = FmllrTransform::identity(dim_);
    for (int b = 0; b < blocks; ++b)
      for (int r = 0; r < base_; ++r)
        for (int col = 0; col < base_; ++col)
          t.at(b * base_ + r, b * base_ + col) = c[static_cast<size_t>(r) * base_ + col];
    warps_.push_back(w);
    transforms_.push_back(std::move(t));
  }
}

VtlnChoice choose_vtln_warp(const FmllrStats& stats, const LinearVtlnCandidates& candidates,
                            const VtlnChoiceOptions& options) {
  const int d = candidates.dim(), n = d + 1, base = candidates.base_dim();
  if (stats.dim != d)
    throw std::invalid_argument("VTLN: statistics of dimension " + std::to_string(stats.dim) +
                                " for features of dimension " + std::to_string(d));
  if (!(stats.beta > 0.0)) throw std::invalid_argument("VTLN: no statistics to choose a warp from");
  VtlnChoice best;
  bool have = false;
  for (size_t k = 0; k < candidates.warps().size(); ++k) {
    const FmllrTransform& warp = candidates.transform(k);
    FmllrTransform t = warp;
    for (int i = 0; i < d; ++i) {
      // Row i of A_w is nonzero only within its block's columns.
      const int lo = i / base * base;
      const double* row = warp.w.data() + static_cast<size_t>(i) * n + lo;
      const double* g = stats.g_matrix(i);
      const double* ki = stats.k_row(i);
      double gii = 0.0, gid = 0.0, kii = 0.0;
      for (int p = 0; p < base; ++p) {
        const double* gp = g + static_cast<size_t>(lo + p) * n;
        double s = 0.0;
        for (int q = 0; q < base; ++q) s += gp[lo + q] * row[q];
        gii += row[p] * s;
        gid += row[p] * gp[d];
        kii += row[p] * ki[lo + p];
      }
      double a = 1.0, b = 0.0;
      diagonal_row_estimate(stats.beta, gii, gid, g[static_cast<size_t>(d) * n + d], kii, ki[d], &a, &b);
      for (int q = 0; q < base; ++q) t.at(i, lo + q) *= a;
      t.at(i, d) = b;
    }
    double q = fmllr_objective(stats, t) / stats.beta;
    if (!options.warp_jacobian) q -= warp.log_abs_det();
    if (candidates.warps()[k] == 1.0) best.unwarped_objective = q;
    if (!have || q > best.objective) {
      have = true;
      best.warp = candidates.warps()[k];
      best.index = k;
      best.transform = std::move(t);
      best.objective = q;
    }
  }
  return best;
}

}  // namespace gpuspeech
