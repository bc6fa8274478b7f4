// Acoustic scoring on a backend: every senone's log-likelihood for a block
// of feature frames, from the Gaussian mixtures of GaussianMixtures.
//
// Two stages, both on the backend:
//
//  1. Every Gaussian of every codebook at every frame of the block, as one
//     matrix product per feature stream. A diagonal Gaussian's log density is
//     linear in [x², x, 1]:
//        log N(x; mu, var) = sum_d (-0.5/var_d) x_d² + (mu_d/var_d) x_d
//                            - 0.5 sum_d (mu_d²/var_d + ln(2 pi var_d)),
//     so with each Gaussian's coefficients as a row of C_t
//     [Gaussians x (2 dim_t + 1)] and each frame's [x², x, 1] as a row of
//     X_t [frames x (2 dim_t + 1)], Backend::gemm_nt gives C_t X_tᵀ: the
//     densities of all Gaussians, gaussian-major, for all frames.
//  2. Backend::senone_scores: per senone and stream, the log-sum-exp of
//     log weight + density over the mixture's components (a CSR list that
//     leaves out zero weights), summed over streams. With
//     ScorerOptions::top_n, Backend::senone_scores_top_n instead: only each
//     codebook's top_n best Gaussians at the frame (pocketsphinx's -topn),
//     ~14x cheaper on the CPU (docs/acoustic-scoring.md).
//
// Precision. Stage 1 in float32 adds terms of size x²/var and cancels them
// down to (x - mu)²/var: the rounding error grows with |x| relative to the
// spread of the Gaussians. Features are therefore centred first: each
// stream's components have a fixed centre (the mean of all the stream's
// Gaussian means, a property of the model) subtracted in double before the
// expansion, and the coefficients are built around the same centre. The log
// densities are unchanged in exact arithmetic; in float32 the error against
// a double evaluation on Sphinx-scale features (c0 around 60-80) drops from
// 2e-4..2e-3 nats to 3e-5..1.5e-4 (tests/test_gaussian_scoring.cpp,
// docs/acoustic-scoring.md).
// Coefficients and the expansion are computed in double and rounded once.
//
// A scorer holds scratch buffers on its backend, which must outlive it; one
// scorer per thread. The scratch grows with the blocks scored (up to
// ScorerOptions::block_frames frames), so a live stream scoring a few
// frames at a time holds a few frames' worth: 16128 Gaussians x 512 frames
// of densities for en-us would be 33 MB a stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/backends/backend.h"
#include "common/model/gaussian_mixtures.h"

namespace gpuspeech {

// The mixtures as Backend::senone_scores takes them: CSR rows
// s * streams + t, each listing senone s's components in stream t with a
// non-zero weight, in component order. Gaussian g of codebook c in stream t
// is densities row t * (num_codebooks * density) + c * density + g.
// Indices are float32 values (exact: the builder throws std::invalid_argument
// when the Gaussians or components reach 2^24).
struct MixtureCsr {
  std::vector<float> offsets;   // num_senones * streams + 1
  std::vector<float> gaussian;  // one per component
  std::vector<float> logw;      // one per component
};
MixtureCsr build_mixture_csr(const GaussianMixtures& mixtures);

struct ScorerOptions {
  // Centre the features (see above). Off only to measure what it buys.
  bool centre_features = true;
  // Frames per pass through both stages; bounds the device scratch at
  // num_gaussians() x block_frames floats of densities (allocated as
  // blocks that large come). Lowered for large
  // models so that this scratch stays within 64 Mi floats (256 MiB).
  int64_t block_frames = 512;
  // Gaussian selection (pocketsphinx -topn): 0 sums every component of each
  // mixture (Backend::senone_scores); 1..Backend::kMaxTopN sums only the
  // top_n Gaussians of each codebook with the highest densities at the
  // frame (Backend::senone_scores_top_n), as pocketsphinx does (its default
  // is 4; RecognizerConfig uses the same). Same definition on every backend.
  int top_n = 0;
  // Bounded deficit of a density (pocketsphinx's ptm and semi-continuous
  // scorers: MAX_NEG_ASCR, 96 << 10 in log base 1.0001 = 9.83 nats): when
  // > 0, after the GEMM and before the mixtures, each frame's densities of
  // each stream are floored at `density_floor` nats below the best of that
  // stream at that frame (Backend::floor_densities, on the scoring
  // backend, so the densities never leave the device). A frame far from
  // every Gaussian (digital silence: c0 some 100 below the mean) then
  // cannot give one codebook a lead of hundreds of nats over the others,
  // which the search would follow through any language-model cost. 0 = off
  // (exact densities). Must be finite and >= 0.
  float density_floor = 0.0f;
};

class GaussianScorer {
 public:
  // Validates `mixtures` (GaussianMixtures::validate) and uploads the
  // coefficients and mixture weights once. Throws std::invalid_argument for
  // an invalid model or one too large for float-stored indices (2^24
  // Gaussians or mixture components), BackendError for device failures.
  GaussianScorer(const GaussianMixtures& mixtures, Backend& backend,
                 const ScorerOptions& options = {});

