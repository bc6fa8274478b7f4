#include "common/features/fft.h"

#include <cmath>
#include <stdexcept>

namespace gpuspeech {

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

namespace {

std::vector<int> bit_reversal(int n) {
  std::vector<int> rev(n, 0);
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  for (int i = 0; i < n; ++i) {
    int r = 0;
    for (int b = 0; b < bits; ++b)
      if (i & (1 << b)) r |= 1 << (bits - 1 - b);
    rev[i] = r;
  }
  return rev;
}

// Iterative radix-2 decimation in time over data already in bit-reversed
// order; `twiddle` holds exp(-2 pi i j / n) for j < n/2.
template <typename T>
void butterflies(std::complex<T>* data, int n,
                 const std::vector<std::complex<T>>& twiddle) {
  for (int len = 2; len <= n; len <<= 1) {
    const int half = len / 2;
    const int step = n / len;
    for (int start = 0; start < n; start += len) {
      for (int j = 0; j < half; ++j) {
        const std::complex<T> w = twiddle[j * step];
        const std::complex<T> u = data[start + j];
        const std::complex<T> v = data[start + j + half] * w;
        data[start + j] = u + v;
        data[start + j + half] = u - v;
      }
    }
  }
}

template <typename T>
std::vector<std::complex<T>> make_twiddles(int n) {
  std::vector<std::complex<T>> tw(std::max(1, n / 2));
  for (int j = 0; j < n / 2; ++j) {
    const double a = -2.0 * M_PI * j / n;
    tw[j] = std::complex<T>(static_cast<T>(std::cos(a)), static_cast<T>(std::sin(a)));
  }
  return tw;
}

}  // namespace

template <typename T>
void fft_inplace(std::vector<std::complex<T>>& data) {
  const int n = static_cast<int>(data.size());
  if (!is_power_of_two(n))
    throw std::invalid_argument("FFT size must be a power of two, got " +
                                std::to_string(n));
  const std::vector<int> rev = bit_reversal(n);
  for (int i = 0; i < n; ++i)
    if (i < rev[i]) std::swap(data[i], data[rev[i]]);
  butterflies(data.data(), n, make_twiddles<T>(n));
}

template <typename T>
RealFft<T>::RealFft(int n) : n_(n) {
  if (!is_power_of_two(n) || n < 4)
    throw std::invalid_argument("real FFT size must be a power of two >= 4, got " +
                                std::to_string(n));
  const int m = n / 2;
  twiddle_ = make_twiddles<T>(m);
  bitrev_ = bit_reversal(m);
  post_.resize(m);
  for (int k = 0; k < m; ++k) {
    const double a = -2.0 * M_PI * k / n;
    post_[k] = std::complex<T>(static_cast<T>(std::cos(a)), static_cast<T>(std::sin(a)));
  }
}

// A real sequence of length n is packed into a complex one of length n/2
// (even samples real, odd imaginary); one half-size FFT and a split step
// give the n/2 + 1 bins of the real FFT.
template <typename T>
void RealFft<T>::forward(const T* in, std::complex<T>* out) const {
  const int m = n_ / 2;
  std::vector<std::complex<T>> z(m);
  for (int k = 0; k < m; ++k)
    z[bitrev_[k]] = std::complex<T>(in[2 * k], in[2 * k + 1]);
  butterflies(z.data(), m, twiddle_);
  const std::complex<T> half_i(0, T(0.5));
  out[0] = std::complex<T>(z[0].real() + z[0].imag(), 0);
  out[m] = std::complex<T>(z[0].real() - z[0].imag(), 0);
  for (int k = 1; k < m; ++k) {
    const std::complex<T> a = z[k];
    const std::complex<T> b = std::conj(z[m - k]);
    const std::complex<T> even = (a + b) * T(0.5);
    const std::complex<T> odd = (a - b) * (-half_i);  // (a - b) / (2i)
    out[k] = even + post_[k] * odd;
  }
}

template void fft_inplace<float>(std::vector<std::complex<float>>&);
template void fft_inplace<double>(std::vector<std::complex<double>>&);
template class RealFft<float>;
template class RealFft<double>;

}  // namespace gpuspeech
