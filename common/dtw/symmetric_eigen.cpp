#include "common/dtw/symmetric_eigen.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace gpuspeech {

SymmetricEigen symmetric_eigen(const std::vector<double>& a_in, int n) {
  if (n < 1 || a_in.size() != static_cast<size_t>(n) * n)
    throw std::invalid_argument("symmetric_eigen: the matrix is not n x n with n >= 1");
  std::vector<double> a(a_in.size());
  double norm = 0.0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      const double x = a_in[static_cast<size_t>(i) * n + j];
      if (!std::isfinite(x)) throw std::invalid_argument("symmetric_eigen: an entry is not finite");
      a[static_cast<size_t>(i) * n + j] = a[static_cast<size_t>(j) * n + i] = x;
      norm += (i == j ? 1.0 : 2.0) * x * x;
    }
  std::vector<double> v(a.size(), 0.0);
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i) * n + i] = 1.0;
  auto at = [n](std::vector<double>& m, int r, int c) -> double& { return m[static_cast<size_t>(r) * n + c]; };
  // Sweeps until the off-diagonal part is negligible against the whole
  // matrix; Jacobi converges quadratically, so a few sweeps suffice and the
  // cap only guards against a pathological input.
  const double tiny = 1e-30 * std::max(norm, 1e-300);
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0.0;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) off += at(a, p, q) * at(a, p, q);
    if (off <= tiny) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = at(a, p, q);
        if (apq == 0.0) continue;
        const double theta = (at(a, q, q) - at(a, p, p)) / (2.0 * apq);
        const double t = (theta >= 0.0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0);
        const double s = t * c;
        for (int k = 0; k < n; ++k) {
          const double akp = at(a, k, p), akq = at(a, k, q);
          at(a, k, p) = c * akp - s * akq;
          at(a, k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {
          const double apk = at(a, p, k), aqk = at(a, q, k);
          at(a, p, k) = c * apk - s * aqk;
          at(a, q, k) = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) {
          const double vkp = at(v, k, p), vkq = at(v, k, q);
          at(v, k, p) = c * vkp - s * vkq;
          at(v, k, q) = s * vkp + c * vkq;
        }
      }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return at(a, x, x) > at(a, y, y); });
  SymmetricEigen out;
  out.values.resize(n);
  out.vectors.resize(a.size());
  for (int j = 0; j < n; ++j) {
    out.values[j] = at(a, order[j], order[j]);
    for (int k = 0; k < n; ++k) out.vectors[static_cast<size_t>(k) * n + j] = at(v, k, order[j]);
  }
  return out;
}

}  // namespace gpuspeech
