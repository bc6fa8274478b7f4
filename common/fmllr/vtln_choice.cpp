#include "common/fmllr/vtln_choice.h"

#include <algorithm>
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

namespace {

// The statistics of one row seen through row i of a warp's matrix: with
// y = A_w x, what the diagonal estimate of row i and its part of Q need,
//   yy = sum_t v_ti y_ti²,  y = sum_t v_ti y_ti,  one = sum_t v_ti,
//   ky = sum_t u_ti y_ti,   k1 = sum_t u_ti
// (v, u as in fmllr_stats.h): G_i and k_i projected on row i of A_w.
struct RowSums {
  double yy = 0.0, y = 0.0, one = 0.0, ky = 0.0, k1 = 0.0;
};

struct WarpSums {
  double beta = 0.0;
  std::vector<RowSums> rows;
  explicit WarpSums(int dim) : rows(static_cast<size_t>(dim)) {}
};

// Full statistics of x projected through the warp's rows. Row i of A_w is
// nonzero only within its block's columns.
void add_projected(const FmllrStats& stats, const FmllrTransform& warp, int base, WarpSums* s) {
  const int d = stats.dim, n = d + 1;
  s->beta += stats.beta;
  for (int i = 0; i < d; ++i) {
    const int lo = i / base * base;
    const double* row = warp.w.data() + static_cast<size_t>(i) * n + lo;
    const double* g = stats.g_matrix(i);
    const double* ki = stats.k_row(i);
    RowSums& r = s->rows[static_cast<size_t>(i)];
    for (int p = 0; p < base; ++p) {
      const double* gp = g + static_cast<size_t>(lo + p) * n;
      double sum = 0.0;
      for (int q = 0; q < base; ++q) sum += gp[lo + q] * row[q];
      r.yy += row[p] * sum;
      r.y += row[p] * gp[d];
      r.ky += row[p] * ki[lo + p];
    }
    r.one += g[static_cast<size_t>(d) * n + d];
    r.k1 += ki[d];
  }
}

// Frames of warped features y with their posteriors (computed on y).
void add_frames(const GaussianMixtures& gm, const float* y, int64_t frames, const GaussianPosteriors& post,
                WarpSums* s) {
  const int d = gm.feature_dim(), streams = gm.num_streams();
  for (int64_t t = 0; t < frames; ++t) {
    const float* yt = y + t * d;
    for (int st = 0; st < streams; ++st) {
      const int sd = gm.stream_dim(st);
      const std::vector<int>& comp = gm.stream_components[static_cast<size_t>(st)];
      const std::vector<float>& means = gm.means[static_cast<size_t>(st)];
      const std::vector<float>& vars = gm.variances[static_cast<size_t>(st)];
      for (int64_t j = post.offsets[static_cast<size_t>(t * streams + st)];
           j < post.offsets[static_cast<size_t>(t * streams + st + 1)]; ++j) {
        const double gamma = post.posterior[static_cast<size_t>(j)];
        if (st == 0) s->beta += gamma;
        const size_t at = static_cast<size_t>(post.gaussian[static_cast<size_t>(j)]) * sd;
        for (int c = 0; c < sd; ++c) {
          const int i = comp[static_cast<size_t>(c)];
          const double v = gamma / vars[at + c], u = v * means[at + c], yi = yt[i];
          RowSums& r = s->rows[static_cast<size_t>(i)];
          r.yy += v * yi * yi;
          r.y += v * yi;
          r.one += v;
          r.ky += u * yi;
          r.k1 += u;
        }
      }
    }
  }
}

// y = A_w x for the warp's block-diagonal matrix (no offset).
void warp_frames(const FmllrTransform& warp, int base, const float* x, int64_t frames, float* y) {
  const int d = warp.dim;
  for (int64_t t = 0; t < frames; ++t)
    for (int i = 0; i < d; ++i) {
      const int lo = i / base * base;
      const double* row = warp.w.data() + static_cast<size_t>(i) * (d + 1) + lo;
      double v = 0.0;
      for (int q = 0; q < base; ++q) v += row[q] * x[t * d + lo + q];
      y[t * d + i] = static_cast<float>(v);
    }
}

// Candidate k followed by the diagonal transform its sums favour, and that
// transform's Q / beta:
//   ln|det A_w| + sum_i ln|a_i| + (1/beta) sum_i (a_i ky + b_i k1 - ½ (a_i² yy + 2 a_i b_i y + b_i² one)),
// the warp's ln|det| left out unless the options count it.
VtlnChoice warp_with_diagonal(const WarpSums& s, const LinearVtlnCandidates& candidates, size_t k,
                              const VtlnChoiceOptions& options) {
  const int d = candidates.dim(), base = candidates.base_dim();
  const FmllrTransform& warp = candidates.transform(k);
  VtlnChoice c;
  c.warp = candidates.warps()[k];
  c.index = k;
  c.transform = warp;
  double log_det = options.warp_jacobian ? warp.log_abs_det() : 0.0, quadratic = 0.0;
  for (int i = 0; i < d; ++i) {
    const RowSums& r = s.rows[static_cast<size_t>(i)];
    double a = 1.0, b = 0.0;
    diagonal_row_estimate(s.beta, r.yy, r.y, r.one, r.ky, r.k1, &a, &b);
    const int lo = i / base * base;
    for (int q = 0; q < base; ++q) c.transform.at(i, lo + q) *= a;
    c.transform.at(i, d) = b;
    log_det += std::log(std::fabs(a));
    quadratic += a * r.ky + b * r.k1 - 0.5 * (a * a * r.yy + 2.0 * a * b * r.y + b * b * r.one);
  }
  c.objective = log_det + quadratic / s.beta;
  return c;
}

// Keeps the better of `best` and `c`; notes warp 1's objective.
void keep_best(VtlnChoice&& c, bool* have, VtlnChoice* best) {
  if (c.warp == 1.0) best->unwarped_objective = c.objective;
  best->objectives.push_back(c.objective);
  if (!*have || c.objective > best->objective) {
    const double unwarped = best->unwarped_objective;
    std::vector<double> objectives = std::move(best->objectives);
    *best = std::move(c);
    best->unwarped_objective = unwarped;
    best->objectives = std::move(objectives);
    *have = true;
  }
}

}  // namespace

