#include "common/scoring/gaussian_scoring.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

namespace {

// Indices travel to the devices as float32 values (Backend::senone_scores),
// exact below 2^24.
constexpr int64_t kMaxFloatIndex = int64_t(1) << 24;

constexpr double kLogTwoPi = 1.8378770664093454836;  // ln(2 pi)

}  // namespace

MixtureCsr build_mixture_csr(const GaussianMixtures& gm) {
  gm.validate();
  const int streams = gm.num_streams();
  const int density = gm.gaussians_per_codebook;
  const int64_t per_stream = static_cast<int64_t>(gm.num_codebooks) * density;
  if (per_stream * streams >= kMaxFloatIndex)
    throw std::invalid_argument("mixtures: " + std::to_string(per_stream * streams) +
                                " Gaussians over all streams; at most 2^24 - 1 fit the "
                                "float-stored indices of Backend::senone_scores");
  MixtureCsr csr;
  csr.offsets.reserve(static_cast<size_t>(gm.num_senones) * streams + 1);
  csr.offsets.push_back(0.0f);
  for (int s = 0; s < gm.num_senones; ++s) {
    const int64_t first = static_cast<int64_t>(gm.senone_codebook[static_cast<size_t>(s)]) * density;
    for (int t = 0; t < streams; ++t) {
      const float* w = gm.log_weights.data() + (static_cast<size_t>(s) * streams + t) * density;
      for (int k = 0; k < density; ++k) {
        if (w[k] == -INFINITY) continue;
        csr.gaussian.push_back(static_cast<float>(t * per_stream + first + k));
        csr.logw.push_back(w[k]);
      }
      if (static_cast<int64_t>(csr.gaussian.size()) >= kMaxFloatIndex)
        throw std::invalid_argument(
            "mixtures: more than 2^24 - 1 components with a non-zero weight; they do not "
            "fit the float-stored indices of Backend::senone_scores");
      csr.offsets.push_back(static_cast<float>(csr.gaussian.size()));
    }
  }
  return csr;
}

