// Statistics for feature-space MLLR (constrained MLLR, cMLLR).
//
// The transform maps a feature x (dimension d) to x' = A x + b = W xi with
// W = [A b] (d x (d+1)) and xi = [x; 1]. Under a model of diagonal
// Gaussians m with means mu_m and variances sigma²_m, and posteriors
// gamma_t(m) of frame t, the part of the expected log-likelihood that
// depends on W (Gales 1998, "Maximum likelihood linear transformations for
// HMM-based speech recognition"; Povey & Saon 2006, "Feature and model space
// speaker adaptation with full covariance Gaussians") is
//
//   Q(W) = beta ln|det A| + sum_i ( w_i k_iᵀ - ½ w_i G_i w_iᵀ )
//
// with w_i the i-th row of W and, per dimension i,
//   beta = sum_t sum_m gamma_t(m)                               (frames)
//   k_i  = sum_m (mu_mi / sigma²_mi) sum_t gamma_t(m) xi_tᵀ     (row, d+1)
//   G_i  = sum_m (1 / sigma²_mi)     sum_t gamma_t(m) xi_t xi_tᵀ ((d+1)²)
// These are the statistics here; fmllr_estimate.h maximises Q.
//
// Multi-stream models (en-us: three streams of 13): dimension i belongs to
// one stream, and its sums run over that stream's Gaussians with the
// stream's posteriors. The posteriors of each frame sum to the frame's
// weight in every stream, so beta is the same for all dimensions.
//
// How it is computed. Swap the sums: with per-frame scalars
//   v_ti = sum_m gamma_t(m) / sigma²_mi,   u_ti = sum_m gamma_t(m) mu_mi / sigma²_mi
// (cheap, on the host, from the sparse posteriors) the statistics are
//   G_i[p][q] = sum_t v_ti xi_tp xi_tq,   k_i[p] = sum_t u_ti xi_tp,
// one matrix product over frames: with the rows [V U 1]ᵀ ((2d+1) x T) and
// the upper-triangle products xi_tp xi_tq (P = (d+1)(d+2)/2 of them) as rows
// of a P x T matrix, Backend::gemm_nt gives everything in one
// (2d+1) x P product per block of frames (the xi_tp · 1 products give k, the
// 1 · 1 product of the last row gives beta). The products are made on the
// backend from the uploaded features (Backend::extended_outer_products), so
// a frame sends 3d+1 floats, not 2d+1+P. Blocks are summed on the host in
// double. The GEMM is the heavy part (2 (2d+1) P T flops; 0.13 Mflop a
// frame for d = 39), so it runs on cpu, opencl or cuda alike.
// accumulate_fmllr_reference() computes the same sums straight from the
// definitions in double, as the reference for tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/model/gaussian_mixtures.h"

namespace gpuspeech {

struct FmllrStats {
  int dim = 0;
  double beta = 0.0;
  std::vector<double> k;  // dim x (dim + 1): row i is k_i
  std::vector<double> g;  // dim x (dim + 1) x (dim + 1): G_i, full, symmetric

