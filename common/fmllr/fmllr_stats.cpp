#include "common/fmllr/fmllr_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/scoring/weighted_distances.h"

namespace gpuspeech {

namespace {

constexpr double kLogTwoPi = 1.8378770664093453;

// Which stream each feature component belongs to, and its index there.
void map_components(const GaussianMixtures& gm, std::vector<int>& stream_of,
                    std::vector<int>& index_in_stream) {
  const int d = gm.feature_dim();
  stream_of.assign(static_cast<size_t>(d), -1);
  index_in_stream.assign(static_cast<size_t>(d), -1);
  for (int s = 0; s < gm.num_streams(); ++s)
    for (int j = 0; j < gm.stream_dim(s); ++j) {
      const int c = gm.stream_components[static_cast<size_t>(s)][static_cast<size_t>(j)];
      stream_of[static_cast<size_t>(c)] = s;
      index_in_stream[static_cast<size_t>(c)] = j;
    }
}

void check_posteriors(const GaussianMixtures& gm, int64_t frames, const GaussianPosteriors& p) {
  const int64_t per_stream = static_cast<int64_t>(gm.num_codebooks) * gm.gaussians_per_codebook;
  if (p.frames != frames || p.streams != gm.num_streams() ||
      p.offsets.size() != static_cast<size_t>(frames * p.streams + 1) ||
      p.gaussian.size() != p.posterior.size() || p.offsets.front() != 0 ||
      p.offsets.back() != static_cast<int64_t>(p.gaussian.size()))
    throw std::invalid_argument("fMLLR: posteriors do not match the frames (" +
                                std::to_string(p.frames) + " frames, " +
                                std::to_string(p.streams) + " streams; expected " +
                                std::to_string(frames) + " and " +
                                std::to_string(gm.num_streams()) + ")");
  for (size_t r = 0; r + 1 < p.offsets.size(); ++r)
    if (p.offsets[r] > p.offsets[r + 1])
      throw std::invalid_argument("fMLLR: posterior offsets decrease");
  for (size_t j = 0; j < p.gaussian.size(); ++j) {
    if (p.gaussian[j] < 0 || p.gaussian[j] >= per_stream)
      throw std::invalid_argument("fMLLR: posterior names Gaussian " +
                                  std::to_string(p.gaussian[j]) + ", the model has " +
                                  std::to_string(per_stream) + " per stream");
    if (!(p.posterior[j] >= 0.0f) || !std::isfinite(p.posterior[j]))
      throw std::invalid_argument("fMLLR: a posterior is negative or not finite");
  }
}

}  // namespace

void FmllrStats::reset(int d) {
  if (d < 0) throw std::invalid_argument("fMLLR statistics: negative dimension");
  dim = d;
  beta = 0.0;
  k.assign(static_cast<size_t>(d) * (d + 1), 0.0);
  g.assign(static_cast<size_t>(d) * (d + 1) * (d + 1), 0.0);
}

void FmllrStats::add(const FmllrStats& other) {
  if (other.dim != dim)
    throw std::invalid_argument("fMLLR statistics: adding dimension " + std::to_string(other.dim) +
                                " to dimension " + std::to_string(dim));
  beta += other.beta;
  for (size_t i = 0; i < k.size(); ++i) k[i] += other.k[i];
  for (size_t i = 0; i < g.size(); ++i) g[i] += other.g[i];
}

void FmllrStats::scale(double f) {
  beta *= f;
  for (double& v : k) v *= f;
  for (double& v : g) v *= f;
}

void FmllrStats::add_scaled(const FmllrStats& other, double f) {
  if (other.dim != dim)
    throw std::invalid_argument("fMLLR statistics: adding dimension " + std::to_string(other.dim) +
                                " to dimension " + std::to_string(dim));
  beta += f * other.beta;
  for (size_t i = 0; i < k.size(); ++i) k[i] += f * other.k[i];
  for (size_t i = 0; i < g.size(); ++i) g[i] += f * other.g[i];
}

GaussianPosteriors supervised_posteriors(const GaussianMixtures& gm, const float* feats,
                                         int64_t frames, const int32_t* senones,
                                         double min_posterior) {
  gm.validate();
  const int streams = gm.num_streams();
  const int density = gm.gaussians_per_codebook;
  const int d = gm.feature_dim();
  GaussianPosteriors out;
  out.frames = frames;
  out.streams = streams;
  out.offsets.reserve(static_cast<size_t>(frames * streams + 1));
  out.offsets.push_back(0);
  std::vector<double> logp(static_cast<size_t>(density)), q(static_cast<size_t>(density)),
      xs(static_cast<size_t>(d));
  // Per (stream, Gaussian) of the codebooks met: 1 / variance and
  // -0.5 (sum ln variance + d ln 2 pi), made at a codebook's first frame
  // (an utterance meets few of them; the logarithms per frame were most
  // of this function's time).
  std::vector<std::vector<double>> inv_var(static_cast<size_t>(streams)),
      log_norm(static_cast<size_t>(streams));
  std::vector<uint8_t> ready(static_cast<size_t>(gm.num_codebooks), 0);
  for (int s = 0; s < streams; ++s) {
    inv_var[static_cast<size_t>(s)].resize(gm.variances[static_cast<size_t>(s)].size());
    log_norm[static_cast<size_t>(s)].resize(static_cast<size_t>(gm.num_codebooks) * density);
  }
  auto prepare = [&](int cb) {
    for (int s = 0; s < streams; ++s) {
      const int sd = gm.stream_dim(s);
      const std::vector<float>& var = gm.variances[static_cast<size_t>(s)];
      for (int k = 0; k < density; ++k) {
        const size_t g = static_cast<size_t>(cb) * density + k;
        double sum_log = 0.0;
        for (int j = 0; j < sd; ++j) {
          const double v = var[g * sd + j];
          inv_var[static_cast<size_t>(s)][g * sd + j] = 1.0 / v;
          sum_log += std::log(v);
        }
        log_norm[static_cast<size_t>(s)][g] = -0.5 * (sum_log + sd * kLogTwoPi);
      }
    }
    ready[static_cast<size_t>(cb)] = 1;
  };
  for (int64_t f = 0; f < frames; ++f) {
    const int32_t sen = senones[f];
    if (sen >= gm.num_senones || sen < -1)
      throw std::invalid_argument("fMLLR: frame " + std::to_string(f) + " is aligned to senone " +
                                  std::to_string(sen) + ", the model has " +
                                  std::to_string(gm.num_senones));
    const float* x = feats + f * d;
    if (sen >= 0 && !ready[static_cast<size_t>(gm.senone_codebook[static_cast<size_t>(sen)])])
      prepare(gm.senone_codebook[static_cast<size_t>(sen)]);
    for (int s = 0; s < streams; ++s) {
      if (sen >= 0) {
        const int cb = gm.senone_codebook[static_cast<size_t>(sen)];
        const int sd = gm.stream_dim(s);
        const double* iv = inv_var[static_cast<size_t>(s)].data();
        const double* ln = log_norm[static_cast<size_t>(s)].data();
        const std::vector<int>& comp = gm.stream_components[static_cast<size_t>(s)];
        const float* lw = gm.log_weights.data() +
                          (static_cast<size_t>(sen) * streams + s) * density;
        double best = -std::numeric_limits<double>::infinity();
        const size_t first_g = static_cast<size_t>(cb) * density;
        for (int j = 0; j < sd; ++j) xs[static_cast<size_t>(j)] = x[comp[static_cast<size_t>(j)]];
        weighted_squared_distances(xs.data(), gm.means[static_cast<size_t>(s)].data() + first_g * sd,
                                   iv + first_g * sd, sd, density, q.data());
        for (int k = 0; k < density; ++k) {
          if (std::isinf(lw[k])) {
            logp[static_cast<size_t>(k)] = -std::numeric_limits<double>::infinity();
            continue;
          }
          const size_t g = first_g + k;
          const double acc = lw[k] + ln[g] - 0.5 * q[static_cast<size_t>(k)];
          logp[static_cast<size_t>(k)] = acc;
          best = std::max(best, acc);
        }
        if (!std::isfinite(best))
          throw std::invalid_argument("fMLLR: frame " + std::to_string(f) +
                                      " has no finite likelihood under senone " +
                                      std::to_string(sen) + " (features not finite?)");
        double total = 0.0;
        for (int k = 0; k < density; ++k) {
          const double p = std::exp(logp[static_cast<size_t>(k)] - best);
          logp[static_cast<size_t>(k)] = p;
          total += p;
        }
        double kept = 0.0;
        const size_t first = out.gaussian.size();
        for (int k = 0; k < density; ++k) {
          const double p = logp[static_cast<size_t>(k)] / total;
          if (p >= min_posterior || p == 1.0) {
            out.gaussian.push_back(cb * density + k);
            out.posterior.push_back(static_cast<float>(p));
            kept += p;
          }
        }
        for (size_t j = first; j < out.posterior.size(); ++j)
          out.posterior[j] = static_cast<float>(out.posterior[j] / kept);
      }
      out.offsets.push_back(static_cast<int64_t>(out.gaussian.size()));
    }
  }
  return out;
}

UnsupervisedPosteriors::UnsupervisedPosteriors(const GaussianMixtures& gm, Backend& backend,
                                               int top_n, int64_t block_frames)
    : mixtures_(gm), backend_(backend), top_n_(top_n), block_frames_(block_frames) {
  gm.validate();
  per_stream_ = static_cast<int64_t>(gm.num_codebooks) * gm.gaussians_per_codebook;
  if (top_n < 1 || top_n > per_stream_)
    throw std::invalid_argument("fMLLR: top_n " + std::to_string(top_n) + " outside 1.." +
                                std::to_string(per_stream_));
  if (block_frames < 1) throw std::invalid_argument("fMLLR: block_frames < 1");
  streams_.resize(static_cast<size_t>(gm.num_streams()));
  for (int s = 0; s < gm.num_streams(); ++s) {
    Stream& st = streams_[static_cast<size_t>(s)];
    const int sd = gm.stream_dim(s);
    st.width = 2 * sd + 1;
    const std::vector<float>& mean = gm.means[static_cast<size_t>(s)];
    const std::vector<float>& var = gm.variances[static_cast<size_t>(s)];
    // Centred expansion: float32 rounding of x² / var terms stays small
    // (the reason is in common/scoring/gaussian_scoring.h).
    st.centre.assign(static_cast<size_t>(sd), 0.0);
    for (int64_t g = 0; g < per_stream_; ++g)
      for (int j = 0; j < sd; ++j) st.centre[static_cast<size_t>(j)] += mean[static_cast<size_t>(g * sd + j)];
    for (double& c : st.centre) c /= static_cast<double>(per_stream_);
    std::vector<float> coef(static_cast<size_t>(per_stream_ * st.width));
    for (int64_t g = 0; g < per_stream_; ++g) {
      float* row = coef.data() + g * st.width;
      double constant = 0.0;
      for (int j = 0; j < sd; ++j) {
        const double v = var[static_cast<size_t>(g * sd + j)];
        const double mu = mean[static_cast<size_t>(g * sd + j)] - st.centre[static_cast<size_t>(j)];
        row[j] = static_cast<float>(-0.5 / v);
        row[sd + j] = static_cast<float>(mu / v);
        constant -= 0.5 * (mu * mu / v + kLogTwoPi + std::log(v));
      }
      row[2 * sd] = static_cast<float>(constant);
    }
    st.coefficients = backend_.alloc(coef.size());
    backend_.upload(*st.coefficients, coef.data(), coef.size());
    st.expanded = backend_.alloc(static_cast<size_t>(block_frames_ * st.width));
  }
  densities_ = backend_.alloc(static_cast<size_t>(per_stream_ * block_frames_));
}

GaussianPosteriors UnsupervisedPosteriors::compute(const float* feats, int64_t frames) {
  const GaussianMixtures& gm = mixtures_;
  const int streams = gm.num_streams();
  const int d = gm.feature_dim();
  const int n = top_n_;
  GaussianPosteriors out;
  out.frames = frames;
  out.streams = streams;
  out.offsets.assign(static_cast<size_t>(frames * streams + 1), 0);
  out.gaussian.resize(static_cast<size_t>(frames * streams * n));
  out.posterior.resize(out.gaussian.size());
  if (loglik_out_) loglik_out_->assign(static_cast<size_t>(frames), 0.0);
  const double log_count = std::log(static_cast<double>(per_stream_));
  std::vector<float> expanded, dens(static_cast<size_t>(per_stream_ * block_frames_));
  std::vector<int32_t> top(static_cast<size_t>(n));
  std::vector<float> topv(static_cast<size_t>(n));
  for (int64_t first = 0; first < frames; first += block_frames_) {
    const int64_t m = std::min(block_frames_, frames - first);
    for (int s = 0; s < streams; ++s) {
      Stream& st = streams_[static_cast<size_t>(s)];
      const int sd = gm.stream_dim(s);
      const std::vector<int>& comp = gm.stream_components[static_cast<size_t>(s)];
      expanded.assign(static_cast<size_t>(m * st.width), 0.0f);
      for (int64_t f = 0; f < m; ++f) {
        const float* x = feats + (first + f) * d;
        float* row = expanded.data() + f * st.width;
        for (int j = 0; j < sd; ++j) {
          const double c = x[comp[static_cast<size_t>(j)]] - st.centre[static_cast<size_t>(j)];
          row[j] = static_cast<float>(c * c);
          row[sd + j] = static_cast<float>(c);
        }
        row[2 * sd] = 1.0f;
      }
      backend_.upload(*st.expanded, expanded.data(), expanded.size());
      // densities (gaussians x m) = coefficients (gaussians x width) * expandedᵀ
      backend_.gemm_nt(*st.coefficients, per_stream_, st.width, *st.expanded,
                       static_cast<int>(m), *densities_);
      backend_.download(*densities_, dens.data(), static_cast<size_t>(per_stream_ * m));
      for (int64_t f = 0; f < m; ++f) {
        // Top n by density, highest first.
        int filled = 0;
        for (int64_t g = 0; g < per_stream_; ++g) {
          const float v = dens[static_cast<size_t>(g * m + f)];
          if (filled == n && !(v > topv[static_cast<size_t>(n - 1)])) continue;
          int pos = filled < n ? filled++ : n - 1;
          while (pos > 0 && topv[static_cast<size_t>(pos - 1)] < v) {
            topv[static_cast<size_t>(pos)] = topv[static_cast<size_t>(pos - 1)];
            top[static_cast<size_t>(pos)] = top[static_cast<size_t>(pos - 1)];
            --pos;
          }
          topv[static_cast<size_t>(pos)] = v;
          top[static_cast<size_t>(pos)] = static_cast<int32_t>(g);
        }
        if (filled < n || !std::isfinite(topv[0]))
          throw std::invalid_argument("fMLLR: frame " + std::to_string(first + f) +
                                      " has no finite Gaussian densities (features not finite?)");
        double total = 0.0;
        for (int i = 0; i < n; ++i) total += std::exp(static_cast<double>(topv[static_cast<size_t>(i)]) - topv[0]);
        const size_t base = static_cast<size_t>(((first + f) * streams + s) * n);
        for (int i = 0; i < n; ++i) {
          out.gaussian[base + i] = top[static_cast<size_t>(i)];
          out.posterior[base + i] = static_cast<float>(
              std::exp(static_cast<double>(topv[static_cast<size_t>(i)]) - topv[0]) / total);
        }
        if (loglik_out_)
          (*loglik_out_)[static_cast<size_t>(first + f)] += topv[0] + std::log(total) - log_count;
      }
    }
  }
  for (size_t r = 0; r < out.offsets.size(); ++r) out.offsets[r] = static_cast<int64_t>(r) * n;
  return out;
}

FmllrAccumulator::FmllrAccumulator(const GaussianMixtures& gm, Backend& backend,
                                   int64_t block_frames)
    : mixtures_(gm), backend_(backend), dim_(0), block_frames_(block_frames) {
  gm.validate();
  if (block_frames < 1) throw std::invalid_argument("fMLLR: block_frames < 1");
  dim_ = gm.feature_dim();
  pairs_ = (dim_ + 1) * (dim_ + 2) / 2;
  map_components(gm, stream_of_, index_in_stream_);
  const int rows = 2 * dim_ + 1;
  weights_dev_ = backend_.alloc(static_cast<size_t>(rows * block_frames_));
  feats_dev_ = backend_.alloc(static_cast<size_t>(dim_ * block_frames_));
  products_dev_ = backend_.alloc(static_cast<size_t>(pairs_ * block_frames_));
  result_dev_ = backend_.alloc(static_cast<size_t>(rows) * pairs_);
  stats_.reset(dim_);
}

void FmllrAccumulator::accumulate(const float* feats, int64_t frames,
                                  const GaussianPosteriors& post) {
  const GaussianMixtures& gm = mixtures_;
  check_posteriors(gm, frames, post);
  const int d = dim_, rows = 2 * d + 1, streams = gm.num_streams();
  for (int64_t first = 0; first < frames; first += block_frames_) {
    const int64_t m = std::min(block_frames_, frames - first);
    // [V U w]ᵀ: row i = v_.i, row d + i = u_.i, row 2d = frame weight.
    weights_host_.assign(static_cast<size_t>(rows * m), 0.0f);
    // The block's features; a frame without posterior weight is sent as
    // zeros, so that its products are finite whatever its values (they
    // meet zero weights in the GEMM: 0 x NaN would poison every sum).
    feats_host_.assign(static_cast<size_t>(d * m), 0.0f);
    std::vector<double> v(static_cast<size_t>(d)), u(static_cast<size_t>(d));
    for (int64_t f = 0; f < m; ++f) {
      const int64_t t = first + f;
      std::fill(v.begin(), v.end(), 0.0);
      std::fill(u.begin(), u.end(), 0.0);
      double weight = 0.0;
      for (int s = 0; s < streams; ++s) {
        const int sd = gm.stream_dim(s);
        const std::vector<int>& comp = gm.stream_components[static_cast<size_t>(s)];
        const std::vector<float>& mean = gm.means[static_cast<size_t>(s)];
        const std::vector<float>& var = gm.variances[static_cast<size_t>(s)];
        for (int64_t j = post.offsets[static_cast<size_t>(t * streams + s)];
             j < post.offsets[static_cast<size_t>(t * streams + s + 1)]; ++j) {
          const double gamma = post.posterior[static_cast<size_t>(j)];
          if (s == 0) weight += gamma;
          const size_t row = static_cast<size_t>(post.gaussian[static_cast<size_t>(j)]) * sd;
          for (int c = 0; c < sd; ++c) {
            const double inv = gamma / var[row + c];
            v[static_cast<size_t>(comp[static_cast<size_t>(c)])] += inv;
            u[static_cast<size_t>(comp[static_cast<size_t>(c)])] += inv * mean[row + c];
          }
        }
      }
      if (weight == 0.0) continue;  // nothing aligned: the columns stay zero
      for (int i = 0; i < d; ++i) {
        weights_host_[static_cast<size_t>(i * m + f)] = static_cast<float>(v[static_cast<size_t>(i)]);
        weights_host_[static_cast<size_t>((d + i) * m + f)] = static_cast<float>(u[static_cast<size_t>(i)]);
      }
      weights_host_[static_cast<size_t>(2 * d * m + f)] = static_cast<float>(weight);
      std::copy(feats + t * d, feats + (t + 1) * d, feats_host_.begin() + f * d);
    }
    backend_.upload(*weights_dev_, weights_host_.data(), weights_host_.size());
    backend_.upload(*feats_dev_, feats_host_.data(), feats_host_.size());
    // The products xi_p xi_q of [x; 1] on the device: d floats a frame to
    // send instead of (d + 1)(d + 2) / 2 (39 instead of 820 for d = 39).
    backend_.extended_outer_products(*feats_dev_, m, d, *products_dev_);
    backend_.gemm_nt(*weights_dev_, rows, static_cast<int>(m), *products_dev_, pairs_, *result_dev_);
    result_host_.resize(static_cast<size_t>(rows) * pairs_);
    backend_.download(*result_dev_, result_host_.data(), result_host_.size());
    // Unpack: pair (p, q) of row i into G_i[p][q] and G_i[q][p]; the pairs
    // (p, d) of row d + i into k_i[p]; (d, d) of the weight row into beta.
    const int n = d + 1;
    for (int i = 0; i < d; ++i) {
      double* gi = stats_.g_matrix(i);
      const float* gr = result_host_.data() + static_cast<size_t>(i) * pairs_;
      const float* kr = result_host_.data() + static_cast<size_t>(d + i) * pairs_;
      int pair = 0;
      for (int p = 0; p <= d; ++p)
        for (int q = p; q <= d; ++q, ++pair) {
          gi[p * n + q] += gr[pair];
          if (q != p) gi[q * n + p] += gr[pair];
          if (q == d) stats_.k[static_cast<size_t>(i) * n + p] += kr[pair];
        }
    }
    stats_.beta += result_host_[static_cast<size_t>(2 * d) * pairs_ + pairs_ - 1];
  }
}

FmllrStats accumulate_fmllr_reference(const GaussianMixtures& gm, const float* feats,
                                      int64_t frames, const GaussianPosteriors& post) {
  gm.validate();
  check_posteriors(gm, frames, post);
  const int d = gm.feature_dim(), n = d + 1, streams = gm.num_streams();
  FmllrStats st(d);
  std::vector<double> xi(static_cast<size_t>(n));
  for (int64_t t = 0; t < frames; ++t) {
    for (int p = 0; p < d; ++p) xi[static_cast<size_t>(p)] = feats[t * d + p];
    xi[static_cast<size_t>(d)] = 1.0;
    for (int s = 0; s < streams; ++s) {
      const int sd = gm.stream_dim(s);
      const std::vector<int>& comp = gm.stream_components[static_cast<size_t>(s)];
      for (int64_t j = post.offsets[static_cast<size_t>(t * streams + s)];
           j < post.offsets[static_cast<size_t>(t * streams + s + 1)]; ++j) {
        const double gamma = post.posterior[static_cast<size_t>(j)];
        if (s == 0) st.beta += gamma;
        const size_t row = static_cast<size_t>(post.gaussian[static_cast<size_t>(j)]) * sd;
        for (int c = 0; c < sd; ++c) {
          const int i = comp[static_cast<size_t>(c)];
          const double var = gm.variances[static_cast<size_t>(s)][row + c];
          const double mu = gm.means[static_cast<size_t>(s)][row + c];
          double* gi = st.g_matrix(i);
          double* ki = st.k.data() + static_cast<size_t>(i) * n;
          for (int p = 0; p < n; ++p) {
            ki[p] += gamma * mu / var * xi[static_cast<size_t>(p)];
            for (int q = 0; q < n; ++q)
              gi[p * n + q] += gamma / var * xi[static_cast<size_t>(p)] * xi[static_cast<size_t>(q)];
          }
        }
      }
    }
  }
  return st;
}

}  // namespace gpuspeech
