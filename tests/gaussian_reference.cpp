#include "tests/gaussian_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuspeech::testing {

namespace {

constexpr double kLogTwoPi = 1.8378770664093454836;

// Centre and spread of feature component d (see RandomModelSpec).
void component_scale(const RandomModelSpec& spec, int d, double* centre, double* spread) {
  const int block = d / 13, i = d % 13;
  *centre = (block == 0 && i == 0) ? spec.c0_centre : 0.0;
  *spread = block == 0 ? spec.cepstral_spread : (block == 1 ? 3.0 : 1.0);
}

}  // namespace

GaussianMixtures random_mixtures(const RandomModelSpec& spec, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  GaussianMixtures gm;
  const int streams = static_cast<int>(spec.stream_dims.size());
  int total = 0;
  for (int d : spec.stream_dims) total += d;
  gm.stream_components.assign(static_cast<size_t>(streams), {});
  if (spec.interleave_components) {
    // Round-robin over the streams that still want components.
    int t = 0;
    for (int c = 0; c < total; ++c) {
      while (static_cast<int>(gm.stream_components[t].size()) == spec.stream_dims[t])
        t = (t + 1) % streams;
      gm.stream_components[t].push_back(c);
      t = (t + 1) % streams;
    }
  } else {
    int c = 0;
    for (int t = 0; t < streams; ++t)
      for (int i = 0; i < spec.stream_dims[t]; ++i) gm.stream_components[t].push_back(c++);
  }
  gm.num_codebooks = spec.num_codebooks;
  gm.gaussians_per_codebook = spec.gaussians_per_codebook;
  gm.num_senones = spec.num_senones;
  const int64_t per_stream = static_cast<int64_t>(spec.num_codebooks) * spec.gaussians_per_codebook;
  for (int t = 0; t < streams; ++t) {
    const int dim = spec.stream_dims[t];
    std::vector<float> mean(static_cast<size_t>(per_stream * dim)), var(mean.size());
    for (int64_t g = 0; g < per_stream; ++g)
      for (int i = 0; i < dim; ++i) {
        double centre, spread;
        component_scale(spec, gm.stream_components[t][i], &centre, &spread);
        mean[g * dim + i] = static_cast<float>(centre + 0.8 * spread * normal(rng));
        const double ratio = spec.min_variance_ratio +
                             (spec.max_variance_ratio - spec.min_variance_ratio) * uni(rng);
        var[g * dim + i] = static_cast<float>(spread * spread * ratio);
      }
    gm.means.push_back(std::move(mean));
    gm.variances.push_back(std::move(var));
  }
  std::uniform_int_distribution<int> codebook(0, spec.num_codebooks - 1);
  for (int s = 0; s < spec.num_senones; ++s)
    gm.senone_codebook.push_back(spec.num_codebooks == spec.num_senones ? s : codebook(rng));
  const int density = spec.gaussians_per_codebook;
  gm.log_weights.resize(static_cast<size_t>(spec.num_senones) * streams * density);
  std::vector<double> w(static_cast<size_t>(density));
  for (int s = 0; s < spec.num_senones; ++s)
    for (int t = 0; t < streams; ++t) {
      // Peaked weights (a few components dominate, as in trained models),
      // some exactly zero, at least one not.
      double sum = 0.0;
      for (double& x : w) {
        x = uni(rng) < spec.zero_weight_fraction ? 0.0 : std::pow(uni(rng), 3.0) + 1e-6;
        sum += x;
      }
      if (sum == 0.0) {
        w[static_cast<size_t>(rng() % density)] = 1.0;
        sum = 1.0;
      }
      float* out = gm.log_weights.data() + (static_cast<size_t>(s) * streams + t) * density;
      for (int k = 0; k < density; ++k)
        out[k] = w[k] > 0.0 ? static_cast<float>(std::log(w[k] / sum))
                            : -std::numeric_limits<float>::infinity();
    }
  return gm;
}

std::vector<float> random_features(const GaussianMixtures& gm, const RandomModelSpec& spec,
                                   int64_t frames, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  const int dim = gm.feature_dim();
  const int64_t per_stream = static_cast<int64_t>(gm.num_codebooks) * gm.gaussians_per_codebook;
  std::uniform_int_distribution<int64_t> gaussian(0, per_stream - 1);
  std::vector<float> x(static_cast<size_t>(frames) * dim);
  for (int64_t f = 0; f < frames; ++f) {
    float* row = x.data() + f * dim;
    if (f % 2 == 0) {
      for (int t = 0; t < gm.num_streams(); ++t) {
        const int64_t g = gaussian(rng);
        const int sd = gm.stream_dim(t);
        for (int i = 0; i < sd; ++i) {
          const double mu = gm.means[t][g * sd + i], var = gm.variances[t][g * sd + i];
          row[gm.stream_components[t][i]] = static_cast<float>(mu + std::sqrt(var) * normal(rng));
        }
      }
    } else {
      for (int d = 0; d < dim; ++d) {
        double centre, spread;
        component_scale(spec, d, &centre, &spread);
        row[d] = static_cast<float>(centre + spread * normal(rng));
      }
    }
  }
  return x;
}

std::vector<double> reference_scores(const GaussianMixtures& gm, const float* feats,
                                     int64_t frames) {
  const int streams = gm.num_streams();
  const int density = gm.gaussians_per_codebook;
  const int64_t per_stream = static_cast<int64_t>(gm.num_codebooks) * density;
  const int dim = gm.feature_dim();
  std::vector<double> out(static_cast<size_t>(frames) * gm.num_senones);
  std::vector<double> log_density(static_cast<size_t>(per_stream) * streams);
  for (int64_t f = 0; f < frames; ++f) {
    const float* x = feats + f * dim;
    for (int t = 0; t < streams; ++t) {
      const int sd = gm.stream_dim(t);
      for (int64_t g = 0; g < per_stream; ++g) {
        double quad = 0.0, norm = 0.0;
        for (int i = 0; i < sd; ++i) {
          const double mu = gm.means[t][g * sd + i], var = gm.variances[t][g * sd + i];
          const double diff = x[gm.stream_components[t][i]] - mu;
          quad += diff * diff / var;
          norm += kLogTwoPi + std::log(var);
        }
        log_density[t * per_stream + g] = -0.5 * (quad + norm);
      }
    }
    for (int s = 0; s < gm.num_senones; ++s) {
      double total = 0.0;
      for (int t = 0; t < streams; ++t) {
        const float* w = gm.log_weights.data() + (static_cast<size_t>(s) * streams + t) * density;
        const double* ld = log_density.data() + t * per_stream +
                           static_cast<int64_t>(gm.senone_codebook[s]) * density;
        double top = -INFINITY;
        for (int k = 0; k < density; ++k)
          if (w[k] != -INFINITY) top = std::max(top, w[k] + ld[k]);
        double sum = 0.0;
        for (int k = 0; k < density; ++k)
          if (w[k] != -INFINITY) sum += std::exp(w[k] + ld[k] - top);
        total += top + std::log(sum);
      }
      out[static_cast<size_t>(f) * gm.num_senones + s] = total;
    }
  }
  return out;
}

double max_abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      if (static_cast<double>(got[i]) != want[i]) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  return worst;
}

}  // namespace gpuspeech::testing
