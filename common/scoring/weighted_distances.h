// The host's exact Gaussian evaluation in double (the forced aligner, the
// fMLLR posteriors), its inner loop: for each Gaussian k of a run of n in
// one codebook, q_k = sum_i (x_i - mu_ki)^2 / var_ki, with 1/var given.
//
// Four Gaussians go together, each its own running sum: a single sum is a
// chain of dependent additions that keeps the floating-point unit waiting,
// four chains keep it busy. Each q_k still adds its terms in order of i,
// as the plain loop does (nothing is reassociated).
#pragma once

namespace gpuspeech {

// x: d values; mu, inv_var: n rows of d (Gaussian k at k * d); q: n values.
inline void weighted_squared_distances(const double* x, const float* mu, const double* inv_var,
                                       int d, int n, double* q) {
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    const float* m0 = mu + static_cast<long>(k) * d;
    const double* v0 = inv_var + static_cast<long>(k) * d;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int i = 0; i < d; ++i) {
      const double a0 = x[i] - m0[i], a1 = x[i] - m0[d + i];
      const double a2 = x[i] - m0[2 * d + i], a3 = x[i] - m0[3 * d + i];
      s0 += a0 * a0 * v0[i];
      s1 += a1 * a1 * v0[d + i];
      s2 += a2 * a2 * v0[2 * d + i];
      s3 += a3 * a3 * v0[3 * d + i];
    }
    q[k] = s0;
    q[k + 1] = s1;
    q[k + 2] = s2;
    q[k + 3] = s3;
  }
  for (; k < n; ++k) {
    const float* m = mu + static_cast<long>(k) * d;
    const double* v = inv_var + static_cast<long>(k) * d;
    double s = 0.0;
    for (int i = 0; i < d; ++i) {
      const double a = x[i] - m[i];
      s += a * a * v[i];
    }
    q[k] = s;
  }
}

}  // namespace gpuspeech
