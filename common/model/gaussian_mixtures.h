// The acoustic model's output densities in the one form the scorer needs,
// whatever the model type (continuous, semi-continuous, PTM):
//
//   codebooks: sets of diagonal Gaussians, per feature stream;
//   senones:   each picks one codebook and holds a log mixture weight for
//              each of that codebook's Gaussians, per stream.
//
//   log p(x | senone s) = sum over streams t of
//       log sum_k exp( logw[s][t][k] + log N(x_t; mu[c(s)][t][k], var[c(s)][t][k]) )
//
// Continuous models have one codebook per senone (c(s) = s), semi-continuous
// one codebook shared by all senones, PTM one codebook per base phone.
// AcousticModel (acoustic_model.h) builds this from a Sphinx model directory;
// GaussianScorer (common/scoring/gaussian_scoring.h) evaluates it on a backend.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuspeech {

struct GaussianMixtures {
  // Feature streams: stream t takes the feature components
  // stream_components[t] (Sphinx -svspec; one stream of all components when
  // the model has none).
  std::vector<std::vector<int>> stream_components;
  int num_codebooks = 0;
  int gaussians_per_codebook = 0;  // "density"
  int num_senones = 0;
  // means[t] and variances[t]: num_codebooks x density x dim(t), row-major.
  // Variances are already floored (Sphinx -varfloor) and strictly positive.
  std::vector<std::vector<float>> means;
  std::vector<std::vector<float>> variances;
  // senone_codebook[s] in [0, num_codebooks).
  std::vector<int> senone_codebook;
  // log_weights: num_senones x num_streams x density, natural log; a zero
  // weight is -infinity (those components are skipped).
  std::vector<float> log_weights;

  int num_streams() const { return static_cast<int>(stream_components.size()); }
  int stream_dim(int t) const { return static_cast<int>(stream_components[t].size()); }
  int feature_dim() const;  // total components over all streams
  // Throws std::invalid_argument naming the inconsistency.
  void validate() const;
};

}  // namespace gpuspeech
