// The fused spectral front end (spectral_bands.cuh). The FFT is the one of
// real_fft_device.cuh, as in the fused real FFT + |X|^2 kernel of
// feature_kernels.cu; what differs is where its input comes from and where
// its output goes. The framing follows frame_signal_kernel step by step
// (and so the CPU reference, cpu_backend.cpp): the same staging with one
// sample of history, the same double-precision sums for the means and the
// energy, the same pre-emphasis and window.
#include "kernels/cuda/spectral_bands.cuh"

#include "kernels/cuda/real_fft_device.cuh"
#include "kernels/cuda/unary_ops_device.cuh"

namespace gpuspeech {
namespace cuda {
namespace {

using fft_detail::cmul;
using fft_detail::dft_in_registers;
using fft_detail::RealFftShape;

// Sum over the T lanes of one frame (T = 16 or 32 consecutive lanes of a
// warp); every lane of the group gets the total. All 32 lanes of the warp
// must call it (full mask): the kernel keeps whole warps converged here.
template <int T>
__device__ __forceinline__ double group_sum(double v) {
#pragma unroll
  for (int off = T / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Blocks per SM the register budget must allow: at 512 points the shared
// memory (35 KB a block) allows 6, and 56 registers a thread only 4.
template <int N>
constexpr int min_blocks_per_sm() {
  return N == 512 ? 5 : 1;
}

template <int N, int R1, int R2, bool kPerFrame>
__global__ void __launch_bounds__(RealFftShape<N, R1, R2>::kThreads, min_blocks_per_sm<N>())
    spectral_bands_kernel(const float* __restrict__ signal, SpectralBandsParams sp, int64_t rows,
                          const float* __restrict__ window, const float2* __restrict__ tw,
                          const float* __restrict__ fb, const float* __restrict__ ranges,
                          const float* __restrict__ projection, float* __restrict__ bands,
                          float* __restrict__ energy) {
  using S = RealFftShape<N, R1, R2>;
  constexpr int M = S::kM;
  constexpr int T = S::kThreadsPerFrame;
  static_assert(T == 16 || T == 32, "a frame's threads must be a power-of-two part of a warp");
  // One buffer per frame, used three times: the staged samples, the FFT's
  // transposition, the power spectrum. It holds 2 * kBuf >= N + 2 floats.
  // With 16 threads a frame, a warp holds two frames: their buffers are
  // padded to sit 16 banks apart, so that the two halves' float reads of
  // the same position do not conflict.
  constexpr int kPad = T == 16 ? ((48 - (2 * S::kBuf) % 32) % 32) / 2 : 0;
  __shared__ float2 buf[S::kFrames][S::kBuf + kPad];
  constexpr int kBlockFloats = 2 * (S::kBuf + kPad) * S::kFrames;
  // A frame's buffer ends as the spectrum (M + 1 floats), the bands when
  // projected, and the filterbank's partial sums (T floats).
  static_assert(2 * S::kBuf >= M + 1 + kSpectralBandsMaxBands + T, "no room for the bands");
  // The projection, transposed (proj_t[j * outputs + o]), so that a frame's
  // threads, one output each, read consecutive words.
  extern __shared__ float proj_t[];
  const int outputs = sp.proj_outputs, group = sp.proj_group;
  for (int i = threadIdx.x; i < outputs * group; i += S::kThreads) {
    const int o = i / group, j = i - o * group;
    proj_t[j * outputs + o] = __ldg(projection + i);
  }

  const FrameParams& p = sp.frame;
  const int f = threadIdx.x / T;
  const int t = threadIdx.x - f * T;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * S::kFrames;
  const int64_t row = row0 + f;
  const bool live = row < rows;
  float2* b = buf[f];
  float* s = reinterpret_cast<float*>(b);
  float* block_floats = reinterpret_cast<float*>(&buf[0][0]);
  const int len = p.frame_length;

  // The filterbank's support, the same for every frame: each band's first
  // bin and where its weights start in the concatenation of all bands'
  // weights (an exclusive prefix of the clamped counts, band_start[nb] the
  // total), scanned by the first warp while the samples are staged.
  constexpr int kBins = M + 1;
  __shared__ int band_first[kSpectralBandsMaxBands];
  __shared__ int band_start[kSpectralBandsMaxBands + 1];
  const int nb = sp.num_bands;
  if (threadIdx.x < 32) {
    constexpr int kPerLane = (kSpectralBandsMaxBands + 31) / 32;
    const int lane = threadIdx.x;
    int counts[kPerLane];
    int sum = 0;
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) {
      const int j = lane * kPerLane + q;
      counts[q] = 0;
      if (j < nb) {
        int first = static_cast<int>(__ldg(ranges + 2 * j));
        int count = static_cast<int>(__ldg(ranges + 2 * j + 1));
        first = first < 0 ? 0 : (first > kBins ? kBins : first);
        count = count < 0 ? 0 : (count > kBins - first ? kBins - first : count);
        band_first[j] = first;
        counts[q] = count;
        sum += count;
      }
    }
    int inclusive = sum;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int n = __shfl_up_sync(0xffffffffu, inclusive, off);
      if (lane >= off) inclusive += n;
    }
    int run = inclusive - sum;
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) {
      const int j = lane * kPerLane + q;
      if (j < nb) band_start[j] = run;
      run += counts[q];
    }
    if (lane == 31) band_start[nb] = inclusive;
  }

