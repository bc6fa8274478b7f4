// A small radix-2 FFT for the CPU backend and the double-precision test
// references. Power-of-two sizes only (every toolkit here pads to one).
#pragma once

#include <complex>
#include <vector>

namespace gpuspeech {

bool is_power_of_two(int n);

// In-place complex FFT (forward, no scaling), n = data.size() a power of two.
template <typename T>
void fft_inplace(std::vector<std::complex<T>>& data);

// Precomputed real-input FFT of size n (power of two): n real samples in,
// n/2 + 1 complex bins out. Reusable and thread-compatible (const use).
template <typename T>
class RealFft {
 public:
  explicit RealFft(int n);
  int size() const { return n_; }
  // in: n values; out: n/2 + 1 bins.
  void forward(const T* in, std::complex<T>* out) const;

 private:
  int n_;
  std::vector<std::complex<T>> twiddle_;  // n/2 roots for the half-size FFT
  std::vector<int> bitrev_;               // n/2 permutation
  std::vector<std::complex<T>> post_;     // n/2 split twiddles
};

extern template class RealFft<float>;
extern template class RealFft<double>;

}  // namespace gpuspeech
