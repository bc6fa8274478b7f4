// A speaker's VTLN warp chosen from its fMLLR statistics, as a feature
// transform: the linear VTLN matrix of the chosen warp (linear_vtln.h)
// followed by the best diagonal transform of the warped features.
//
// Why. On a stream's or a speaker's first few seconds a full fMLLR
// transform (1 560 parameters for 39 features) or three blocks of one (546)
// learns from a first pass that is often badly wrong on hard audio, and
// learns its errors with it; one warp factor and a diagonal scaling (78
// parameters) cannot. Decoding again under the warp gives a better
// alignment for the full estimate that follows. On degraded synthetic
// speech (docs/benchmarks.md, "VTLN on the cepstra") the right warp per
// voice decoded a single pass better than a sentence's own full fMLLR.
//
// How. For each candidate warp w with matrix A_w (block-diagonal, one copy
// per block of the frame), the statistics of x are statistics of y = A_w x
// seen row by row: row i of the transform "A_w, then a_i, b_i on dimension
// i" is a_i times row i of A_w plus b_i, so its part of
//   Q(W) = beta ln|det A| + sum_i ( w_i k_iᵀ - ½ w_i G_i w_iᵀ )
// (fmllr_stats.h) is the diagonal update's 2 x 2 problem with G_i and k_i
// projected on row i of A_w (diagonal_row_estimate); the diagonal scaling
// lets each warp's features take the model's scale (Kaldi's linear VTLN
// estimates an offset or a diagonal after each warp the same way). The
// warp whose transform has the largest Q is chosen, by default without
// the warp matrix's own Jacobian (beta ln|det A_w|), the diagonal's kept:
// as with a warped filterbank, whose features are taken as they come.
// The matrix's determinant is below 1 for every warp, mostly from the
// cepstral truncation's smoothing rather than from the speech (-0.1 to
// -3.3 nats a frame for 39 features at 0.88-1.12), and with it the choice
// stayed within 0.96-1.04 and gained less (docs/benchmarks.md, "VTLN on
// the cepstra"). Cost per estimate: a candidate costs d (b² + (d+1)²)
// multiply-adds (b = base_dim(): 13); 21 candidates, about 1.4 M for
// d = 39.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/features/feature_options.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/model/gaussian_mixtures.h"

namespace gpuspeech {

struct VtlnChoiceOptions {
  // The candidate warps: min_warp to max_warp in steps of `step` (1 among
  // them when the grid passes it). 0.80-1.20 is the range of adult voices
  // that Sphinx's and Kaldi's VTLN recipes search.
  double min_warp = 0.80;
  double max_warp = 1.20;
  double step = 0.02;
  // Count the warp matrix's ln|det| in the objective (see the top).
  bool warp_jacobian = false;
  // Throws std::invalid_argument naming the bad value.
  void validate() const;
};

// The candidates of one front end: a warp and its transform [A_w 0] on the
// features the decoder sees (dimension `feature_dim`).
class LinearVtlnCandidates {
 public:
  // Throws std::invalid_argument when linear VTLN does not apply to the
  // front end (not MFCC, a layout that mixes the cepstra, or a
  // feature_dim other than its output_dim()) or a warp of the grid does
  // not pass check_vtln.
  LinearVtlnCandidates(const FeatureOptions& front_end, int feature_dim, const VtlnChoiceOptions& options = {});
  int dim() const { return dim_; }
  int base_dim() const { return base_; }
  const std::vector<double>& warps() const { return warps_; }
  const FmllrTransform& transform(size_t k) const { return transforms_[k]; }

 private:
  int dim_ = 0, base_ = 0;
  std::vector<double> warps_;
  std::vector<FmllrTransform> transforms_;
};

struct VtlnChoice {
  double warp = 1.0;
  size_t index = 0;  // of the warp among the candidates
  // The warp's matrix followed by the diagonal transform chosen with it.
  FmllrTransform transform;
  // Q / beta of that transform, and of the diagonal transform alone (warp
  // 1); without the warp's Jacobian unless VtlnChoiceOptions asks for it.
  double objective = 0.0;
  double unwarped_objective = 0.0;
  // Every candidate's, in the candidates' order (objective is the largest).
  std::vector<double> objectives;
};

// The choice from statistics alone: every warp is scored on the same
// statistics, whose posteriors came from the features decoded (the first
// pass's, unwarped). Throws std::invalid_argument when the statistics'
// dimension is not the candidates' or they hold no frames (beta <= 0).
VtlnChoice choose_vtln_warp(const FmllrStats& stats, const LinearVtlnCandidates& candidates,
                            const VtlnChoiceOptions& options = {});

// A stretch of a speaker's speech with its alignment: `frames` rows of the
// features as the decoder takes them unadapted (the candidates' dimension)
// and the senone each frame was aligned to (-1: not aligned, left out).
struct AlignedFrames {
  const float* features = nullptr;
  int64_t frames = 0;
  const int32_t* senones = nullptr;
};

// The choice with each warp's own posteriors: for each candidate the
// speech is warped (y = A_w x), each aligned frame's posteriors over its
// senone's Gaussians are recomputed on y, and the warp with its best
// diagonal transform is scored on those statistics. `earlier` (may be
// null or empty): statistics of the speaker's speech whose frames are
// gone, added to every warp's as choose_vtln_warp sees them.
//
// Why. Statistics from one pass carry the posteriors the unwarped features
// gave: each warp is scored by how well its features fit the Gaussians the
// unwarped ones picked, which favours warps near 1. On the degraded
// 24-sentence set the live decoder chose 0.96-1.02 for every voice from
// such statistics, where decodings at each warp pointed to 0.88-0.92 for
// one voice and 1.04-1.08 for the others; with each warp's own posteriors
// the choice moved the way the decodings did (docs/benchmarks.md, "VTLN
// on the cepstra"). The alignment (which senone each frame belongs to)
// stays the first pass's: only the Gaussians within each senone move.
//
// Cost: per candidate, the warp (d·b multiply-adds a frame) and the
// supervised posteriors (a senone's Gaussians, density·d a frame) of every
// aligned frame; for en-us (128 Gaussians a codebook, d = 39) and 21
// candidates about 30 Mflop a second of speech, on the host.
//
// Throws std::invalid_argument when the model's or the earlier
// statistics' dimension is not the candidates', a stretch lacks its
// pointers, a senone is out of range, or nothing is aligned.
VtlnChoice choose_vtln_warp_on_alignment(const std::vector<AlignedFrames>& speech, const GaussianMixtures& mixtures,
                                         const LinearVtlnCandidates& candidates, const FmllrStats* earlier = nullptr,
                                         const VtlnChoiceOptions& options = {});

}  // namespace gpuspeech