  int64_t start = 0;
  if (live) {
    const int64_t u = row / p.frames_per_utt;
    start = p.first_frame_offset + (row - u * p.frames_per_utt) * p.frame_shift;
  }
  // Staging. xs[i] = x(start + i) for i < len and xs[-1] = x(start - 1),
  // with the zero rule of FramingSpec outside [0, valid_length).
  // Usually the block's frames are consecutive frames of one utterance:
  // their samples are one span (16 frames of 410 with a hop of 160: 2.8 k
  // samples instead of 6.6 k), staged once by all the block's threads with
  // every load in flight at once; the frames then overlap in shared memory.
  // Otherwise (a block across an utterance boundary, or a span too long for
  // the buffers) each frame stages its own samples into its own buffer.
  const int64_t last = (rows < row0 + S::kFrames ? rows : row0 + S::kFrames) - 1;
  const int64_t u0 = row0 / p.frames_per_utt;
  const int64_t span_floats = (last - row0) * p.frame_shift + len + 1;
  const bool one_span = last / p.frames_per_utt == u0 && span_floats <= kBlockFloats;
  const float* xs;
  if (one_span) {  // block-uniform
    const int64_t span_start =
        p.first_frame_offset + (row0 - u0 * p.frames_per_utt) * p.frame_shift - 1;
    const float* seg = signal + u0 * p.utt_stride + span_start;
    const int64_t lo = -span_start, hi = p.valid_length - span_start;
    const int n = static_cast<int>(span_floats);
#pragma unroll 4
    for (int i = threadIdx.x; i < n; i += S::kThreads)
      block_floats[i] = (i >= lo && i < hi) ? __ldg(seg + i) : 0.0f;
    // A dead frame reads (and never writes) the span's first samples.
    xs = block_floats + 1 + (live ? f * p.frame_shift : 0);
  } else {
    if (live) {
      const float* seg = signal + (row / p.frames_per_utt) * p.utt_stride;
      for (int i = t; i <= len; i += T) {
        const int64_t pos = start - 1 + i;
        s[1 + i] = (pos >= 0 && pos < p.valid_length) ? __ldg(seg + pos) : 0.0f;
      }
    }
    xs = s + 2;
  }
  __syncthreads();

  // The band containing element l of the concatenated weights (l < total):
  // the last band that starts at or before l, which skips empty bands.
  auto band_of = [&](int l) {
    int lo = 0, hi = nb;  // band_start[lo] <= l < band_start[hi]
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (band_start[mid] <= l) lo = mid; else hi = mid;
    }
    return lo;
  };
  // The concatenated weights in shared memory, as far as they fit (the
  // rest is read from the dense matrix): the frames then read them without
  // the scattered global loads of one band per thread. Read after the FFT's
  // barriers.
  constexpr int kSupport = 2 * kBins + 128;
  __shared__ float weights[kSupport];
  const int support = band_start[nb];
  for (int l = threadIdx.x; l < support && l < kSupport; l += S::kThreads) {
    const int j = band_of(l);
    weights[l] = __ldg(fb + static_cast<int64_t>(j) * kBins + band_first[j] + (l - band_start[j]));
  }