GaussianScorer::GaussianScorer(const GaussianMixtures& gm, Backend& backend,
                               const ScorerOptions& options)
    : backend_(backend), options_(options) {
  if (options_.block_frames < 1)
    throw std::invalid_argument("GaussianScorer: block_frames must be >= 1, got " +
                                std::to_string(options_.block_frames));
  if (options_.top_n < 0 || options_.top_n > Backend::kMaxTopN)
    throw std::invalid_argument("GaussianScorer: top_n must be 0 (all Gaussians) or 1.." +
                                std::to_string(Backend::kMaxTopN) + ", got " +
                                std::to_string(options_.top_n));
  if (!std::isfinite(options_.density_floor) || options_.density_floor < 0.0f)
    throw std::invalid_argument("GaussianScorer: density_floor must be finite and >= 0, got " +
                                std::to_string(options_.density_floor));
  // Validates the model and checks its sizes against the float indices.
  const MixtureCsr csr = build_mixture_csr(gm);
  num_codebooks_ = gm.num_codebooks;
  num_senones_ = gm.num_senones;
  feature_dim_ = gm.feature_dim();
  const int64_t per_stream = static_cast<int64_t>(gm.num_codebooks) * gm.gaussians_per_codebook;
  gaussians_per_stream_ = static_cast<int>(per_stream);
  num_gaussians_ = static_cast<int>(per_stream * gm.num_streams());
  constexpr int64_t kMaxDensityFloats = int64_t(64) << 20;
  options_.block_frames =
      std::max<int64_t>(1, std::min(options_.block_frames, kMaxDensityFloats / num_gaussians_));

  // Stage 1: per stream, the centre and the coefficient rows.
  streams_.resize(static_cast<size_t>(gm.num_streams()));
  for (int t = 0; t < gm.num_streams(); ++t) {
    Stream& st = streams_[static_cast<size_t>(t)];
    const int dim = gm.stream_dim(t);
    st.components = gm.stream_components[static_cast<size_t>(t)];
    st.width = 2 * dim + 1;
    const std::vector<float>& mean = gm.means[static_cast<size_t>(t)];
    const std::vector<float>& var = gm.variances[static_cast<size_t>(t)];
    st.centre.assign(static_cast<size_t>(dim), 0.0);
    if (options_.centre_features) {
      for (int64_t g = 0; g < per_stream; ++g)
        for (int d = 0; d < dim; ++d) st.centre[d] += mean[static_cast<size_t>(g * dim + d)];
      for (double& c : st.centre) c /= static_cast<double>(per_stream);
    }
    st.coefficients.resize(static_cast<size_t>(per_stream) * st.width);
    for (int64_t g = 0; g < per_stream; ++g) {
      float* row = st.coefficients.data() + g * st.width;
      double constant = 0.0;
      for (int d = 0; d < dim; ++d) {
        const double v = var[static_cast<size_t>(g * dim + d)];
        const double mu = mean[static_cast<size_t>(g * dim + d)] - st.centre[d];
        row[d] = static_cast<float>(-0.5 / v);
        row[dim + d] = static_cast<float>(mu / v);
        constant -= 0.5 * (mu * mu / v + kLogTwoPi + std::log(v));
      }
      row[2 * dim] = static_cast<float>(constant);
    }
    st.coefficients_dev = backend_.alloc(st.coefficients.size());
    backend_.upload(*st.coefficients_dev, st.coefficients.data(), st.coefficients.size());
  }

  // Stage 2: the mixtures as CSR rows, or for Gaussian selection each
  // senone's codebook and its dense linear weights.
  num_components_ = static_cast<int64_t>(csr.gaussian.size());
  std::vector<float> codebook, linear_weights;
  if (options_.top_n == 0) {
    csr_offsets_ = backend_.alloc(csr.offsets.size());
    backend_.upload(*csr_offsets_, csr.offsets.data(), csr.offsets.size());
    // Never empty: validate() guarantees a non-zero weight per senone and stream.
    csr_gaussian_ = backend_.alloc(csr.gaussian.size());
    backend_.upload(*csr_gaussian_, csr.gaussian.data(), csr.gaussian.size());
    csr_logw_ = backend_.alloc(csr.logw.size());
    backend_.upload(*csr_logw_, csr.logw.data(), csr.logw.size());
  } else {
    codebook.assign(gm.senone_codebook.begin(), gm.senone_codebook.end());
    senone_codebook_ = backend_.alloc(codebook.size());
    backend_.upload(*senone_codebook_, codebook.data(), codebook.size());
    // Linear weights (Backend::senone_scores_top_n), exp in double and
    // rounded once; a zero weight (-inf) becomes 0.
    linear_weights.resize(gm.log_weights.size());
    for (size_t i = 0; i < linear_weights.size(); ++i)
      linear_weights[i] = static_cast<float>(std::exp(static_cast<double>(gm.log_weights[i])));
    dense_weights_ = backend_.alloc(linear_weights.size());
    backend_.upload(*dense_weights_, linear_weights.data(), linear_weights.size());
  }

  backend_.synchronize();  // the host vectors above go out of scope
}

void GaussianScorer::reserve_frames(int64_t n) {
  if (n <= scratch_frames_) return;
  // Geometric growth up to the block: a few reallocations at most.
  const int64_t frames =
      std::min(options_.block_frames, std::max({n, 2 * scratch_frames_, int64_t{8}}));
  for (Stream& st : streams_)
    st.expanded_dev = backend_.alloc(static_cast<size_t>(frames) * st.width);
  densities_ = backend_.alloc(static_cast<size_t>(num_gaussians_) * frames);
  if (host_out_block_) host_out_block_ = backend_.alloc(static_cast<size_t>(frames) * num_senones_);
  scratch_frames_ = frames;
}

int64_t GaussianScorer::gemm_flops_per_frame() const {
  int64_t flops = 0;
  for (const Stream& st : streams_) flops += 2 * static_cast<int64_t>(gaussians_per_stream_) * st.width;
  return flops;
}

