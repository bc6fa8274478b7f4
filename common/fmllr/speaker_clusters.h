// Grouping recordings by speaker when nobody says who spoke (no spk2utt):
// agglomerative clustering with the Bayesian information criterion (Chen
// and Gopalakrishnan, 1998). Each recording is summarised by one
// full-covariance Gaussian of its cepstra (before mean normalisation, so
// that the channel's and the voice's mean stay in), and two clusters are
// merged while one Gaussian describes their frames better than two, after
// the BIC's charge for the second one's parameters:
//   dBIC = ½ (N ln|S| - n1 ln|S1| - n2 ln|S2|) - λ ½ (d + d(d+1)/2) ln N,
// N = n1 + n2, S the pooled covariance; merge while the smallest dBIC is
// below zero. Why: fMLLR per speaker beats fMLLR per file by a wide margin
// (docs/benchmarks.md, "The batch sets with the speakers given"), because a
// full transform's 1560 parameters need more speech than one utterance has;
// recordings of the same voice through the same channel share a transform
// the most, and they are the ones whose cepstra one Gaussian fits.
//
// Work: O(R²) log-determinants of d x d matrices for R recordings, then
// O(R) a merge and O(R²) comparisons to find each merge, and R² doubles of
// memory; so recordings are clustered in blocks of
// SpeakerClusteringOptions::block in their order, never merged across blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuspeech {

// Frames, sum and scatter of d-dimensional vectors: a Gaussian's
// sufficient statistics.
struct GaussianSummary {
  int dim = 0;
  double frames = 0.0;
  std::vector<double> sum;      // d
  std::vector<double> scatter;  // d x d, sum of x xᵀ

  explicit GaussianSummary(int d = 0);
  // Adds n rows of `stride` floats each, components [first, first + dim).
  void add(const float* rows, int64_t n, int stride, int first = 0);
  void merge(const GaussianSummary& other);
  // ln det of the maximum-likelihood covariance (scatter / n - mean meanᵀ),
  // its diagonal floored at 1e-6 of its mean; -infinity below dim + 1
  // frames.
  double log_det_covariance() const;
};

struct SpeakerClusteringOptions {
  // λ, the weight of the BIC's parameter charge: a larger charge for the
  // second Gaussian merges more. 1 is the criterion itself; 2 joined most
  // of one real reader's files and kept every pair of voices tried apart
  // (docs/benchmarks.md, "Speakers found by clustering").
  double penalty_weight = 2.0;
  // A recording with fewer frames than this (or than dimensions + 1) stays
  // its own cluster: its covariance would be guessed, not measured.
  double min_frames = 100.0;
  // Recordings clustered together at most (see the top of this file):
  // 1000 take 8 MB.
  size_t block = 1000;
};

// Cluster of each summary (0-based, numbered in order of first appearance).
// Throws std::invalid_argument for summaries of different dimensions.
std::vector<int> cluster_speakers(const std::vector<GaussianSummary>& recordings,
                                  const SpeakerClusteringOptions& options = {});

// dBIC of merging a and b (negative: one Gaussian is the better model).
double merge_bic(const GaussianSummary& a, const GaussianSummary& b, double penalty_weight);

}  // namespace gpuspeech
