// CUDA kernels of the feature pipeline. See feature_kernels.cuh for the
// contract and common/backends/backend.h for the meaning of each operation; the CPU
// backend (common/backends/cpu_backend.cpp) is the reference these follow.
#include "kernels/cuda/feature_kernels.cuh"
#include "kernels/cuda/real_fft_device.cuh"
#include "kernels/cuda/unary_ops_device.cuh"

#include <math.h>

namespace gpuspeech {
namespace cuda {
namespace {

using fft_detail::cmul;
using fft_detail::dft_in_registers;
using fft_detail::RealFftShape;

constexpr int kElementThreads = 256;

// Grid size for a grid-stride loop over n elements: enough blocks to fill
// the GPU many times over, never more than the hardware limit.
unsigned int grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  const int64_t kMaxBlocks = 1 << 20;  // grid-stride loops cover the rest
  return static_cast<unsigned int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Sum over the 32 lanes of a warp; every lane gets the total.
__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One warp per output frame, several frames per block. Each warp stages its
// frame in shared memory with one sample of history,
// s[0] = x(start - 1) and s[1 + i] = x(start + i), then (continuous
// pre-emphasis only) the pre-emphasised frame y[i] in s[len + 1 + i].
// Neighbouring frames of a block overlap, so most of the staging loads hit
// L1; the output row goes out in 16-byte stores.
//
// The two pre-emphasis modes treat DC removal differently, as the CPU
// reference does: per frame removes the mean of x before pre-emphasis;
// continuous pre-emphasises the raw signal and removes the mean of y.
// The energy is always that of x minus its mean.
__global__ void frame_signal_kernel(const float* __restrict__ signal,
                                    FrameParams p, int64_t rows,
                                    const float* __restrict__ window,
                                    float* __restrict__ frames,
                                    float* __restrict__ energy) {
  extern __shared__ float smem[];
  const int lane = threadIdx.x & 31;
  const int len = p.frame_length;
  float* s = smem + (threadIdx.x >> 5) * (2 * len + 2);
  const int64_t r =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;  // whole warps only; no block-wide barriers below

  const int64_t u = r / p.frames_per_utt;
  const int64_t t = r - u * p.frames_per_utt;
  const int64_t start = p.first_frame_offset + t * p.frame_shift;
  const float* seg = signal + u * p.utt_stride;
  for (int i = lane; i <= len; i += 32) {
    const int64_t pos = start - 1 + i;
    s[i] = (pos >= 0 && pos < p.valid_length) ? seg[pos] : 0.0f;
  }
  __syncwarp();

  float mean = 0.0f;
  if (p.remove_dc) {
    double acc = 0.0;
    for (int i = lane; i < len; i += 32) acc += s[1 + i];
    mean = static_cast<float>(warp_sum(acc) / len);
  }
  if (energy != nullptr) {
    double acc = 0.0;
    for (int i = lane; i < len; i += 32) {
      const float v = s[1 + i] - mean;
      acc += static_cast<double>(v) * v;
    }
    acc = warp_sum(acc);
    if (lane == 0) energy[r] = static_cast<float>(acc);
  }

  const float a = p.preemphasis;
  float* out = frames + r * p.fft_size;
  const float* y = s + len + 1;
  float ymean = 0.0f;
  if (!p.preemphasis_per_frame) {
    // Continuous: y[i] = x(p) - a x(p - 1) while p is inside the signal,
    // 0 after it; then optionally minus the mean of y.
    float* yw = s + len + 1;
    double acc = 0.0;
    for (int i = lane; i < len; i += 32) {
      const float v = start + i < p.valid_length ? s[1 + i] - a * s[i] : 0.0f;
      yw[i] = v;
      acc += v;
    }
    if (p.remove_dc) ymean = static_cast<float>(warp_sum(acc) / len);
    __syncwarp();
  }
  // Sample i of the output row, before the window.
  auto value = [&](int i) -> float {
    if (p.preemphasis_per_frame) {
      const float cur = s[1 + i] - mean;
      const float prev = (i > 0 ? s[i] : s[1]) - mean;
      return cur - a * prev;
    }
    return y[i] - ymean;
  };
  if ((p.fft_size & 3) == 0) {
    float4* out4 = reinterpret_cast<float4*>(out);
    for (int i = 4 * lane; i < p.fft_size; i += 128) {
      float4 o;
      o.x = i + 0 < len ? value(i + 0) * window[i + 0] : 0.0f;
      o.y = i + 1 < len ? value(i + 1) * window[i + 1] : 0.0f;
      o.z = i + 2 < len ? value(i + 2) * window[i + 2] : 0.0f;
      o.w = i + 3 < len ? value(i + 3) * window[i + 3] : 0.0f;
      out4[i >> 2] = o;
    }
  } else {
    for (int i = lane; i < p.fft_size; i += 32)
      out[i] = i < len ? value(i) * window[i] : 0.0f;
  }
}

// ---------------------------------------------------------------------------
// Real FFT + power spectrum in one kernel, for the common FFT sizes.
//
// A real n-point FFT is an m = n/2 point complex FFT of z[j] = x[2j] +
// i x[2j+1], then the split X[k] = E[k] + W^k O[k] with
// E[k] = (Z[k] + conj Z[m-k]) / 2, O[k] = (Z[k] - conj Z[m-k]) / 2i,
// W = exp(-2 pi i / n). The m-point FFT is done in four steps with
// m = R1 * R2, n_idx = R2 n1 + n2, k = k1 + R1 k2:
//   1. for each n2 (one thread), the R1-point DFT over n1, in registers;
//   2. times the twiddle W_m^(n2 k1);
//   3. through shared memory, for each k1 (one thread), the R2-point DFT
//      over n2, giving Z[k1 + R1 k2];
// then the split and |X|^2 read Z from shared memory. Frames in, spectrum
// out, nothing else through device memory: this replaces cuFFT's complex
// output (written, then read again by the power kernel).
//
// `tw` holds the full circle W^k = exp(-2 pi i k / n), k < n, computed in
// double on the host.

template <int N, int R1, int R2>
__global__ void __launch_bounds__(RealFftShape<N, R1, R2>::kThreads)
    real_fft_power_kernel(const float* __restrict__ frames, int64_t rows,
                          const float2* __restrict__ tw, bool magnitude,
                          float* __restrict__ spectrum) {
  using S = RealFftShape<N, R1, R2>;
  constexpr int M = S::kM;
  constexpr int T = S::kThreadsPerFrame;
  __shared__ float2 buf[S::kFrames][S::kBuf];

  const int f = threadIdx.x / T;
  const int t = threadIdx.x - f * T;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * S::kFrames + f;
  const bool live = row < rows;
  float2* b = buf[f];

  if (t < R2) {  // step 1 and 2: thread n2 = t
    const float2* z = reinterpret_cast<const float2*>(frames + row * N);
    float2 v[R1];
#pragma unroll
    for (int n1 = 0; n1 < R1; ++n1) v[n1] = live ? z[R2 * n1 + t] : make_float2(0.0f, 0.0f);
    dft_in_registers<R1>(v);
#pragma unroll
    for (int k1 = 0; k1 < R1; ++k1) {
      const float2 w = __ldg(&tw[(2 * t * k1) & (N - 1)]);  // W_m^(n2 k1)
      b[t * S::kLd + k1] = k1 == 0 ? v[k1] : cmul(w, v[k1]);
    }
  }
  __syncthreads();
  float2 u[R2];
  if (t < R1) {  // step 3: thread k1 = t
#pragma unroll
    for (int n2 = 0; n2 < R2; ++n2) u[n2] = b[n2 * S::kLd + t];
    dft_in_registers<R2>(u);
  }
  __syncthreads();
  if (t < R1) {
#pragma unroll
    for (int k2 = 0; k2 < R2; ++k2) b[t + R1 * k2] = u[k2];
  }
  __syncthreads();
  if (!live) return;
  float* out = spectrum + row * (M + 1);
  for (int k = t; k <= M; k += T) {
    const float2 zk = b[k & (M - 1)];
    const float2 zm = b[(M - k) & (M - 1)];
    const float ex = 0.5f * (zk.x + zm.x), ey = 0.5f * (zk.y - zm.y);
    const float ox = 0.5f * (zk.y + zm.y), oy = -0.5f * (zk.x - zm.x);
    const float2 w = __ldg(&tw[k]);  // k <= m < n
    const float xr = ex + (w.x * ox - w.y * oy);
    const float xi = ey + (w.x * oy + w.y * ox);
    const float pw = xr * xr + xi * xi;
    out[k] = magnitude ? sqrtf(pw) : pw;
  }
}

template <int N, int R1, int R2>
cudaError_t launch_real_fft_power(const float* frames, int64_t rows, const float2* tw,
                                  bool magnitude, float* spectrum, cudaStream_t stream) {
  using S = RealFftShape<N, R1, R2>;
  const int64_t blocks = (rows + S::kFrames - 1) / S::kFrames;
  real_fft_power_kernel<N, R1, R2><<<static_cast<unsigned int>(blocks), S::kThreads, 0,
                                     stream>>>(frames, rows, tw, magnitude, spectrum);
  return cudaGetLastError();
}

__global__ void power_kernel(const float2* __restrict__ bins, int64_t n,
                             bool magnitude, float* __restrict__ spectrum) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float2 b = bins[i];
    const float p = b.x * b.x + b.y * b.y;
    spectrum[i] = magnitude ? sqrtf(p) : p;
  }
}

__global__ void apply_kernel(int op, float param, float* __restrict__ x,
                             int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = unary_op(op, param, x[i]);
  }
}