  // The frame's sums, as frame_signal_kernel: the mean of x (remove_dc),
  // the energy of x minus that mean, and for continuous pre-emphasis the
  // mean of y. Dead frames (past the last row) sum garbage, never written.
  float mean = 0.0f;
  if (p.remove_dc) {
    double acc = 0.0;
    for (int i = t; i < len; i += T) acc += xs[i];
    mean = static_cast<float>(group_sum<T>(acc) / len);
  }
  if (energy != nullptr) {
    double acc = 0.0;
    for (int i = t; i < len; i += T) {
      const float v = xs[i] - mean;
      acc += static_cast<double>(v) * v;
    }
    acc = group_sum<T>(acc);
    if (live && t == 0) energy[row] = static_cast<float>(acc);
  }
  const float a = p.preemphasis;
  // Continuous pre-emphasis: y[i] = x(p) - a x(p - 1) while p = start + i
  // is inside the signal (i < lim), 0 after it (Sphinx pads after
  // pre-emphasis).
  const int64_t room = p.valid_length - start;
  const int lim = room < 0 ? 0 : (room > len ? len : static_cast<int>(room));
  auto continuous = [&](int i) -> float { return i < lim ? xs[i] - a * xs[i - 1] : 0.0f; };
  float ymean = 0.0f;
  if (!kPerFrame && p.remove_dc) {
    double acc = 0.0;
    for (int i = t; i < len; i += T) acc += continuous(i);
    ymean = static_cast<float>(group_sum<T>(acc) / len);
  }
  // Sample i of the windowed frame (0 from frame_length to the FFT size).
  auto value = [&](int i) -> float {
    if (i >= len) return 0.0f;
    float v;
    if constexpr (kPerFrame) {
      const float cur = xs[i] - mean;
      const float prev = (i > 0 ? xs[i - 1] : xs[0]) - mean;
      v = cur - a * prev;
    } else {
      v = continuous(i) - ymean;
    }
    return v * __ldg(window + i);
  };

  // FFT step 1 input: thread n2 = t takes z[j] = (x[2j], x[2j+1]) for
  // j = R2 n1 + t, straight from the staged samples.
  float2 v[R1];
  if (t < R2) {
#pragma unroll
    for (int n1 = 0; n1 < R1; ++n1) {
      const int j = R2 * n1 + t;
      v[n1] = make_float2(value(2 * j), value(2 * j + 1));
    }
  }
  __syncthreads();  // the staged samples are read; the buffer is reused below

