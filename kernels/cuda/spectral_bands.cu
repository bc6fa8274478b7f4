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

// Blocks per SM the register budget must allow at 512 points: five blocks
// of 256 threads (48 registers a thread), as many as the shared memory
// (about 42 KB a block with the Sphinx DCT) allows.
template <int N>
constexpr int min_blocks_per_sm() {
  return N == 512 ? 5 : 1;
}

// What every block of the main kernel needs besides the audio and is the
// same for all frames, laid out once a call by filterbank_layout_kernel and
// copied by each block 16 bytes a load (no block derives anything from the
// filterbank): the concatenation of every band's non-zero weights, element
// l with its code, bin | band << 16, negative on a band's last element; for
// each band its finishing details; the projection's padded rows. The
// layout buffer holds, as ints then floats:
//   [0]                  the total number of elements
//   [kLayoutStart + j]   where band j's elements start (j <= num_bands)
//   [kLayoutFirst + j]   band j's first bin, clamped into the row
//   [kLayoutBand + j]    band j's finish (band_finish below)
//   [kLayoutCode + l]    element l's code (while the total fits)
//   [kLayoutWeight + l]  element l's weight
//   [kLayoutMatrix + i]  the projection, rows at matrix_stride(group)
//   [kLayoutWindow + i]  the window, zero from frame_length to the FFT size
__host__ __device__ constexpr int round4(int n) { return (n + 3) & ~3; }
constexpr int kLayoutMaxSupport = 1028;  // support_capacity() at any N, rounded to 4
constexpr int kLayoutStart = 1;
constexpr int kLayoutFirst = kLayoutStart + kSpectralBandsMaxBands + 1;
constexpr int kLayoutBand = round4(kLayoutFirst + kSpectralBandsMaxBands);
constexpr int kLayoutCode = kLayoutBand + round4(kSpectralBandsMaxBands);
constexpr int kLayoutWeight = kLayoutCode + kLayoutMaxSupport;
constexpr int kLayoutMatrix = kLayoutWeight + kLayoutMaxSupport;
constexpr int kLayoutWindow = kLayoutMatrix + kSpectralBandsMaxProjection;
constexpr int kLayoutFloats = kLayoutWindow + 2048;  // the largest FFT
constexpr int kLayoutThreads = 256;

// A band's finish, packed in an int: the first and the last of the frame's
// slices (of the concatenated weights) that hold its elements, where the
// projected band goes (projections only), whether it is the last of its
// group (then zeros pad the group to four floats), whether it is empty.
__host__ __device__ constexpr int pack_finish(int first_slice, int last_slice, int position,
                                              bool last_of_group, bool empty) {
  return first_slice | (last_slice << 8) | (position << 16) | (last_of_group ? 1 << 24 : 0) |
         (empty ? 1 << 25 : 0);
}

// The elements the main kernel holds in shared memory at N points: two a
// bin, up to 1 026 (N = 1024) so that the 2048-point kernel stays within
// the 48 KB of static shared memory.
template <int N>
__host__ __device__ constexpr int support_capacity() {
  return 2 * (N / 2 + 1) < 1026 ? 2 * (N / 2 + 1) : 1026;
}

// The band holding element l (0 <= l < start[nb]): the last band starting
// at or before l, which passes over empty bands.
__device__ __forceinline__ int band_of(const int* start, int nb, int l) {
  int lo = 0, hi = nb;  // start[lo] <= l < start[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (start[mid] <= l) lo = mid; else hi = mid;
  }
  return lo;
}

// Projected bands sit in groups padded to a multiple of four floats (zeros
// after each group), read four at a time; the matrix rows likewise, at a
// stride that is an odd multiple of four floats, so that a frame's threads,
// a row each, read 16 bytes from shared memory in two wavefronts.
__host__ __device__ constexpr int group_stride(int group) { return (group + 3) & ~3; }
__host__ __device__ constexpr int matrix_stride(int group) {
  return (group_stride(group) / 4) % 2 == 1 ? group_stride(group) : group_stride(group) + 4;
}

