// Device-side building blocks of the real FFT kernels (the fused real FFT +
// |X|^2 of feature_kernels.cu, and spectral_bands.cu, which frames the
// signal inside the same FFT): small DFTs in registers and the shape of the
// four-step decomposition. Included by .cu files only.
//
// A real n-point FFT is an m = n/2 point complex FFT of z[j] = x[2j] +
// i x[2j+1] split into the real transform afterwards (see the kernels); the
// m-point FFT is m = R1 * R2, one thread per n2 doing an R1-point DFT in
// registers, a twiddle, then through shared memory one thread per k1 doing
// an R2-point DFT.
#pragma once

#include <cuda_runtime.h>

namespace gpuspeech {
namespace cuda {
namespace fft_detail {

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__host__ __device__ constexpr int bit_reverse(int i, int bits) {
  int r = 0;
#pragma unroll
  for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
  return r;
}

__host__ __device__ constexpr int log2_of(int v) { return v <= 1 ? 0 : 1 + log2_of(v / 2); }

// exp(-2 pi i q / len) at compile time: Taylor series in double (the angle
// lies in (-pi, 0], where 30 terms reach double precision), rounded to
// float like the host's table of twiddles.
__host__ __device__ constexpr double taylor_sin(double x) {
  double term = x, sum = x;
  for (int n = 1; n < 30; ++n) {
    term *= -x * x / ((2.0 * n) * (2.0 * n + 1.0));
    sum += term;
  }
  return sum;
}
__host__ __device__ constexpr double taylor_cos(double x) {
  double term = 1.0, sum = 1.0;
  for (int n = 1; n < 30; ++n) {
    term *= -x * x / ((2.0 * n - 1.0) * (2.0 * n));
    sum += term;
  }
  return sum;
}
template <int LEN, int Q>
struct Twiddle {
  static constexpr double kAngle = -6.283185307179586476925286766559 * Q / LEN;
  static constexpr float kRe = static_cast<float>(taylor_cos(kAngle));
  static constexpr float kIm = static_cast<float>(taylor_sin(kAngle));
};

// b * W_LEN^Q with the twiddle a compile-time constant: the in-register
// DFTs load no twiddles, and the trivial ones cost nothing (1, and -i
// exactly, where a table holds cos(pi/2) ~ 6e-17 instead of 0).
template <int LEN, int Q>
__device__ __forceinline__ float2 times_twiddle(float2 b) {
  if constexpr (Q == 0) {
    return b;
  } else if constexpr (4 * Q == LEN) {
    return make_float2(b.y, -b.x);
  } else {
    constexpr float c = Twiddle<LEN, Q>::kRe, s = Twiddle<LEN, Q>::kIm;
    return make_float2(c * b.x - s * b.y, c * b.y + s * b.x);
  }
}

// The butterflies with twiddle W_LEN^Q of one radix-2 stage (span LEN) of
// an R-point DFT in registers, then those of Q + 1. Recursion over Q and
// LEN keeps every index a template constant: the loops unroll fully and v
// never leaves registers.
template <int R, int LEN, int Q>
struct Butterflies {
  static __device__ __forceinline__ void run(float2 (&v)[R]) {
#pragma unroll
    for (int i = 0; i < R; i += LEN) {
      const float2 a = v[i + Q];
      const float2 b = times_twiddle<LEN, Q>(v[i + Q + LEN / 2]);
      v[i + Q] = make_float2(a.x + b.x, a.y + b.y);
      v[i + Q + LEN / 2] = make_float2(a.x - b.x, a.y - b.y);
    }
    if constexpr (Q + 1 < LEN / 2) Butterflies<R, LEN, Q + 1>::run(v);
  }
};

template <int R, int LEN>
__device__ __forceinline__ void dft_stages(float2 (&v)[R]) {
  Butterflies<R, LEN, 0>::run(v);
  if constexpr (2 * LEN <= R) dft_stages<R, 2 * LEN>(v);
}

// In-place R-point DFT of v (radix-2, decimation in time).
template <int R>
__device__ __forceinline__ void dft_in_registers(float2 (&v)[R]) {
  constexpr int kBits = log2_of(R);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int j = bit_reverse(i, kBits);
    if (j > i) {
      const float2 tmp = v[i];
      v[i] = v[j];
      v[j] = tmp;
    }
  }
  dft_stages<R, 2>(v);
}

template <int N, int R1, int R2>
struct RealFftShape {
  static constexpr int kM = N / 2;
  static_assert(R1 * R2 == kM, "R1 * R2 must be n / 2");
  static constexpr int kThreadsPerFrame = R1 > R2 ? R1 : R2;
  static constexpr int kLd = R1 + 1;  // padded rows of step 1's output
  static constexpr int kBuf = R2 * kLd > kM ? R2 * kLd : kM;
  // Frames per block: up to 256 threads, under ~40 KB of shared memory.
  static constexpr int frames_per_block() {
    int f = 256 / kThreadsPerFrame;
    while (f > 1 && f * kBuf * 8 > 40 * 1024) f /= 2;
    return f;
  }
  static constexpr int kFrames = frames_per_block();
  static constexpr int kThreads = kFrames * kThreadsPerFrame;
};

}  // namespace fft_detail
}  // namespace cuda
}  // namespace gpuspeech
