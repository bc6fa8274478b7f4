#include "common/fmllr/symmetric_eigen_range.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gpuspeech {

namespace {

// Eigenvalues of the tridiagonal matrix (diagonal d, off-diagonal e, e[i]
// between rows i and i + 1) below x: the negative terms of the LDLᵀ
// pivots' recurrence (Sturm count).
int count_below(const std::vector<double>& d, const std::vector<double>& e, double x) {
  // A zero pivot is nudged off zero: its sign then counts as positive, the
  // bisection's convention for an eigenvalue exactly at x.
  const double tiny = std::numeric_limits<double>::min();
  int count = 0;
  double q = 1.0;
  for (size_t i = 0; i < d.size(); ++i) {
    const double off = i > 0 ? e[i - 1] * e[i - 1] / q : 0.0;
    q = d[i] - x - off;
    if (q == 0.0) q = tiny;
    if (q < 0.0) ++count;
  }
  return count;
}

// The k-th smallest eigenvalue (0-based) inside [lo, hi], by bisection.
double kth_eigenvalue(const std::vector<double>& d, const std::vector<double>& e, int k,
                      double lo, double hi) {
  const double eps = std::numeric_limits<double>::epsilon();
  for (int step = 0; step < 200; ++step) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;  // no double between them
    if (hi - lo <= 2.0 * eps * std::max(std::fabs(lo), std::fabs(hi))) break;
    if (count_below(d, e, mid) > k)
      hi = mid;
    else
      lo = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

void symmetric_eigen_range(const std::vector<double>& input, int n, double& lo, double& hi) {
  if (n < 1 || input.size() < static_cast<size_t>(n) * n)
    throw std::invalid_argument("symmetric_eigen_range: need an n x n matrix, n >= 1");
  const size_t un = static_cast<size_t>(n);
  // The lower triangle, mirrored: the reduction works on the full matrix.
  std::vector<double> a(un * un);
  for (size_t i = 0; i < un; ++i)
    for (size_t j = 0; j <= i; ++j) {
      const double v = input[i * un + j];
      if (!std::isfinite(v)) {
        lo = hi = std::numeric_limits<double>::quiet_NaN();
        return;
      }
      a[i * un + j] = a[j * un + i] = v;
    }
  std::vector<double> d(un), e(un > 1 ? un - 1 : 0), v(un), p(un);
  // Householder: column k below the diagonal becomes (alpha, 0, ..., 0) by
  // H = I - 2 v vᵀ applied from both sides to the trailing block.
  for (size_t k = 0; k + 2 < un; ++k) {
    double norm2 = 0.0;
    for (size_t i = k + 1; i < un; ++i) norm2 += a[i * un + k] * a[i * un + k];
    const double x0 = a[(k + 1) * un + k];
    const double alpha = x0 >= 0.0 ? -std::sqrt(norm2) : std::sqrt(norm2);
    d[k] = a[k * un + k];
    e[k] = alpha;
    // v = x - alpha e_1, normalised; zero when the column is already done.
    double vnorm2 = 0.0;
    for (size_t i = k + 1; i < un; ++i) {
      v[i] = a[i * un + k] - (i == k + 1 ? alpha : 0.0);
      vnorm2 += v[i] * v[i];
    }
    if (!(vnorm2 > 0.0)) continue;
    const double inv = 1.0 / std::sqrt(vnorm2);
    for (size_t i = k + 1; i < un; ++i) v[i] *= inv;
    // p = B v, K = vᵀ p, q = p - K v; B <- B - 2 (v qᵀ + q vᵀ).
    double kk = 0.0;
    for (size_t i = k + 1; i < un; ++i) {
      double s = 0.0;
      for (size_t j = k + 1; j < un; ++j) s += a[i * un + j] * v[j];
      p[i] = s;
      kk += v[i] * s;
    }
    for (size_t i = k + 1; i < un; ++i) p[i] -= kk * v[i];
    for (size_t i = k + 1; i < un; ++i)
      for (size_t j = k + 1; j < un; ++j) a[i * un + j] -= 2.0 * (v[i] * p[j] + p[i] * v[j]);
  }
  if (un >= 2) {
    d[un - 2] = a[(un - 2) * un + un - 2];
    e[un - 2] = a[(un - 1) * un + un - 2];
  }
  d[un - 1] = a[(un - 1) * un + un - 1];
  // Gershgorin's interval holds every eigenvalue.
  double glo = std::numeric_limits<double>::infinity(), ghi = -glo;
  for (size_t i = 0; i < un; ++i) {
    const double r = (i > 0 ? std::fabs(e[i - 1]) : 0.0) + (i + 1 < un ? std::fabs(e[i]) : 0.0);
    glo = std::min(glo, d[i] - r);
    ghi = std::max(ghi, d[i] + r);
  }
  const double pad = std::numeric_limits<double>::epsilon() * std::max(std::fabs(glo), std::fabs(ghi));
  glo -= pad;
  ghi += pad;
  lo = kth_eigenvalue(d, e, 0, glo, ghi);
  hi = kth_eigenvalue(d, e, n - 1, glo, ghi);
}

}  // namespace gpuspeech