__global__ void log_into_column_kernel(const float* __restrict__ src,
                                       int64_t rows, float param,
                                       float* __restrict__ dst, int dst_cols,
                                       int dst_col) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       r < rows; r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[r * dst_cols + dst_col] = logf(fmaxf(src[r], param));
  }
}

__global__ void splice_kernel(const float* __restrict__ src, int64_t num_utts,
                              int64_t rows_per_utt, int cols, int left,
                              int right, float* __restrict__ dst) {
  const int64_t width = static_cast<int64_t>(left + right + 1) * cols;
  const int64_t n = num_utts * rows_per_utt * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / width;
    const int64_t col = i - row * width;
    const int64_t j = col / cols;  // context slot, 0 = t - left
    const int64_t c = col - j * cols;
    const int64_t u = row / rows_per_utt;
    const int64_t t = row - u * rows_per_utt;
    int64_t st = t - left + j;
    st = st < 0 ? 0 : (st >= rows_per_utt ? rows_per_utt - 1 : st);
    dst[i] = src[(u * rows_per_utt + st) * cols + c];
  }
}

// One thread per row, in double, step by step as common/features/lpc.h describes:
// Levinson-Durbin, then the all-pole model's cepstrum.
__global__ void lpc_to_cepstrum_kernel(const float* __restrict__ autocorr,
                                       int64_t rows, int order, int num_ceps,
                                       float* __restrict__ ceps) {
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) +
                     threadIdx.x;
       row < rows; row += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* rf = autocorr + row * (order + 1);
    float* out = ceps + row * num_ceps;

    double r[kMaxLpcOrder + 1];
    double a[kMaxLpcOrder + 1];
    double prev[kMaxLpcOrder + 1];
    for (int i = 0; i <= order; ++i) r[i] = rf[i];

    bool ok = r[0] > 0.0 && isfinite(r[0]);
    double err = r[0];
    a[0] = 1.0;
    for (int i = 1; ok && i <= order; ++i) {
      double acc = r[i];
      for (int j = 1; j < i; ++j) acc += a[j] * r[i - j];
      const double k = -acc / err;
      for (int j = 1; j < i; ++j) prev[j] = a[j];
      for (int j = 1; j < i; ++j) a[j] = prev[j] + k * prev[i - j];
      a[i] = k;
      err *= (1.0 - k * k);
      // |k| >= 1: not positive definite; the model is meaningless.
      if (!(err > 0.0) || !isfinite(err)) ok = false;
    }
    if (!ok) {
      for (int n = 0; n < num_ceps; ++n) out[n] = 0.0f;
      continue;
    }

    double c[kMaxLpcCeps];
    c[0] = log(err);
    for (int n = 1; n < num_ceps; ++n) {
      double acc = n <= order ? -a[n] : 0.0;
      const int k_first = n - order > 1 ? n - order : 1;  // a_{n-k} = 0 below
      for (int k = k_first; k < n; ++k)
        acc -= (static_cast<double>(k) / n) * c[k] * a[n - k];
      c[n] = acc;
    }
    for (int n = 0; n < num_ceps; ++n) out[n] = static_cast<float>(c[n]);
  }
}

}  // namespace

