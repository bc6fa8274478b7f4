// DTW on the host (common/dtw/dtw.h) against two references written for
// this test only: exhaustive enumeration of every warping path the rules of
// dtw_options.h allow (tiny sizes), and a plain full-matrix DTW that computes
// every cell of the n x m matrix with the same local rules and the band as a
// per-cell mask (random sizes). The banded, one-column implementation must
// give the same distance, and its backtracked path must be a legal path of
// that cost.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "common/dtw/dtw.h"

namespace gpuspeech {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_seq(std::mt19937& gen, int64_t frames, int dim) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(frames * dim));
  for (float& x : v) x = nd(gen);
  return v;
}

bool in_band(const DtwOptions& o, int64_t n, int64_t m, int64_t i, int64_t j) {
  if (o.band < 0 || n == 1) return true;
  return std::llabs(j * (n - 1) - i * (m - 1)) <= static_cast<int64_t>(o.band) * (n - 1);
}

// Every legal path, by depth-first search over steps; double accumulation.
double brute_force(const std::vector<float>& x, int64_t n, const std::vector<float>& y, int64_t m,
                   int dim, const DtwOptions& o) {
  auto d = [&](int64_t i, int64_t j) {
    return static_cast<double>(dtw_local_distance(&x[i * dim], &y[j * dim], dim, o.distance));
  };
  double best = std::numeric_limits<double>::infinity();
  if (!in_band(o, n, m, 0, 0)) return best;
  std::function<void(int64_t, int64_t, bool, double)> walk = [&](int64_t i, int64_t j,
                                                                 bool last_flat, double cost) {
    if (i == n - 1 && j == m - 1) {
      best = std::min(best, cost);
      if (o.pattern == StepPattern::kItakura) return;  // every step advances i: done
    }
    if (o.pattern == StepPattern::kItakura) {
      if (i + 1 >= n) return;
      for (int dj = 0; dj <= 2; ++dj) {
        if (dj == 0 && last_flat) continue;
        const int64_t ni = i + 1, nj = j + dj;
        if (nj >= m || !in_band(o, n, m, ni, nj)) continue;
        walk(ni, nj, dj == 0, cost + d(ni, nj));
      }
    } else {
      const int steps[3][3] = {{1, 0, 1}, {1, 1, 2}, {0, 1, 1}};  // di, dj, weight
      for (const auto& s : steps) {
        const int64_t ni = i + s[0], nj = j + s[1];
        if (ni >= n || nj >= m || !in_band(o, n, m, ni, nj)) continue;
        walk(ni, nj, false, cost + s[2] * d(ni, nj));
      }
    }
  };
  walk(0, 0, false, (o.pattern == StepPattern::kSymmetric ? 2.0 : 1.0) * d(0, 0));
  if (std::isinf(best)) return best;
  if (!o.normalize) return best;
  return best / static_cast<double>(o.pattern == StepPattern::kItakura ? n : n + m);
}

// Every cell of the full matrix (no global region beyond what the local
// rules reach), the band as a mask.
float full_matrix(const std::vector<float>& x, int64_t n, const std::vector<float>& y, int64_t m,
                  int dim, const DtwOptions& o) {
  auto d = [&](int64_t i, int64_t j) {
    return dtw_local_distance(&x[i * dim], &y[j * dim], dim, o.distance);
  };
  auto at = [m](std::vector<float>& v, int64_t i, int64_t j) -> float& { return v[i * m + j]; };
  std::vector<float> F(n * m, kInf), S(n * m, kInf), G(n * m, kInf);
  if (!in_band(o, n, m, 0, 0)) return kInf;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      if (!in_band(o, n, m, i, j)) continue;
      const float dij = d(i, j);
      if (o.pattern == StepPattern::kItakura) {
        if (i == 0) {
          if (j == 0) at(S, 0, 0) = dij;
          continue;
        }
        at(F, i, j) = at(S, i - 1, j) + dij;
        float b = kInf;
        for (int dj = 1; dj <= 2; ++dj)
          if (j - dj >= 0) b = std::min({b, at(F, i - 1, j - dj), at(S, i - 1, j - dj)});
        at(S, i, j) = b + dij;
      } else {
        if (i == 0 && j == 0) {
          at(G, 0, 0) = 2.0f * dij;
          continue;
        }
        float b = kInf;
        if (i > 0) b = std::min(b, at(G, i - 1, j) + dij);
        if (i > 0 && j > 0) b = std::min(b, at(G, i - 1, j - 1) + 2.0f * dij);
        if (j > 0) b = std::min(b, at(G, i, j - 1) + dij);
        at(G, i, j) = b;
      }
    }
  const float total = o.pattern == StepPattern::kItakura
                          ? std::min(at(F, n - 1, m - 1), at(S, n - 1, m - 1))
                          : at(G, n - 1, m - 1);
  if (!o.normalize || std::isinf(total)) return total;
  return total / static_cast<float>(o.pattern == StepPattern::kItakura ? n : n + m);
}