// One block. Codes and weights are written only while the total fits
// `cap`, the most the main kernel holds for this FFT size, whose frames
// have `threads` threads each; `outputs` 0: no projection.
__global__ void __launch_bounds__(kLayoutThreads)
    filterbank_layout_kernel(const float* __restrict__ fb, const float* __restrict__ ranges,
                             const float* __restrict__ projection,
                             const float* __restrict__ window, int frame_length, int n,
                             int nb, int bins, int cap, int threads, int group, int outputs,
                             float* __restrict__ layout) {
  for (int i = threadIdx.x; i < n; i += kLayoutThreads)
    layout[kLayoutWindow + i] = i < frame_length ? window[i] : 0.0f;
  __shared__ int start[kSpectralBandsMaxBands + 1];
  __shared__ int first[kSpectralBandsMaxBands];
  int* li = reinterpret_cast<int*>(layout);
  if (threadIdx.x < 32) {  // an exclusive scan of the clamped counts
    constexpr int kPerLane = (kSpectralBandsMaxBands + 31) / 32;
    const int lane = threadIdx.x;
    int counts[kPerLane];
    int sum = 0;
#pragma unroll
    for (int q = 0; q < kPerLane; ++q) {
      const int j = lane * kPerLane + q;
      counts[q] = 0;
      if (j < nb) {
        int f = static_cast<int>(ranges[2 * j]);
        int c = static_cast<int>(ranges[2 * j + 1]);
        f = f < 0 ? 0 : (f > bins ? bins : f);
        c = c < 0 ? 0 : (c > bins - f ? bins - f : c);
        first[j] = f;
        counts[q] = c;
        sum += c;
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
      if (j < nb) start[j] = run;
      run += counts[q];
    }
    if (lane == 31) start[nb] = inclusive;
  }
  __syncthreads();
  const int total = start[nb];
  if (threadIdx.x == 0) li[0] = total;
  for (int j = threadIdx.x; j <= nb; j += kLayoutThreads) {
    li[kLayoutStart + j] = start[j];
    if (j < nb) li[kLayoutFirst + j] = first[j];
  }
  const bool fits = total <= cap;
  const int slice = (total + threads - 1) / threads;
  for (int j = threadIdx.x; j < nb; j += kLayoutThreads) {
    const int a = start[j], e = start[j + 1];
    const bool carries = fits && e > a;
    const int g = outputs > 0 ? j / group : 0;
    li[kLayoutBand + j] =
        pack_finish(carries ? a / slice : 0, carries ? (e - 1) / slice : 0,
                    outputs > 0 ? g * group_stride(group) + (j - g * group) : 0,
                    outputs > 0 && j - g * group == group - 1, e == a);
  }
  if (outputs > 0) {
    const int stride = matrix_stride(group);
    for (int i = threadIdx.x; i < outputs * stride; i += kLayoutThreads) {
      const int o = i / stride, j = i - o * stride;
      layout[kLayoutMatrix + i] = j < group ? projection[o * group + j] : 0.0f;
    }
  }
  if (!fits) return;
  for (int l = threadIdx.x; l < total; l += kLayoutThreads) {
    const int j = band_of(start, nb, l);
    const int bin = first[j] + (l - start[j]);
    const bool last = l == start[j + 1] - 1;
    li[kLayoutCode + l] = bin | (j << 16) | (last ? static_cast<int>(0x80000000u) : 0);
    layout[kLayoutWeight + l] = fb[static_cast<int64_t>(j) * bins + bin];
  }
}

template <int N, int R1, int R2, bool kPerFrame>
__global__ void __launch_bounds__(RealFftShape<N, R1, R2>::kThreads, min_blocks_per_sm<N>())
    spectral_bands_kernel(const float* __restrict__ signal, SpectralBandsParams sp, int64_t rows,
                          const float2* __restrict__ tw, const float* __restrict__ fb,
                          const float* __restrict__ layout, float* __restrict__ bands,
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
  __shared__ __align__(16) float2 buf[S::kFrames][S::kBuf + kPad];  // 16: float4 reads
  constexpr int kBlockFloats = 2 * (S::kBuf + kPad) * S::kFrames;
  // A frame's buffer ends as the spectrum (M + 1 floats), the bands when
  // projected, and the filterbank's partial sums (T floats).
  static_assert(2 * S::kBuf >= M + 1 + kSpectralBandsMaxBands + T, "no room for the bands");
  static_assert(M + 1 >= 128, "projected bands go over the first 128 bins");
  // The projection's rows at matrix_stride(group), zero after each row's
  // group of weights (filterbank_layout_kernel).
  extern __shared__ float4 projection_rows[];
  const float* proj = reinterpret_cast<const float*>(projection_rows);
  const int outputs = sp.proj_outputs, group = sp.proj_group;
  const int pstride = matrix_stride(group);
  {
    const float4* src = reinterpret_cast<const float4*>(layout + kLayoutMatrix);
    for (int i = threadIdx.x; i < outputs * pstride / 4; i += S::kThreads)
      projection_rows[i] = __ldg(src + i);
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

  // The filterbank's layout (filterbank_layout_kernel), copied while the
  // samples are staged; read after the FFT's barriers. Elements past what
  // shared memory holds (a filterbank with more than two weights a bin)
  // take the slower loop over the dense matrix below.
  constexpr int kBins = M + 1;
  constexpr int kSupport = support_capacity<N>();
  __shared__ int4 finish4[round4(kSpectralBandsMaxBands) / 4];
  const int* band_finish = reinterpret_cast<const int*>(finish4);
  __shared__ int4 codes4[round4(kSupport) / 4];
  __shared__ float4 weights4[round4(kSupport) / 4];
  const int* codes = reinterpret_cast<const int*>(codes4);
  const float* weights = reinterpret_cast<const float*>(weights4);
  const int nb = sp.num_bands;
  const int* layout_i = reinterpret_cast<const int*>(layout);
  const int support = __ldg(layout_i);
  const bool fits = support <= kSupport;  // grid-uniform
  for (int i = threadIdx.x; i < (nb + 3) / 4; i += S::kThreads)
    finish4[i] = __ldg(reinterpret_cast<const int4*>(layout_i + kLayoutBand) + i);
  if (fits) {
    const int4* code_src = reinterpret_cast<const int4*>(layout_i + kLayoutCode);
    const float4* weight_src = reinterpret_cast<const float4*>(layout + kLayoutWeight);
    const int n4 = (support + 3) / 4;  // past the total: unread garbage
    for (int i = threadIdx.x; i < 2 * n4; i += S::kThreads) {
      if (i < n4)
        codes4[i] = __ldg(code_src + i);
      else
        weights4[i - n4] = __ldg(weight_src + (i - n4));
    }
  }

  int64_t start = 0;
  if (live) {
    const int64_t u = row / p.frames_per_utt;
    start = p.first_frame_offset + (row - u * p.frames_per_utt) * p.frame_shift;
  }
  // Staging. xs[i] = x(start + i) for i < N and xs[-1] = x(start - 1),
  // with the zero rule of FramingSpec outside [0, valid_length).
  // Usually the block's frames are consecutive frames of one utterance:
  // their samples are one span (16 frames of 410 with a hop of 160: 2.8 k
  // samples instead of 6.6 k), staged once by all the block's threads with
  // every load in flight at once; the frames then overlap in shared memory.
  // Otherwise (a block across an utterance boundary, or a span too long for
  // the buffers) each frame stages its own samples into its own buffer.
  const int64_t last = (rows < row0 + S::kFrames ? rows : row0 + S::kFrames) - 1;
  const int64_t u0 = row0 / p.frames_per_utt;
  // Each frame's N samples (and the one before) are staged, not only its
  // frame_length: the windowing reads them all, the zero window past
  // frame_length cancelling them, so that it needs no branch.
  const int64_t span_floats = (last - row0) * p.frame_shift + N + 1;
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
      for (int i = t; i <= N; i += T) {
        const int64_t pos = start - 1 + i;
        s[1 + i] = (pos >= 0 && pos < p.valid_length) ? __ldg(seg + pos) : 0.0f;
      }
    }
    xs = s + 2;
  }
  __syncthreads();

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
  // Samples 2j and 2j + 1 of the windowed frame (0 from frame_length to
  // the FFT size, where the layout's window is 0 and the staged samples are
  // finite): three loads a pair, selects, no branch.
  const float2* wpad = reinterpret_cast<const float2*>(layout + kLayoutWindow);
  auto pair = [&](int j) -> float2 {
    const int i = 2 * j;
    const float2 w = __ldg(wpad + j);
    const float x0 = xs[i], x1 = xs[i + 1];
    float v0, v1;
    if constexpr (kPerFrame) {
      const float xm = xs[i > 0 ? i - 1 : 0];
      v0 = (x0 - mean) - a * (xm - mean);
      v1 = (x1 - mean) - a * (x0 - mean);
    } else {
      const float xm = xs[i - 1];
      v0 = (i < lim ? x0 - a * xm : 0.0f) - ymean;
      v1 = (i + 1 < lim ? x1 - a * x0 : 0.0f) - ymean;
    }
    return make_float2(v0 * w.x, v1 * w.y);
  };

  // FFT step 1 input: thread n2 = t takes z[j] = (x[2j], x[2j+1]) for
  // j = R2 n1 + t, straight from the staged samples.
  float2 v[R1];
  if (t < R2) {
#pragma unroll
    for (int n1 = 0; n1 < R1; ++n1) {
      const int j = R2 * n1 + t;
      v[n1] = pair(j);
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
  // (slices of ceil(total / T)), so a thread's time is its slice, not its
  // widest bands, and the loop has no branch: a band's last element stores
  // the running sum as the band's sum (`band_s`). A band that begins in an
  // earlier slice also has parts there: each slice that ends inside a band
  // leaves its running sum in `carry`. A band is then the sum of its parts
  // in slice order, the same whatever the timing. Projected bands then stay
  // in shared memory, over the spectrum, for the projection.
  const bool project = outputs > 0;  // grid-uniform
  float* band_s = s + kBins;  // the bands' sums (or, by slices, their last parts)
  float* carry = s + kBins + kSpectralBandsMaxBands;
  const int slice = (support + T - 1) / T;
  if (fits) {
    if (live) {
      const int l0 = t * slice;
      const int l1 = min(support, l0 + slice);
      float acc = 0.0f;
      for (int l = l0; l < l1; ++l) {
        const int code = codes[l];
        acc += weights[l] * s[code & 0xffff];
        if (code < 0) {
          band_s[(code >> 16) & 0x7fff] = acc;
          acc = 0.0f;
        }
      }
      if (l1 > l0 && codes[l1 - 1] >= 0) carry[t] = acc;
    }
  } else if (live) {  // a band a thread, from the dense matrix
    for (int j = t; j < nb; j += T) {
      const int first = __ldg(layout_i + kLayoutFirst + j);
      const int count = __ldg(layout_i + kLayoutStart + j + 1) - __ldg(layout_i + kLayoutStart + j);
      const float* w = fb + static_cast<int64_t>(j) * kBins + first;
      const float* x = s + first;
      float acc = 0.0f;
      for (int k = 0; k < count; ++k) acc += x[k] * __ldg(w + k);
      band_s[j] = acc;
    }
  }
  __syncwarp();  // the sums are written, the spectrum read; a frame's threads are lanes of one warp
  // The bands, then the op; projected bands go over the spectrum, in
  // groups padded to group_stride(group).
  const int gstride = project ? group_stride(group) : 0;
  if (live) {
    float* out = bands + row * nb;
    for (int j = t; j < nb; j += T) {
      const int finish = band_finish[j];
      float v = 0.0f;  // an empty band: the product with no weights
      if ((finish & (1 << 25)) == 0) {
        // Slices before the last that hold the band left carries (none
        // on the dense path: there both slices are 0).
        for (int u = finish & 0xff; u < ((finish >> 8) & 0xff); ++u) v += carry[u];
        v += band_s[j];
      }
      v = sp.apply_op ? unary_op(sp.op, sp.op_param, v) : v;
      if (project) {
        const int pos = (finish >> 16) & 0xff;
        s[pos] = v;
        if (finish & (1 << 24))
          for (int k = pos + 1; k < pos + 1 + gstride - group; ++k) s[k] = 0.0f;
      } else {
        out[j] = v;
      }
    }
  }
  if (!project) return;
  __syncwarp();  // the projected bands are written
  if (!live) return;
  // Output q of the row: output o of group g, summed over the group's bands
  // in order.
  const int columns = nb / group * outputs;
  float* mapped = bands + row * columns;
  int g = 0, o = t;  // output q = g * outputs + o
  while (o >= outputs) {
    o -= outputs;
    ++g;
  }
  for (int q = t; q < columns; q += T) {
    const float4* x = reinterpret_cast<const float4*>(s + g * gstride);
    const float4* w = reinterpret_cast<const float4*>(proj + o * pstride);
    float acc = 0.0f;
    for (int i = 0; i < gstride / 4; ++i) {
      const float4 a = x[i], c = w[i];
      acc += a.x * c.x;
      acc += a.y * c.y;
      acc += a.z * c.z;
      acc += a.w * c.w;
    }
    mapped[q] = acc;
    for (o += T; o >= outputs; o -= outputs) ++g;
  }
}

// The pre-emphasis mode is a template argument: it decides the inner loop
// of the windowing, which then has no branch on it.
template <int N, int R1, int R2>
cudaError_t launch_sized(const float* signal, const SpectralBandsParams& p, int64_t rows,
                         const float* window, const float2* tw, const float* fb,
                         const float* ranges, const float* projection, float* layout,
                         float* bands, float* energy, cudaStream_t stream) {
  using S = RealFftShape<N, R1, R2>;
  filterbank_layout_kernel<<<1, kLayoutThreads, 0, stream>>>(
      fb, ranges, projection, window, p.frame.frame_length, N, p.num_bands, N / 2 + 1, support_capacity<N>(), S::kThreadsPerFrame,
      p.proj_group, p.proj_outputs, layout);
  const unsigned int blocks = static_cast<unsigned int>((rows + S::kFrames - 1) / S::kFrames);
  const size_t dynamic =
      p.proj_outputs > 0 ? static_cast<size_t>(p.proj_outputs) * matrix_stride(p.proj_group) *
                               sizeof(float)
                         : 0;
  if (p.frame.preemphasis_per_frame)
    spectral_bands_kernel<N, R1, R2, true><<<blocks, S::kThreads, dynamic, stream>>>(
        signal, p, rows, tw, fb, layout, bands, energy);
  else
    spectral_bands_kernel<N, R1, R2, false><<<blocks, S::kThreads, dynamic, stream>>>(
        signal, p, rows, tw, fb, layout, bands, energy);
  return cudaGetLastError();
}

}  // namespace

size_t spectral_bands_layout_floats() { return kLayoutFloats; }

bool spectral_bands_projects(int num_bands, int group, int outputs) {
  if (group < 1 || outputs < 1 || num_bands % group != 0) return false;
  // Padded groups over the spectrum's first bins (128 at 256 points), the
  // matrix in shared memory.
  return num_bands / group * group_stride(group) <= 128 &&
         outputs * matrix_stride(group) <= kSpectralBandsMaxProjection;
}

bool has_spectral_bands(int fft_size) {
  return fft_size == 256 || fft_size == 512 || fft_size == 1024 || fft_size == 2048;
}

cudaError_t launch_spectral_bands(const float* signal, const SpectralBandsParams& p,
                                  const float* window, const float* twiddles,
                                  const float* filterbank, const float* ranges,
                                  const float* projection, float* layout, float* bands,
                                  float* energy, cudaStream_t stream) {
  const int64_t rows = p.frame.num_utts * p.frame.frames_per_utt;
  if (rows == 0) return cudaSuccess;
  if (p.frame.frame_length > p.frame.fft_size || p.num_bands > kSpectralBandsMaxBands)
    return cudaErrorInvalidValue;
  if (p.proj_outputs != 0 &&
      (projection == nullptr ||
       !spectral_bands_projects(p.num_bands, p.proj_group, p.proj_outputs)))
    return cudaErrorInvalidValue;
  const float2* tw = reinterpret_cast<const float2*>(twiddles);
  switch (p.frame.fft_size) {
    case 256:
      return launch_sized<256, 16, 8>(signal, p, rows, window, tw, filterbank, ranges,
                                      projection, layout, bands, energy, stream);
    case 512:
      return launch_sized<512, 16, 16>(signal, p, rows, window, tw, filterbank, ranges,
                                       projection, layout, bands, energy, stream);
    case 1024:
      return launch_sized<1024, 32, 16>(signal, p, rows, window, tw, filterbank, ranges,
                                        projection, layout, bands, energy, stream);
    case 2048:
      return launch_sized<2048, 32, 32>(signal, p, rows, window, tw, filterbank, ranges,
                                        projection, layout, bands, energy, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace gpuspeech