cudaError_t check_kernel_image() {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, frame_signal_kernel);
}

int frame_warps_per_block(int frame_length) {
  const size_t per_warp = (2 * static_cast<size_t>(frame_length) + 2) * sizeof(float);
  int warps = 8;
  while (warps > 1 && warps * per_warp > 48 * 1024) warps /= 2;
  return warps;
}

cudaError_t launch_frame_signal(const float* signal, const FrameParams& p,
                                const float* window, float* frames,
                                float* energy, cudaStream_t stream) {
  const int64_t rows = p.num_utts * p.frames_per_utt;
  if (rows == 0) return cudaSuccess;
  const int warps = frame_warps_per_block(p.frame_length);
  // Per warp: x with one sample of history, plus y for continuous
  // pre-emphasis (an even count keeps each warp's slice 8-byte aligned).
  const size_t shared =
      warps * (2 * static_cast<size_t>(p.frame_length) + 2) * sizeof(float);
  const int64_t blocks = (rows + warps - 1) / warps;
  frame_signal_kernel<<<static_cast<unsigned int>(blocks), 32 * warps, shared,
                        stream>>>(signal, p, rows, window, frames, energy);
  return cudaGetLastError();
}

bool has_real_fft_power(int fft_size) {
  return fft_size == 256 || fft_size == 512 || fft_size == 1024 || fft_size == 2048;
}