// A returned path must be legal under o and cost what dtw_distance says.
void check_path(const std::vector<std::pair<int64_t, int64_t>>& path, const std::vector<float>& x,
                int64_t n, const std::vector<float>& y, int64_t m, int dim, const DtwOptions& o,
                float distance) {
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.front(), (std::pair<int64_t, int64_t>(0, 0)));
  EXPECT_EQ(path.back(), std::make_pair(n - 1, m - 1));
  double cost = 0.0;
  bool last_flat = false;
  for (size_t k = 0; k < path.size(); ++k) {
    const auto [i, j] = path[k];
    ASSERT_TRUE(in_band(o, n, m, i, j)) << "cell " << i << "," << j << " outside the band";
    const double dij = dtw_local_distance(&x[i * dim], &y[j * dim], dim, o.distance);
    if (k == 0) {
      cost += (o.pattern == StepPattern::kSymmetric ? 2.0 : 1.0) * dij;
      continue;
    }
    const int64_t di = i - path[k - 1].first, dj = j - path[k - 1].second;
    if (o.pattern == StepPattern::kItakura) {
      ASSERT_EQ(di, 1);
      ASSERT_TRUE(dj >= 0 && dj <= 2);
      ASSERT_FALSE(dj == 0 && last_flat) << "two flat steps in a row at column " << i;
      last_flat = dj == 0;
      cost += dij;
    } else {
      ASSERT_TRUE((di == 1 && dj == 0) || (di == 1 && dj == 1) || (di == 0 && dj == 1));
      cost += (di == 1 && dj == 1 ? 2.0 : 1.0) * dij;
    }
  }
  if (o.normalize) cost /= static_cast<double>(o.pattern == StepPattern::kItakura ? n : n + m);
  EXPECT_NEAR(cost, distance, 1e-5 * std::max(1.0, std::fabs(cost)));
}

void expect_same(float got, double want, const char* what) {
  if (std::isinf(want)) {
    EXPECT_TRUE(std::isinf(got)) << what << ": got " << got << ", want inf";
  } else {
    ASSERT_FALSE(std::isinf(got)) << what << ": got inf, want " << want;
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::fabs(want))) << what;
  }
}

std::vector<DtwOptions> option_grid() {
  std::vector<DtwOptions> out;
  for (StepPattern p : {StepPattern::kItakura, StepPattern::kSymmetric})
    for (int band : {-1, 0, 1, 3})
      for (LocalDistance dist : {LocalDistance::kEuclidean, LocalDistance::kCepstral})
        for (bool norm : {true, false}) {
          DtwOptions o;
          o.pattern = p;
          o.band = band;
          o.distance = dist;
          o.normalize = norm;
          out.push_back(o);
        }
  return out;
}

