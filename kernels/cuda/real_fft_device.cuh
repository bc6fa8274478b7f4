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

// One radix-2 stage (butterflies of span LEN) of an R-point DFT in
// registers; recursion over LEN keeps every trip count a template constant,
// so the loops unroll fully and v never leaves registers.
template <int R, int LEN>
struct DftStages {
  static __device__ __forceinline__ void run(float2 (&v)[R], const float2* __restrict__ tw,
                                             int stride) {
#pragma unroll
    for (int i = 0; i < R; i += LEN) {
#pragma unroll
      for (int q = 0; q < LEN / 2; ++q) {
        const float2 a = v[i + q];
        const float2 b = q == 0 ? v[i + q + LEN / 2]
                                : cmul(__ldg(&tw[q * (R / LEN) * stride]), v[i + q + LEN / 2]);
        v[i + q] = make_float2(a.x + b.x, a.y + b.y);
        v[i + q + LEN / 2] = make_float2(a.x - b.x, a.y - b.y);
      }
    }
    DftStages<R, 2 * LEN>::run(v, tw, stride);
  }
};
template <int R>
struct DftStages<R, 2 * R> {
  static __device__ __forceinline__ void run(float2 (&)[R], const float2*, int) {}
};

// In-place R-point DFT of v (radix-2, decimation in time).
// W_R^j = tw[j * stride].
template <int R>
__device__ __forceinline__ void dft_in_registers(float2 (&v)[R],
                                                 const float2* __restrict__ tw,
                                                 int stride) {
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
  DftStages<R, 2>::run(v, tw, stride);
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