  int num_senones() const { return num_senones_; }
  int feature_dim() const { return feature_dim_; }
  int num_streams() const { return static_cast<int>(streams_.size()); }
  // Gaussians over all streams (rows of the densities).
  int num_gaussians() const { return num_gaussians_; }
  // Mixture components over all senones and streams, zero weights left out.
  int64_t num_components() const { return num_components_; }
  // Floating-point operations of stage 1 per frame (2 per multiply-add).
  int64_t gemm_flops_per_frame() const;
  Backend& backend() const { return backend_; }
  // Frames per pass (ScorerOptions::block_frames, after the cap).
  int64_t block_frames() const { return options_.block_frames; }
  // ScorerOptions::top_n (0: full mixtures).
  int top_n() const { return options_.top_n; }

  // feats: frames x feature_dim(), row-major, on the host.
  // out: frames x num_senones(), natural-log likelihoods, on the host.
  void score(const float* feats, int64_t frames, float* out);
  // Host features, scores left on the device for the search:
  // out[out_offset + f * num_senones() + s].
  void score(const float* feats, int64_t frames, DeviceBuffer& out, size_t out_offset = 0);
  // Features already on the device (frames x feature_dim() floats from
  // feats_offset). The [x², x, 1] expansion runs on the host, so each block
  // of features (feature_dim() floats a frame, against num_senones() floats
  // of scores that stay on the device) is downloaded once; the backend
  // interface has no element-wise square, and one was not worth adding.
  void score_device(const DeviceBuffer& feats, int64_t frames, DeviceBuffer& out,
                    size_t feats_offset = 0, size_t out_offset = 0);

  // The centre subtracted from stream t's components (zeros when centring
  // is off), and the stream's coefficient matrix as uploaded:
  // (num_codebooks * density) x (2 dim_t + 1), rows [-0.5/var, (mu - centre)/var, const].
  const std::vector<double>& centre(int t) const { return streams_[t].centre; }
  const std::vector<float>& coefficients(int t) const { return streams_[t].coefficients; }

 private:
  struct Stream {
    std::vector<int> components;  // feature components of this stream
    std::vector<double> centre;   // one per component
    std::vector<float> coefficients;
    BufferPtr coefficients_dev;
    BufferPtr expanded_dev;       // scratch_frames_ x (2 dim + 1)
    int width = 0;                // 2 dim + 1
  };

  // Expands frames [first, first + n) of host features into each stream's
  // [x², x, 1] rows and uploads them.
  void expand_and_upload(const float* feats, int64_t n);
  // Grows the scratch buffers to hold blocks of n frames (n <= block_frames).
  void reserve_frames(int64_t n);
  // Both stages for the uploaded block of n frames.
  void score_block(int64_t n, DeviceBuffer& out, size_t out_offset);

  Backend& backend_;
  ScorerOptions options_;
  int num_senones_ = 0;
  int feature_dim_ = 0;
  int gaussians_per_stream_ = 0;
  int num_gaussians_ = 0;
  int64_t num_components_ = 0;
  std::vector<Stream> streams_;
  int num_codebooks_ = 0;
  BufferPtr csr_offsets_, csr_gaussian_, csr_logw_;  // full mixtures (top_n 0)
  BufferPtr senone_codebook_, dense_weights_;        // Gaussian selection (top_n > 0)
  int64_t scratch_frames_ = 0;   // frames the scratch below holds
  BufferPtr densities_;          // num_gaussians x scratch_frames_
  BufferPtr host_out_block_;     // scratch_frames_ x num_senones, for score() to host
  std::vector<float> expanded_host_;
  std::vector<float> feats_host_;
};

}  // namespace gpuspeech