VtlnChoice choose_vtln_warp(const FmllrStats& stats, const LinearVtlnCandidates& candidates,
                            const VtlnChoiceOptions& options) {
  const int d = candidates.dim();
  if (stats.dim != d)
    throw std::invalid_argument("VTLN: statistics of dimension " + std::to_string(stats.dim) +
                                " for features of dimension " + std::to_string(d));
  if (!(stats.beta > 0.0)) throw std::invalid_argument("VTLN: no statistics to choose a warp from");
  VtlnChoice best;
  bool have = false;
  for (size_t k = 0; k < candidates.warps().size(); ++k) {
    WarpSums s(d);
    add_projected(stats, candidates.transform(k), candidates.base_dim(), &s);
    keep_best(warp_with_diagonal(s, candidates, k, options), &have, &best);
  }
  return best;
}

VtlnChoice choose_vtln_warp_on_alignment(const std::vector<AlignedFrames>& speech, const GaussianMixtures& mixtures,
                                         const LinearVtlnCandidates& candidates, const FmllrStats* earlier,
                                         const VtlnChoiceOptions& options) {
  const int d = candidates.dim();
  if (mixtures.feature_dim() != d)
    throw std::invalid_argument("VTLN: a model of dimension " + std::to_string(mixtures.feature_dim()) +
                                " for features of dimension " + std::to_string(d));
  if (earlier && earlier->beta > 0.0 && earlier->dim != d)
    throw std::invalid_argument("VTLN: earlier statistics of dimension " + std::to_string(earlier->dim) +
                                " for features of dimension " + std::to_string(d));
  int64_t longest = 0;
  for (const AlignedFrames& a : speech) {
    if (a.frames < 0 || (a.frames > 0 && (!a.features || !a.senones)))
      throw std::invalid_argument("VTLN: aligned speech without its features or senones");
    longest = std::max(longest, a.frames);
  }
  std::vector<float> y(static_cast<size_t>(longest) * d);
  VtlnChoice best;
  bool have = false;
  for (size_t k = 0; k < candidates.warps().size(); ++k) {
    const FmllrTransform& warp = candidates.transform(k);
    WarpSums s(d);
    if (earlier && earlier->beta > 0.0) add_projected(*earlier, warp, candidates.base_dim(), &s);
    for (const AlignedFrames& a : speech) {
      if (a.frames == 0) continue;
      warp_frames(warp, candidates.base_dim(), a.features, a.frames, y.data());
      add_frames(mixtures, y.data(), a.frames, supervised_posteriors(mixtures, y.data(), a.frames, a.senones), &s);
    }
    if (!(s.beta > 0.0)) throw std::invalid_argument("VTLN: no aligned frames to choose a warp from");
    keep_best(warp_with_diagonal(s, candidates, k, options), &have, &best);
  }
  return best;
}

}  // namespace gpuspeech