TEST(Dtw, MatchesExhaustivePathEnumeration) {
  std::mt19937 gen(7);
  int finite = 0, infinite = 0;
  for (const DtwOptions& o : option_grid())
    for (int64_t n = 1; n <= 7; ++n)
      for (int64_t m = 1; m <= 7; ++m) {
        const int dim = 3;
        const auto x = random_seq(gen, n, dim), y = random_seq(gen, m, dim);
        std::vector<std::pair<int64_t, int64_t>> path;
        const float got = dtw_distance(x.data(), n, y.data(), m, dim, o, &path);
        const double want = brute_force(x, n, y, m, dim, o);
        SCOPED_TRACE(o.fingerprint() + " n=" + std::to_string(n) + " m=" + std::to_string(m));
        expect_same(got, want, "vs enumeration");
        if (std::isinf(want)) {
          ++infinite;
          EXPECT_TRUE(path.empty());
        } else {
          ++finite;
          check_path(path, x, n, y, m, dim, o, got);
        }
      }
  // Both outcomes occur, so neither branch is vacuous.
  EXPECT_GT(finite, 500);
  EXPECT_GT(infinite, 100);
}

TEST(Dtw, MatchesFullMatrixOnRandomSequences) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<int> len(1, 60);
  int finite = 0;
  for (const DtwOptions& base : option_grid())
    for (int rep = 0; rep < 12; ++rep) {
      DtwOptions o = base;
      if (o.band > 0) o.band *= 3;  // wider bands on longer sequences
      const int64_t n = len(gen), m = len(gen);
      const int dim = 1 + rep % 13;
      if (o.distance == LocalDistance::kCepstral && dim < 2) continue;
      const auto x = random_seq(gen, n, dim), y = random_seq(gen, m, dim);
      std::vector<std::pair<int64_t, int64_t>> path;
      const float got = dtw_distance(x.data(), n, y.data(), m, dim, o, &path);
      const float want = full_matrix(x, n, y, m, dim, o);
      SCOPED_TRACE(o.fingerprint() + " n=" + std::to_string(n) + " m=" + std::to_string(m));
      expect_same(got, want, "vs full matrix");
      if (!std::isinf(want)) {
        ++finite;
        check_path(path, x, n, y, m, dim, o, got);
      }
    }
  EXPECT_GT(finite, 150);
}

TEST(Dtw, ItakuraReachabilityFollowsTheSlopeLimits) {
  DtwOptions o;  // itakura
  std::vector<float> x(40, 0.5f), y(40, 0.25f);
  // m - 1 <= 2 (n - 1) and floor((n - 1) / 2) <= m - 1.
  EXPECT_FALSE(std::isinf(dtw_distance(x.data(), 10, y.data(), 19, 1, o)));
  EXPECT_TRUE(std::isinf(dtw_distance(x.data(), 10, y.data(), 20, 1, o)));
  EXPECT_FALSE(std::isinf(dtw_distance(x.data(), 11, y.data(), 6, 1, o)));
  EXPECT_TRUE(std::isinf(dtw_distance(x.data(), 11, y.data(), 5, 1, o)));
  // Identical sequences cost nothing; a constant offset costs it per frame.
  EXPECT_EQ(dtw_distance(x.data(), 20, x.data(), 20, 2, o), 0.0f);
  EXPECT_NEAR(dtw_distance(x.data(), 20, y.data(), 20, 2, o), std::sqrt(2.0f) * 0.25f, 1e-6);
}

TEST(Dtw, CepstralDistanceIgnoresTheFirstCoefficient) {
  const std::vector<float> a = {5.0f, 1.0f, 2.0f}, b = {-3.0f, 1.0f, 2.0f};
  EXPECT_EQ(dtw_local_distance(a.data(), b.data(), 3, LocalDistance::kCepstral), 0.0f);
  EXPECT_EQ(dtw_local_distance(a.data(), b.data(), 3, LocalDistance::kEuclidean), 8.0f);
}

TEST(Dtw, RejectsEmptyInputAndBadOptions) {
  std::vector<float> x(4, 0.0f);
  DtwOptions o;
  EXPECT_THROW(dtw_distance(x.data(), 0, x.data(), 2, 2, o), std::invalid_argument);
  EXPECT_THROW(dtw_distance(x.data(), 2, x.data(), 0, 2, o), std::invalid_argument);
  o.band = -2;
  EXPECT_THROW(dtw_distance(x.data(), 2, x.data(), 2, 2, o), std::invalid_argument);
  o.band = -1;
  o.distance = LocalDistance::kCepstral;
  EXPECT_THROW(dtw_distance(x.data(), 2, x.data(), 2, 1, o), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
