#include "common/fmllr/speaker_clusters.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace gpuspeech {

GaussianSummary::GaussianSummary(int d)
    : dim(d), sum(static_cast<size_t>(d), 0.0), scatter(static_cast<size_t>(d) * d, 0.0) {}

void GaussianSummary::add(const float* rows, int64_t n, int stride, int first) {
  if (first < 0 || first + dim > stride)
    throw std::invalid_argument("GaussianSummary::add: components outside the rows");
  const size_t d = static_cast<size_t>(dim);
  for (int64_t t = 0; t < n; ++t) {
    const float* x = rows + t * stride + first;
    for (size_t i = 0; i < d; ++i) {
      const double xi = x[i];
      sum[i] += xi;
      double* s = scatter.data() + i * d;
      for (size_t j = 0; j <= i; ++j) s[j] += xi * x[j];
    }
  }
  // Only the lower triangle is summed above; the upper one mirrors it.
  for (size_t i = 0; i < d; ++i)
    for (size_t j = i + 1; j < d; ++j) scatter[i * d + j] = scatter[j * d + i];
  frames += static_cast<double>(n);
}

void GaussianSummary::merge(const GaussianSummary& other) {
  if (other.dim != dim) throw std::invalid_argument("GaussianSummary::merge: dimensions differ");
  frames += other.frames;
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += other.sum[i];
  for (size_t i = 0; i < scatter.size(); ++i) scatter[i] += other.scatter[i];
}

double GaussianSummary::log_det_covariance() const {
  const size_t d = static_cast<size_t>(dim);
  if (frames < dim + 1) return -std::numeric_limits<double>::infinity();
  std::vector<double> c(d * d);
  double trace = 0.0;
  for (size_t i = 0; i < d; ++i)
    for (size_t j = 0; j < d; ++j) {
      c[i * d + j] = scatter[i * d + j] / frames - (sum[i] / frames) * (sum[j] / frames);
      if (i == j) trace += c[i * d + j];
    }
  const double floor = 1e-6 * trace / static_cast<double>(d);
  for (size_t i = 0; i < d; ++i) c[i * d + i] = std::max(c[i * d + i], floor);
  // Cholesky: ln det = 2 sum ln L_ii. A pivot at or below the floor (a
  // rank-deficient covariance) is raised to it.
  double log_det = 0.0;
  for (size_t j = 0; j < d; ++j) {
    double v = c[j * d + j];
    for (size_t k = 0; k < j; ++k) v -= c[j * d + k] * c[j * d + k];
    v = std::max(v, floor);
    const double l = std::sqrt(v);
    c[j * d + j] = l;
    log_det += 2.0 * std::log(l);
    for (size_t i = j + 1; i < d; ++i) {
      double w = c[i * d + j];
      for (size_t k = 0; k < j; ++k) w -= c[i * d + k] * c[j * d + k];
      c[i * d + j] = w / l;
    }
  }
  return log_det;
}

double merge_bic(const GaussianSummary& a, const GaussianSummary& b, double penalty_weight) {
  GaussianSummary both = a;
  both.merge(b);
  const double d = a.dim;
  const double n = both.frames;
  const double fit = 0.5 * (n * both.log_det_covariance() - a.frames * a.log_det_covariance() -
                            b.frames * b.log_det_covariance());
  const double params = d + d * (d + 1) / 2;
  return fit - penalty_weight * 0.5 * params * std::log(n);
}

namespace {

std::vector<int> cluster_block(const std::vector<GaussianSummary>& recordings,
                               const SpeakerClusteringOptions& options) {
  const size_t r = recordings.size();
  // Live clusters: their summaries and members; small recordings never join.
  std::vector<GaussianSummary> cl(recordings);
  std::vector<std::vector<size_t>> members(r);
  std::vector<bool> live(r), joins(r);
  for (size_t i = 0; i < r; ++i) {
    members[i] = {i};
    live[i] = true;
    // A covariance needs more frames than dimensions.
    joins[i] = recordings[i].frames >= options.min_frames &&
               recordings[i].frames >= recordings[i].dim + 1;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> bic(r * r, inf);  // upper triangle, i < j
  auto score = [&](size_t i, size_t j) {
    bic[i * r + j] = joins[i] && joins[j] ? merge_bic(cl[i], cl[j], options.penalty_weight) : inf;
  };
  for (size_t i = 0; i < r; ++i)
    for (size_t j = i + 1; j < r; ++j) score(i, j);
  for (;;) {
    double best = 0.0;
    size_t bi = r, bj = r;
    for (size_t i = 0; i < r; ++i) {
      if (!live[i]) continue;
      for (size_t j = i + 1; j < r; ++j)
        if (live[j] && bic[i * r + j] < best) {
          best = bic[i * r + j];
          bi = i;
          bj = j;
        }
    }
    if (bi == r) break;
    cl[bi].merge(cl[bj]);
    members[bi].insert(members[bi].end(), members[bj].begin(), members[bj].end());
    live[bj] = false;
    for (size_t k = 0; k < r; ++k) {
      if (!live[k] || k == bi) continue;
      if (k < bi)
        score(k, bi);
      else
        score(bi, k);
    }
  }
  // Number the clusters by their first recording.
  std::vector<size_t> owner(r);
  for (size_t c = 0; c < r; ++c)
    if (live[c])
      for (size_t m : members[c]) owner[m] = c;
  std::vector<int> number(r, -1), of(r);
  int next = 0;
  for (size_t i = 0; i < r; ++i) {
    int& n = number[owner[i]];
    if (n < 0) n = next++;
    of[i] = n;
  }
  return of;
}

}  // namespace

std::vector<int> cluster_speakers(const std::vector<GaussianSummary>& recordings,
                                  const SpeakerClusteringOptions& options) {
  for (const GaussianSummary& g : recordings)
    if (g.dim != recordings.front().dim)
      throw std::invalid_argument("cluster_speakers: summaries of different dimensions");
  std::vector<int> of;
  int offset = 0;
  for (size_t first = 0; first < recordings.size(); first += std::max<size_t>(options.block, 1)) {
    const size_t last = std::min(recordings.size(), first + std::max<size_t>(options.block, 1));
    const std::vector<GaussianSummary> block(recordings.begin() + static_cast<std::ptrdiff_t>(first),
                                             recordings.begin() + static_cast<std::ptrdiff_t>(last));
    int clusters = 0;
    for (int c : cluster_block(block, options)) {
      of.push_back(offset + c);
      clusters = std::max(clusters, c + 1);
    }
    offset += clusters;
  }
  return of;
}

}  // namespace gpuspeech
