// lpc_to_cepstrum: PLP's linear prediction, one work-item per row, following
// common/lpc.h (levinson_durbin, lpc_to_cepstrum_row) step by step. acc_t is
// double when the device has cl_khr_fp64 (as the CPU backend computes), else
// float. The host rejects order > LPC_MAX_ORDER and num_ceps > LPC_MAX_CEPS.
#define LPC_MAX_ORDER 64
#define LPC_MAX_CEPS 128

__kernel void lpc_to_cepstrum(__global const float* autocorr, long rows,
                              int order, int num_ceps, __global float* ceps) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global const float* r = autocorr + row * (order + 1);
  __global float* out = ceps + row * num_ceps;

  // Levinson-Durbin: a[0] = 1, residual energy e.
  acc_t a[LPC_MAX_ORDER + 1];
  a[0] = 1;
  for (int i = 1; i <= order; ++i) a[i] = 0;
  acc_t e = r[0];
  for (int i = 1; i <= order && e > 0; ++i) {
    acc_t acc = r[i];
    for (int j = 1; j < i; ++j) acc += a[j] * (acc_t)r[i - j];
    const acc_t k = -acc / e;
    // a_j += k a_{i-j} for 0 < j < i, in place from both ends.
    for (int j = 1; 2 * j <= i; ++j) {
      const acc_t lo = a[j], hi = a[i - j];
      a[j] = lo + k * hi;
      if (i - j != j) a[i - j] = hi + k * lo;
    }
    a[i] = k;
    e *= 1 - k * k;
    // |k| >= 1: r is not positive definite (or rounding broke it).
    if (!(e > 0) || !isfinite(e)) e = 0;
  }
  if (!(r[0] > 0) || !isfinite(r[0]) || !(e > 0)) {
    for (int n = 0; n < num_ceps; ++n) out[n] = 0.0f;
    return;
  }

  // Cepstrum of the all-pole model e / |A|^2.
  acc_t c[LPC_MAX_CEPS];
  c[0] = log(e);
  out[0] = (float)c[0];
  for (int n = 1; n < num_ceps; ++n) {
    acc_t v = n <= order ? -a[n] : 0;
    for (int kk = 1; kk < n; ++kk) {
      const int j = n - kk;
      if (j <= order) v -= ((acc_t)kk / n) * c[kk] * a[j];
    }
    c[n] = v;
    out[n] = (float)v;
  }
}
