// Linear prediction for PLP: Levinson-Durbin and the all-pole cepstrum.
//
// Everything here runs in double: the Toeplitz recursion loses precision
// quickly in float for orders above ~10 when the (compressed) spectrum has a
// wide dynamic range, and the device kernels follow these exact steps so
// that every backend produces the same numbers.
#include "common/features/lpc.h"

#include <cmath>
#include <vector>

namespace gpuspeech {

namespace {
constexpr int kMaxOrder = 64;  // stack scratch; PlpOptions::validate caps lower
}

double levinson_durbin(const double* r, int order, double* a) {
  for (int i = 0; i <= order; ++i) a[i] = 0.0;
  a[0] = 1.0;
  if (order < 0 || !(r[0] > 0.0) || !std::isfinite(r[0])) return 0.0;

  // Invariant after step i: a[0..i] is the order-i predictor
  // A_i(z) = 1 + sum_{j=1..i} a_j z^-j minimising the prediction error
  // energy `err` for the autocorrelation r.
  double err = r[0];
  std::vector<double> heap_prev;
  double stack_prev[kMaxOrder + 1];
  double* prev = stack_prev;
  if (order > kMaxOrder) {
    heap_prev.resize(static_cast<size_t>(order) + 1);
    prev = heap_prev.data();
  }
  for (int i = 1; i <= order; ++i) {
    // Reflection coefficient k_i = -(r_i + sum_{j=1..i-1} a_j r_{i-j}) / err.
    double acc = r[i];
    for (int j = 1; j < i; ++j) acc += a[j] * r[i - j];
    const double k = -acc / err;
    // a_j <- a_j + k a_{i-j}, using the previous order's coefficients.
    for (int j = 1; j < i; ++j) prev[j] = a[j];
    for (int j = 1; j < i; ++j) a[j] = prev[j] + k * prev[i - j];
    a[i] = k;
    err *= (1.0 - k * k);
    // |k| >= 1 means r is not positive definite (or rounding broke it): the
    // model would be unstable and its "energy" meaningless.
    if (!(err > 0.0) || !std::isfinite(err))
      return std::isfinite(err) ? std::fmin(err, 0.0) : 0.0;
  }
  return err;
}

void lpc_to_cepstrum_row(const float* r, int order, int num_ceps, float* out) {
  for (int n = 0; n < num_ceps; ++n) out[n] = 0.0f;
  if (num_ceps <= 0) return;

  std::vector<double> heap;
  double stack_r[kMaxOrder + 1], stack_a[kMaxOrder + 1];
  double* rd = stack_r;
  double* a = stack_a;
  if (order > kMaxOrder) {
    heap.resize(2 * (static_cast<size_t>(order) + 1));
    rd = heap.data();
    a = rd + order + 1;
  }
  for (int i = 0; i <= order; ++i) rd[i] = r[i];
  const double energy = levinson_durbin(rd, order, a);
  if (!(energy > 0.0)) return;  // documented: all zeros

  // Cepstrum of E / |A(e^jw)|^2 (see Backend::lpc_to_cepstrum):
  //   c_0 = ln E,  c_n = -a_n - sum_{k=1..n-1} (k/n) c_k a_{n-k}.
  // c_n for n >= 1 needs only c_1..c_{n-1}; keep them in double.
  std::vector<double> heap_c;
  double stack_c[2 * kMaxOrder + 2];
  double* c = stack_c;
  if (num_ceps > 2 * kMaxOrder + 2) {
    heap_c.resize(static_cast<size_t>(num_ceps));
    c = heap_c.data();
  }
  c[0] = std::log(energy);
  for (int n = 1; n < num_ceps; ++n) {
    double acc = n <= order ? -a[n] : 0.0;
    // a_{n-k} is zero when n - k > order, i.e. k < n - order.
    const int k_first = n - order > 1 ? n - order : 1;
    for (int k = k_first; k < n; ++k)
      acc -= (static_cast<double>(k) / n) * c[k] * a[n - k];
    c[n] = acc;
  }
  for (int n = 0; n < num_ceps; ++n) out[n] = static_cast<float>(c[n]);
}

}  // namespace gpuspeech