void GaussianScorer::expand_and_upload(const float* feats, int64_t n) {
  reserve_frames(n);
  for (Stream& st : streams_) {
    const int dim = static_cast<int>(st.components.size());
    expanded_host_.resize(static_cast<size_t>(n) * st.width);
    for (int64_t f = 0; f < n; ++f) {
      const float* x = feats + f * feature_dim_;
      float* row = expanded_host_.data() + f * st.width;
      for (int d = 0; d < dim; ++d) {
        const double c = static_cast<double>(x[st.components[d]]) - st.centre[d];
        row[d] = static_cast<float>(c * c);
        row[dim + d] = static_cast<float>(c);
      }
      row[2 * dim] = 1.0f;
    }
    backend_.upload(*st.expanded_dev, expanded_host_.data(), expanded_host_.size());
  }
}

void GaussianScorer::score_block(int64_t n, DeviceBuffer& out, size_t out_offset) {
  for (size_t t = 0; t < streams_.size(); ++t) {
    const Stream& st = streams_[t];
    // densities rows [t * per_stream, (t + 1) * per_stream), n frames wide.
    backend_.gemm_nt(*st.coefficients_dev, gaussians_per_stream_, st.width, *st.expanded_dev,
                     static_cast<int>(n), *densities_, 0,
                     t * static_cast<size_t>(gaussians_per_stream_) * n);
  }
  if (options_.density_floor > 0.0f)
    backend_.floor_densities(*densities_, n, gaussians_per_stream_, num_streams(),
                             options_.density_floor);
  if (options_.top_n > 0)
    backend_.senone_scores_top_n(*densities_, num_codebooks_, gaussians_per_stream_ / num_codebooks_,
                                 n, options_.top_n, *senone_codebook_, *dense_weights_, num_senones_,
                                 num_streams(), out, out_offset);
  else
    backend_.senone_scores(*densities_, num_gaussians_, n, *csr_offsets_, *csr_gaussian_,
                           *csr_logw_, num_senones_, num_streams(), out, out_offset);
}

void GaussianScorer::score(const float* feats, int64_t frames, float* out) {
  if (frames < 0) throw std::invalid_argument("GaussianScorer::score: frames < 0");
  if (frames == 0) return;
  for (int64_t f0 = 0; f0 < frames; f0 += options_.block_frames) {
    const int64_t n = std::min(options_.block_frames, frames - f0);
    expand_and_upload(feats + f0 * feature_dim_, n);
    if (!host_out_block_)
      host_out_block_ = backend_.alloc(static_cast<size_t>(scratch_frames_) * num_senones_);
    score_block(n, *host_out_block_, 0);
    backend_.download(*host_out_block_, out + f0 * num_senones_,
                      static_cast<size_t>(n) * num_senones_);
  }
}

void GaussianScorer::score(const float* feats, int64_t frames, DeviceBuffer& out,
                           size_t out_offset) {
  if (frames < 0) throw std::invalid_argument("GaussianScorer::score: frames < 0");
  for (int64_t f0 = 0; f0 < frames; f0 += options_.block_frames) {
    const int64_t n = std::min(options_.block_frames, frames - f0);
    expand_and_upload(feats + f0 * feature_dim_, n);
    score_block(n, out, out_offset + static_cast<size_t>(f0) * num_senones_);
  }
}

void GaussianScorer::score_device(const DeviceBuffer& feats, int64_t frames, DeviceBuffer& out,
                                  size_t feats_offset, size_t out_offset) {
  if (frames < 0) throw std::invalid_argument("GaussianScorer::score_device: frames < 0");
  for (int64_t f0 = 0; f0 < frames; f0 += options_.block_frames) {
    const int64_t n = std::min(options_.block_frames, frames - f0);
    feats_host_.resize(static_cast<size_t>(n) * feature_dim_);
    backend_.download(feats, feats_host_.data(), feats_host_.size(),
                      feats_offset + static_cast<size_t>(f0) * feature_dim_);
    expand_and_upload(feats_host_.data(), n);
    score_block(n, out, out_offset + static_cast<size_t>(f0) * num_senones_);
  }
}

}  // namespace gpuspeech
