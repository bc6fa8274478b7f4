// Random Gaussian-mixture acoustic models and features of realistic scale,
// and a direct double-precision evaluation of the senone log-likelihoods, for
// the GaussianScorer tests (test_gaussian_scoring*.cpp).
//
// The reference follows the textbook definition, not the scorer's algebra:
// for each Gaussian, -0.5 sum_d (x_d - mu_d)^2 / var_d - 0.5 sum_d ln(2 pi
// var_d); per senone and stream, ln sum_k w_k exp(that) over the non-zero
// weights (with the maximum factored out); summed over streams.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/model/gaussian_mixtures.h"

namespace gpuspeech::testing {

struct RandomModelSpec {
  int num_senones = 50;
  int num_codebooks = 50;       // = num_senones: continuous; 1: semi-continuous
  int gaussians_per_codebook = 8;
  std::vector<int> stream_dims = {39};
  bool interleave_components = false;  // streams take components round-robin
  double zero_weight_fraction = 0.0;   // mixture weights set to exactly zero
  // Feature scale, Sphinx 1s_c_d_dd-like: component i of each 13-wide block
  // is a cepstrum (block 0, spread `cepstral_spread`, c0 centred at
  // `c0_centre`), a delta (block 1, spread 3) or a delta-delta (spread 1).
  double c0_centre = 60.0;
  double cepstral_spread = 10.0;
  // Gaussian variances are spread^2 times a factor drawn from this range.
  double min_variance_ratio = 0.03, max_variance_ratio = 0.5;
};

GaussianMixtures random_mixtures(const RandomModelSpec& spec, std::mt19937& rng);

// frames x feature_dim features: half drawn near a random Gaussian of each
// stream (where the log-sum-exp matters most), half from the global spread.
std::vector<float> random_features(const GaussianMixtures& gm, const RandomModelSpec& spec,
                                   int64_t frames, std::mt19937& rng);

// frames x num_senones natural-log likelihoods, in double.
std::vector<double> reference_scores(const GaussianMixtures& gm, const float* feats,
                                     int64_t frames);

// max |got - want| over all elements (infinite when one side is not finite
// and they differ).
double max_abs_error(const std::vector<float>& got, const std::vector<double>& want);

}  // namespace gpuspeech::testing
