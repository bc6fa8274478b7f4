#include "common/dtw/projection_learner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/dtw/dtw.h"
#include "common/dtw/symmetric_eigen.h"

namespace gpuspeech {

namespace {

// Adds the outer products of the aligned spliced frames' differences to
// the lower triangle of `scatter`; false when DTW finds no path.
bool add_aligned_differences(const DtwTemplate& a, const DtwTemplate& b, const FeatureMatrix& sa,
                             const FeatureMatrix& sb, const DtwOptions& dtw, std::vector<double>& scatter,
                             double& frames) {
  std::vector<std::pair<int64_t, int64_t>> path;
  const float d = dtw_distance(a.features.data.data(), a.features.rows, b.features.data.data(), b.features.rows,
                               a.features.dim, dtw, &path);
  if (!std::isfinite(d)) return false;
  const int n = sa.dim;
  std::vector<double> diff(n);
  for (const auto& [i, j] : path) {
    for (int k = 0; k < n; ++k) diff[k] = static_cast<double>(sa.row(i)[k]) - sb.row(j)[k];
    for (int p = 0; p < n; ++p) {
      double* row = scatter.data() + static_cast<size_t>(p) * n;
      const double dp = diff[p];
      for (int q = 0; q <= p; ++q) row[q] += dp * diff[q];
    }
    frames += 1.0;
  }
  return true;
}

constexpr int kMaxLearnerDim = 512;

}  // namespace

void ProjectionLearnerOptions::validate() const {
  if (splice < 0 || splice > 32) throw std::invalid_argument("projection learner: splice must be 0-32");
  if (output_dim < 1) throw std::invalid_argument("projection learner: output-dim must be at least 1");
  if (!(within_regularisation >= 0.0f) || !std::isfinite(within_regularisation))
    throw std::invalid_argument("projection learner: the regularisation must be finite and >= 0");
  if (pairs_per_template < 1) throw std::invalid_argument("projection learner: pairs per template must be >= 1");
}

DtwProjection learn_dtw_projection(const TemplateLibrary& corpus, const DtwOptions& dtw,
                                   const ProjectionLearnerOptions& opts, ProjectionLearnerReport* report) {
  opts.validate();
  const std::vector<DtwTemplate>& t = corpus.templates();
  std::map<std::string, std::vector<size_t>> by_word;
  for (size_t i = 0; i < t.size(); ++i) by_word[t[i].label].push_back(i);
  bool repeated = false;
  for (const auto& [word, ids] : by_word) repeated = repeated || ids.size() > 1;
  if (by_word.size() < 2 || !repeated)
    throw std::invalid_argument(
        "projection learner: the corpus needs at least two words and a word with two recordings");
  const int input_dim = corpus.dim();
  // Two n x n scatters and an O(n^3) eigen solver per sweep: a spliced
  // spectrum (257 x 5) would need gigabytes and hours.
  if (input_dim * (2 * opts.splice + 1) > kMaxLearnerDim)
    throw std::invalid_argument("projection learner: " + std::to_string(input_dim) + " values a frame spliced +-" +
                                std::to_string(opts.splice) + " is more than " + std::to_string(kMaxLearnerDim) +
                                " (a map is for cepstra or a filterbank, not the spectrum)");
  if (opts.output_dim > input_dim * (2 * opts.splice + 1))
    throw std::invalid_argument("projection learner: output-dim is larger than the spliced dimension");

  std::vector<FeatureMatrix> spliced;
  spliced.reserve(t.size());
  for (const DtwTemplate& x : t) spliced.push_back(splice_frames(x.features, opts.splice));
  const int n = input_dim * (2 * opts.splice + 1);
  std::vector<double> within(static_cast<size_t>(n) * n, 0.0), between(within.size(), 0.0);
  ProjectionLearnerReport rep;
  std::mt19937 rng(opts.seed);
  for (size_t a = 0; a < t.size(); ++a) {
    const std::vector<size_t>& same = by_word[t[a].label];
    for (int k = 0; k < opts.pairs_per_template && same.size() > 1; ++k) {
      size_t b = same[rng() % same.size()];
      if (b == a) b = same[(std::find(same.begin(), same.end(), a) - same.begin() + 1) % same.size()];
      if (add_aligned_differences(t[a], t[b], spliced[a], spliced[b], dtw, within, rep.within_frames))
        ++rep.within_pairs;
    }
    for (int k = 0; k < opts.pairs_per_template; ++k) {
      size_t b = rng() % t.size();
      // Another word is at most a few draws away: at least two words exist.
      for (int tries = 0; t[b].label == t[a].label && tries < 64; ++tries) b = rng() % t.size();
      if (t[b].label == t[a].label) continue;
      if (add_aligned_differences(t[a], t[b], spliced[a], spliced[b], dtw, between, rep.between_frames))
        ++rep.between_pairs;
    }
  }
  if (rep.within_frames == 0.0 || rep.between_frames == 0.0)
    throw std::runtime_error("projection learner: DTW aligned no pair of recordings");
  for (int p = 0; p < n; ++p)
    for (int q = 0; q <= p; ++q) {
      const size_t lo = static_cast<size_t>(p) * n + q, hi = static_cast<size_t>(q) * n + p;
      within[lo] /= rep.within_frames;
      between[lo] /= rep.between_frames;
      within[hi] = within[lo];
      between[hi] = between[lo];
    }

  // Whitening by the regularised within scatter: P = (D + rI)^-1/2 U^T.
  const SymmetricEigen w = symmetric_eigen(within, n);
  double mean = 0.0;
  for (double x : w.values) mean += std::max(x, 0.0) / n;
  const double floor = opts.within_regularisation * mean + 1e-12 * std::max(mean, 1e-300);
  std::vector<double> whiten(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    const double s = 1.0 / std::sqrt(std::max(w.values[i], 0.0) + floor);
    for (int k = 0; k < n; ++k) whiten[static_cast<size_t>(i) * n + k] = s * w.vectors[static_cast<size_t>(k) * n + i];
  }
  // The between scatter in the whitened space: P Sb P^T.
  std::vector<double> tmp(static_cast<size_t>(n) * n, 0.0), pb(tmp.size(), 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const double pik = whiten[static_cast<size_t>(i) * n + k];
      for (int j = 0; j < n; ++j) tmp[static_cast<size_t>(i) * n + j] += pik * between[static_cast<size_t>(k) * n + j];
    }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double acc = 0.0;
      for (int k = 0; k < n; ++k) acc += tmp[static_cast<size_t>(i) * n + k] * whiten[static_cast<size_t>(j) * n + k];
      pb[static_cast<size_t>(i) * n + j] = pb[static_cast<size_t>(j) * n + i] = acc;
    }
  const SymmetricEigen b = symmetric_eigen(pb, n);

  DtwProjection out;
  out.input_dim = input_dim;
  out.splice = opts.splice;
  out.output_dim = opts.output_dim;
  out.weights.resize(static_cast<size_t>(out.output_dim) * n);
  for (int o = 0; o < out.output_dim; ++o) {
    for (int k = 0; k < n; ++k) {
      double acc = 0.0;
      for (int i = 0; i < n; ++i) acc += b.vectors[static_cast<size_t>(i) * n + o] * whiten[static_cast<size_t>(i) * n + k];
      out.weights[static_cast<size_t>(o) * n + k] = static_cast<float>(acc);
    }
    rep.kept_ratios.push_back(b.values[o]);
  }
  if (report) *report = std::move(rep);
  return out;
}

}  // namespace gpuspeech
