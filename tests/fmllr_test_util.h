// Shared by the fMLLR tests: a small random diagonal-Gaussian model, and
// features drawn from it with their true senones.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "common/fmllr/fmllr_transform.h"
#include "common/model/gaussian_mixtures.h"

namespace gpuspeech::testing {

// `streams` streams splitting `dim` components in interleaved order (so a
// stream's components are not contiguous), one codebook per senone.
inline GaussianMixtures fmllr_test_model(int dim, int streams, int senones, int density,
                                         std::mt19937& rng) {
  GaussianMixtures gm;
  gm.stream_components.resize(static_cast<size_t>(streams));
  for (int c = 0; c < dim; ++c) gm.stream_components[static_cast<size_t>(c % streams)].push_back(c);
  gm.num_codebooks = senones;
  gm.gaussians_per_codebook = density;
  gm.num_senones = senones;
  std::normal_distribution<double> mean(0.0, 3.0);
  std::uniform_real_distribution<double> var(0.3, 2.0), weight(0.3, 1.0);
  gm.means.resize(static_cast<size_t>(streams));
  gm.variances.resize(static_cast<size_t>(streams));
  for (int s = 0; s < streams; ++s)
    for (int i = 0; i < senones * density * gm.stream_dim(s); ++i) {
      gm.means[static_cast<size_t>(s)].push_back(static_cast<float>(mean(rng)));
      gm.variances[static_cast<size_t>(s)].push_back(static_cast<float>(var(rng)));
    }
  for (int s = 0; s < senones; ++s) gm.senone_codebook.push_back(s);
  for (int s = 0; s < senones; ++s)
    for (int t = 0; t < streams; ++t) {
      std::vector<double> w(static_cast<size_t>(density));
      double sum = 0.0;
      for (double& x : w) sum += (x = weight(rng));
      for (double x : w) gm.log_weights.push_back(static_cast<float>(std::log(x / sum)));
    }
  gm.validate();
  return gm;
}

// Frames drawn from the model: a uniformly chosen senone per frame, in each
// stream a component by its weight, each value from its Gaussian.
inline std::vector<float> draw_features(const GaussianMixtures& gm, int64_t frames,
                                        std::vector<int32_t>& senones, std::mt19937& rng) {
  const int d = gm.feature_dim(), density = gm.gaussians_per_codebook;
  std::vector<float> x(static_cast<size_t>(frames * d));
  senones.resize(static_cast<size_t>(frames));
  std::uniform_int_distribution<int> pick(0, gm.num_senones - 1);
  std::normal_distribution<double> z(0.0, 1.0);
  for (int64_t f = 0; f < frames; ++f) {
    const int s = pick(rng);
    senones[static_cast<size_t>(f)] = s;
    for (int t = 0; t < gm.num_streams(); ++t) {
      std::vector<double> w;
      for (int k = 0; k < density; ++k)
        w.push_back(std::exp(gm.log_weights[(static_cast<size_t>(s) * gm.num_streams() + t) * density + k]));
      std::discrete_distribution<int> comp(w.begin(), w.end());
      const int k = comp(rng);
      const int sd = gm.stream_dim(t);
      const size_t row = (static_cast<size_t>(gm.senone_codebook[static_cast<size_t>(s)]) * density + k) * sd;
      for (int j = 0; j < sd; ++j) {
        const int c = gm.stream_components[static_cast<size_t>(t)][static_cast<size_t>(j)];
        x[static_cast<size_t>(f * d + c)] = static_cast<float>(
            gm.means[static_cast<size_t>(t)][row + j] +
            std::sqrt(gm.variances[static_cast<size_t>(t)][row + j]) * z(rng));
      }
    }
  }
  return x;
}

// A well-conditioned random affine map: A = I + small random, b random.
inline FmllrTransform random_affine(int dim, double spread, std::mt19937& rng) {
  FmllrTransform t = FmllrTransform::identity(dim);
  std::uniform_real_distribution<double> u(-spread, spread);
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j <= dim; ++j) t.at(i, j) += (j == dim ? 4.0 : 1.0) * u(rng);
  return t;
}

}  // namespace gpuspeech::testing