cudaError_t launch_real_fft_power(const float* frames, int64_t rows, int fft_size,
                                  const float* twiddles, bool magnitude,
                                  float* spectrum, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const float2* tw = reinterpret_cast<const float2*>(twiddles);
  switch (fft_size) {
    case 256: return launch_real_fft_power<256, 16, 8>(frames, rows, tw, magnitude, spectrum, stream);
    case 512: return launch_real_fft_power<512, 16, 16>(frames, rows, tw, magnitude, spectrum, stream);
    case 1024: return launch_real_fft_power<1024, 32, 16>(frames, rows, tw, magnitude, spectrum, stream);
    case 2048: return launch_real_fft_power<2048, 32, 32>(frames, rows, tw, magnitude, spectrum, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_power_from_complex(const float* bins, int64_t n,
                                      bool magnitude, float* spectrum,
                                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  power_kernel<<<grid_for(n, kElementThreads), kElementThreads, 0, stream>>>(
      reinterpret_cast<const float2*>(bins), n, magnitude, spectrum);
  return cudaGetLastError();
}

cudaError_t launch_apply(int op, float param, float* x, int64_t n,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  apply_kernel<<<grid_for(n, kElementThreads), kElementThreads, 0, stream>>>(
      op, param, x, n);
  return cudaGetLastError();
}

cudaError_t launch_log_into_column(const float* src, int64_t rows,
                                   float param, float* dst, int dst_cols,
                                   int dst_col, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  log_into_column_kernel<<<grid_for(rows, kElementThreads), kElementThreads, 0,
                           stream>>>(src, rows, param, dst, dst_cols, dst_col);
  return cudaGetLastError();
}

cudaError_t launch_splice(const float* src, int64_t num_utts,
                          int64_t rows_per_utt, int cols, int left, int right,
                          float* dst, cudaStream_t stream) {
  const int64_t n =
      num_utts * rows_per_utt * static_cast<int64_t>(left + right + 1) * cols;
  if (n == 0) return cudaSuccess;
  splice_kernel<<<grid_for(n, kElementThreads), kElementThreads, 0, stream>>>(
      src, num_utts, rows_per_utt, cols, left, right, dst);
  return cudaGetLastError();
}

cudaError_t launch_lpc_to_cepstrum(const float* autocorr, int64_t rows,
                                   int order, int num_ceps, float* ceps,
                                   cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  constexpr int kThreads = 128;
  lpc_to_cepstrum_kernel<<<grid_for(rows, kThreads), kThreads, 0, stream>>>(
      autocorr, rows, order, num_ceps, ceps);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