  if (t < R2) {  // steps 1 and 2
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

  // The real split and |X|^2 of bins k = t, t + T, ..., kept in registers
  // until every thread has read Z, then written over it as floats.
  constexpr int kPerThread = M / T + 1;
  float pw[kPerThread];
#pragma unroll
  for (int q = 0; q < kPerThread; ++q) {
    const int k = t + T * q;
    if (k <= M) {
      const float2 zk = b[k & (M - 1)];
      const float2 zm = b[(M - k) & (M - 1)];
      const float ex = 0.5f * (zk.x + zm.x), ey = 0.5f * (zk.y - zm.y);
      const float ox = 0.5f * (zk.y + zm.y), oy = -0.5f * (zk.x - zm.x);
      const float2 w = __ldg(&tw[k]);  // k <= m < n
      const float xr = ex + (w.x * ox - w.y * oy);
      const float xi = ey + (w.x * oy + w.y * ox);
      const float pk = xr * xr + xi * xi;
      pw[q] = sp.magnitude ? sqrtf(pk) : pk;
    }
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < kPerThread; ++q) {
    const int k = t + T * q;
    if (k <= M) s[k] = pw[q];
  }
  __syncthreads();  // the last block barrier

  // The filterbank, from the spectrum in shared memory, then the log (or
  // pow). The frame's T threads split the concatenated weights evenly
  // (slices of ceil(total / T)): a thread's time is the slice, not its
  // widest bands. A band inside a slice is finished there; one that runs
  // on into later slices is finished by the thread where it starts (its
  // owner), which adds the later slices' partial sums in order, so the sum
  // does not depend on timing. Projected bands stay in shared memory,
  // after the spectrum.
  const bool project = outputs > 0;  // grid-uniform
  float* band_s = s + kBins;
  float* partial = s + kBins + kSpectralBandsMaxBands;  // one per thread: its first band's part
  const int slice = (support + T - 1) / T;
  float* out = bands + row * nb;
  auto finish = [&](int j, float v) {
    v = sp.apply_op ? unary_op(sp.op, sp.op_param, v) : v;
    if (project)
      band_s[j] = v;
    else
      out[j] = v;
  };
  int owned = -1;  // a band this thread starts that later slices continue
  float owned_sum = 0.0f;
  if (live) {
    int l = t * slice;
    const int l_end = min(support, l + slice);
    if (l < l_end) {
      int j = band_of(l);
      bool head = l == band_start[j];
      int end = band_start[j + 1];
      // Element l of band j is bin l + shift of row j.
      int shift = band_first[j] - band_start[j];
      const float* row_w = fb + static_cast<int64_t>(j) * kBins;
      float acc = 0.0f;
      for (; l < l_end; ++l) {
        if (l == end) {  // band j ends inside this slice
          if (head) finish(j, acc); else partial[t] = acc;
          do ++j; while (band_start[j + 1] == band_start[j]);  // past empty bands
          head = true;
          end = band_start[j + 1];
          shift = band_first[j] - band_start[j];
          row_w = fb + static_cast<int64_t>(j) * kBins;
          acc = 0.0f;
        }
        const float w = l < kSupport ? weights[l] : __ldg(row_w + l + shift);
        acc += w * s[l + shift];
      }
      if (!head) {
        partial[t] = acc;
      } else if (end == l_end) {
        finish(j, acc);
      } else {
        owned = j;
        owned_sum = acc;
      }
    }
  }
  __syncwarp();  // the partial sums are written; a frame's threads are lanes of one warp
  if (owned >= 0) {
    const int end = band_start[owned + 1];
    for (int u = t + 1; u < T && u * slice < end; ++u) owned_sum += partial[u];
    finish(owned, owned_sum);
  }
  if (live) {  // empty bands: the product with no weights
    for (int j = t; j < nb; j += T)
      if (band_start[j + 1] == band_start[j]) finish(j, 0.0f);
  }
  if (!project) return;
  __syncwarp();  // a frame's threads are lanes of one warp
  if (!live) return;
  // Output q of the row: output o of group g, summed over the group's bands
  // in order.
  const int columns = nb / group * outputs;
  float* mapped = bands + row * columns;
  for (int q = t; q < columns; q += T) {
    const int g = q / outputs, o = q - g * outputs;
    const float* x = band_s + g * group;
    float acc = 0.0f;
    for (int j = 0; j < group; ++j) acc += proj_t[j * outputs + o] * x[j];
    mapped[q] = acc;
  }
}

// The pre-emphasis mode is a template argument: it decides the inner loop
// of the windowing, which then has no branch on it.
template <int N, int R1, int R2>
cudaError_t launch_sized(const float* signal, const SpectralBandsParams& p, int64_t rows,
                         const float* window, const float2* tw, const float* fb,
                         const float* ranges, const float* projection, float* bands,
                         float* energy, cudaStream_t stream) {
  using S = RealFftShape<N, R1, R2>;
  const unsigned int blocks = static_cast<unsigned int>((rows + S::kFrames - 1) / S::kFrames);
  const size_t dynamic = static_cast<size_t>(p.proj_outputs) * p.proj_group * sizeof(float);
  if (p.frame.preemphasis_per_frame)
    spectral_bands_kernel<N, R1, R2, true><<<blocks, S::kThreads, dynamic, stream>>>(
        signal, p, rows, window, tw, fb, ranges, projection, bands, energy);
  else
    spectral_bands_kernel<N, R1, R2, false><<<blocks, S::kThreads, dynamic, stream>>>(
        signal, p, rows, window, tw, fb, ranges, projection, bands, energy);
  return cudaGetLastError();
}

}  // namespace

bool has_spectral_bands(int fft_size) {
  return fft_size == 256 || fft_size == 512 || fft_size == 1024 || fft_size == 2048;
}

cudaError_t launch_spectral_bands(const float* signal, const SpectralBandsParams& p,
                                  const float* window, const float* twiddles,
                                  const float* filterbank, const float* ranges,
                                  const float* projection, float* bands, float* energy,
                                  cudaStream_t stream) {
  const int64_t rows = p.frame.num_utts * p.frame.frames_per_utt;
  if (rows == 0) return cudaSuccess;
  if (p.frame.frame_length > p.frame.fft_size || p.num_bands > kSpectralBandsMaxBands)
    return cudaErrorInvalidValue;
  if (p.proj_outputs != 0 &&
      (p.proj_group < 1 || p.num_bands % p.proj_group != 0 || projection == nullptr ||
       p.proj_outputs * p.proj_group > kSpectralBandsMaxProjection))
    return cudaErrorInvalidValue;
  const float2* tw = reinterpret_cast<const float2*>(twiddles);
  switch (p.frame.fft_size) {
    case 256:
      return launch_sized<256, 16, 8>(signal, p, rows, window, tw, filterbank, ranges,
                                      projection, bands, energy, stream);
    case 512:
      return launch_sized<512, 16, 16>(signal, p, rows, window, tw, filterbank, ranges,
                                       projection, bands, energy, stream);
    case 1024:
      return launch_sized<1024, 32, 16>(signal, p, rows, window, tw, filterbank, ranges,
                                        projection, bands, energy, stream);
    case 2048:
      return launch_sized<2048, 32, 32>(signal, p, rows, window, tw, filterbank, ranges,
                                        projection, bands, energy, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace gpuspeech