  explicit FmllrStats(int d = 0) { reset(d); }
  void reset(int d);
  // Adds another speaker's or block's statistics of the same dimension
  // (throws std::invalid_argument otherwise).
  void add(const FmllrStats& other);
  // Every sum times f (beta included): the same statistics weighing as
  // f times as many frames; the transform they give does not change.
  void scale(double f);
  // add(other) with other scaled by f first, without a copy.
  void add_scaled(const FmllrStats& other, double f);
  const double* k_row(int i) const { return k.data() + static_cast<size_t>(i) * (dim + 1); }
  const double* g_matrix(int i) const {
    return g.data() + static_cast<size_t>(i) * (dim + 1) * (dim + 1);
  }
  double* g_matrix(int i) { return g.data() + static_cast<size_t>(i) * (dim + 1) * (dim + 1); }
};

// Posteriors of a block of frames, sparse: for frame f and stream s, the
// entries j in [offsets[f * streams + s], offsets[f * streams + s + 1]),
// each a Gaussian of that stream (codebook * density + k, the row of
// GaussianMixtures::means[s] / variances[s]) and its posterior. A frame
// with no entries (unaligned, or weight 0) contributes nothing; a frame's
// entries in each stream sum to its weight (1 unless weighted).
struct GaussianPosteriors {
  int64_t frames = 0;
  int streams = 0;
  std::vector<int64_t> offsets;  // frames * streams + 1
  std::vector<int32_t> gaussian;
  std::vector<float> posterior;
};

// Supervised posteriors: frame f aligned to senone senones[f] (-1: not
// aligned, skipped). In each stream, the posteriors over the senone's
// mixture components, w_k N(x; mu_k, var_k) normalised (in double, on the
// host: a senone has one codebook, so this is density * dim work a frame).
// Components with posterior below `min_posterior` are dropped (and the rest
// renormalised) to keep the lists short. feats: frames x feature_dim().
// Throws std::invalid_argument for a senone id out of range.
GaussianPosteriors supervised_posteriors(const GaussianMixtures& mixtures, const float* feats,
                                         int64_t frames, const int32_t* senones,
                                         double min_posterior = 1e-4);

// Unsupervised posteriors: the model's Gaussians as one flat mixture with
// equal weights, per stream (every Gaussian of every codebook), with the
// top_n highest densities of each frame kept and normalised (Gaussian
// selection, as in acoustic scoring). All densities come from one GEMM per
// stream on the backend ([x², x, 1] expansion around the stream's mean of
// means, as common/scoring/gaussian_scoring.h does); the top-n selection runs on the
// host over the downloaded densities.
class UnsupervisedPosteriors {
 public:
  UnsupervisedPosteriors(const GaussianMixtures& mixtures, Backend& backend, int top_n = 4,
                         int64_t block_frames = 256);
  GaussianPosteriors compute(const float* feats, int64_t frames);
  // Flat-mixture log-likelihood of each frame (log of the mean density of the
  // stream's Gaussians, summed over streams), over the same top_n Gaussians:
  // the quantity the unsupervised statistics increase (EM). Filled by the
  // last compute() when non-null.
  void set_log_likelihood_output(std::vector<double>* out) { loglik_out_ = out; }

 private:
  const GaussianMixtures& mixtures_;
  Backend& backend_;
  int top_n_;
  int64_t block_frames_;
  struct Stream {
    std::vector<double> centre;
    int width = 0;
    BufferPtr coefficients;  // gaussians x width
    BufferPtr expanded;      // block x width
  };
  std::vector<Stream> streams_;
  int64_t per_stream_ = 0;
  BufferPtr densities_;  // per_stream x block
  std::vector<double>* loglik_out_ = nullptr;
};

// Accumulates FmllrStats on a backend (see the top of this file).
class FmllrAccumulator {
 public:
  // Throws std::invalid_argument for an invalid model.
  FmllrAccumulator(const GaussianMixtures& mixtures, Backend& backend,
                   int64_t block_frames = 1024);
  int dim() const { return dim_; }
  // feats: frames x dim on the host; posteriors for the same frames.
  void accumulate(const float* feats, int64_t frames, const GaussianPosteriors& posteriors);
  const FmllrStats& stats() const { return stats_; }
  void reset() { stats_.reset(dim_); }

 private:
  const GaussianMixtures& mixtures_;
  Backend& backend_;
  int dim_;
  int64_t block_frames_;
  int pairs_;                     // (d+1)(d+2)/2
  std::vector<int> stream_of_;    // feature component -> stream
  std::vector<int> index_in_stream_;
  BufferPtr weights_dev_;         // (2d+1) x block
  BufferPtr feats_dev_;           // block x d
  BufferPtr products_dev_;        // pairs x block (Backend::extended_outer_products)
  BufferPtr result_dev_;          // (2d+1) x pairs
  std::vector<float> weights_host_, feats_host_, result_host_;
  FmllrStats stats_;
};

// The same statistics from the definitions, in double on the host.
FmllrStats accumulate_fmllr_reference(const GaussianMixtures& mixtures, const float* feats,
                                      int64_t frames, const GaussianPosteriors& posteriors);

}  // namespace gpuspeech
