// CUDA kernels of acoustic scoring; see scoring_kernels.cuh and
// Backend::senone_scores in common/backends/backend.h. The CPU backend
// (common/backends/cpu_backend.cpp) is the reference: the same two-pass
// log-sum-exp, entries in the same order, full-precision expf/logf.
#include "kernels/cuda/scoring_kernels.cuh"

#include <math.h>

namespace gpuspeech {
namespace cuda {
namespace {

constexpr int kThreads = 256;

// Float-stored index v clamped into [lo, hi] before the conversion (NaN
// becomes lo).
__device__ __forceinline__ int64_t clamped_index(float v, int64_t lo, int64_t hi) {
  const float c = fminf(fmaxf(v, static_cast<float>(lo)), static_cast<float>(hi));
  const int64_t i = static_cast<int64_t>(c);
  return i < lo ? lo : (i > hi ? hi : i);
}

// One thread per (frame, senone), frames fastest: with many frames a warp
// shares one senone, so its CSR reads are broadcasts and its density reads
// run along a gaussian-major row. Grid-stride, so any block of frames fits.
__global__ void senone_scores_kernel(const float* __restrict__ densities,
                                     int num_gaussians, int64_t frames,
                                     const float* __restrict__ offsets,
                                     const float* __restrict__ gaussian,
                                     const float* __restrict__ logw, int64_t entries,
                                     int senones, int streams, float* __restrict__ out) {
  const int64_t n = frames * senones;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t f = i % frames;
    const int64_t s = i / frames;
    float total = 0.0f;
    for (int t = 0; t < streams; ++t) {
      const int64_t r = s * streams + t;
      const int64_t j0 = clamped_index(offsets[r], 0, entries);
      const int64_t j1 = clamped_index(offsets[r + 1], j0, entries);
      // Two passes, as the CPU reference: the maximum, then the sum of exps.
      float top = -INFINITY;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t g = clamped_index(gaussian[j], 0, num_gaussians - 1);
        const float v = logw[j] + densities[g * frames + f];
        top = (v > top || isnan(v)) ? v : top;  // a NaN term stays
      }
      if (top == -INFINITY) {
        total += -INFINITY;
        continue;
      }
      float sum = 0.0f;
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t g = clamped_index(gaussian[j], 0, num_gaussians - 1);
        sum += expf(logw[j] + densities[g * frames + f] - top);
      }
      total += top + logf(sum);
    }
    out[f * senones + s] = total;
  }
}

constexpr int kMaxTopN = 16;                      // Backend::kMaxTopN
constexpr float kTopNUnderflow = 8.67361738e-19f;  // Backend::kTopNUnderflow, 2^-60

// The top-n selection of Backend::senone_scores: the n largest of a
// codebook's `density` values (rows[k * stride]) into val/idx, largest
// first, by insertion in Gaussian order, so that ties keep the lower
// Gaussian and every backend selects the same ones in the same order.
// NaNs are left out; returns whether there was one (the score is then NaN).
__device__ __forceinline__ bool rank_top_n(const float* rows, int64_t stride, int density, int n,
                                           float* val, int* idx, int* count_out) {
  int count = 0;
  bool has_nan = false;
  for (int k = 0; k < density; ++k) {
    const float v = rows[static_cast<int64_t>(k) * stride];
    if (isnan(v)) {
      has_nan = true;
      continue;
    }
    int p = count;
    if (p == n) {
      if (!(v > val[n - 1])) continue;
      --p;
    } else {
      ++count;
    }
    for (; p > 0 && val[p - 1] < v; --p) {
      val[p] = val[p - 1];
      idx[p] = idx[p - 1];
    }
    val[p] = v;
    idx[p] = k;
  }
  *count_out = count;
  return has_nan;
}

// ln sum_r exp(terms[r]) in two passes, the maximum first (a NaN term
// stays): the top-n sum's fallback when its linear-domain sum underflows.
__device__ __forceinline__ float log_sum_exp(const float* terms, int count) {
  float top = -INFINITY;
  for (int r = 0; r < count; ++r) top = (terms[r] > top || isnan(terms[r])) ? terms[r] : top;
  if (top == -INFINITY) return -INFINITY;
  float sum = 0.0f;
  for (int r = 0; r < count; ++r) sum += expf(terms[r] - top);
  return top + logf(sum);
}

// One thread per (frame, senone), frames fastest, as above; each thread
// ranks its codebook's Gaussians itself by the insertion rule of the
// definition (the same reads as a full mixture, far fewer exps), so every
// backend selects the same Gaussians in the same order; then
// d_1 + ln sum_i w(k_i) exp(d_i - d_1), products and sums rounded
// separately (__fmul_rn/__fadd_rn: no fused multiply-add), as on the CPU.
__global__ void senone_scores_top_n_kernel(const float* __restrict__ densities, int codebooks,
                                           int density, int64_t frames, int top_n,
                                           const float* __restrict__ codebook,
                                           const float* __restrict__ weights, int senones,
                                           int streams, float* __restrict__ out) {
  const int64_t total_items = frames * senones;
  const int n = top_n < density ? top_n : density;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t f = i % frames;
    const int64_t s = i / frames;
    const int64_t c = clamped_index(codebook[s], 0, codebooks - 1);
    float val[kMaxTopN];
    int idx[kMaxTopN];
    float total = 0.0f;
    for (int t = 0; t < streams; ++t) {
      const float* rows = densities + (static_cast<int64_t>(t) * codebooks + c) * density * frames + f;
      int count = 0;
      if (rank_top_n(rows, frames, density, n, val, idx, &count)) {
        total += NAN;
        continue;
      }
      const float d1 = val[0];
      if (d1 == -INFINITY) {
        total += -INFINITY;
        continue;
      }
      const float* w = weights + (s * streams + t) * density;
      float sum = 0.0f;
      for (int r = 0; r < count; ++r) sum = __fadd_rn(sum, __fmul_rn(w[idx[r]], expf(val[r] - d1)));
      if (!(sum < kTopNUnderflow)) {
        total += d1 + logf(sum);
        continue;
      }
      // Underflow guard: the same sum in the log domain.
      for (int r = 0; r < count; ++r) val[r] = logf(w[idx[r]]) + val[r];
      total += log_sum_exp(val, count);
    }
    out[f * senones + s] = total;
  }
}

// The same definition in two kernels, for models whose codebooks are
// shared by many senones (a PTM or semi-continuous model: en-us has about
// 122 senones a codebook). Ranking a codebook once per senone, as the kernel
// above does, repeats the same selection 122 times; at top 16 its lists
// also outgrow the registers. Here the first kernel ranks each (stream,
// codebook, frame) once and keeps, per rank, the Gaussian and
// e_i = exp(d_i - d_1), and d_1 (NaN where the codebook has a NaN); the
// second sums each senone's weights over them. Every value is computed by
// the same operations as above, so the two paths agree to the bit.
//
// Scratch layout, F frames a chunk: e[(g * n + r) * F + f], then
// idx[(g * n + r) * F + f] (int32), then top[g * F + f], g = t * codebooks + c.
__global__ void rank_codebooks_kernel(const float* __restrict__ densities, int groups,
                                      int density, int64_t frames, int64_t f0, int64_t chunk,
                                      int n, float* __restrict__ e_out,
                                      int32_t* __restrict__ idx_out, float* __restrict__ top_out) {
  const int64_t total_items = static_cast<int64_t>(groups) * chunk;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t f = i % chunk;
    const int64_t g = i / chunk;
    const float* rows = densities + g * density * frames + f0 + f;
    float val[kMaxTopN];
    int idx[kMaxTopN];
    int count = 0;
    const bool has_nan = rank_top_n(rows, frames, density, n, val, idx, &count);
    const float d1 = has_nan ? NAN : val[0];
    top_out[g * chunk + f] = d1;
    if (has_nan || d1 == -INFINITY) continue;
    for (int r = 0; r < count; ++r) {
      e_out[(g * n + r) * chunk + f] = expf(val[r] - d1);
      idx_out[(g * n + r) * chunk + f] = idx[r];
    }
  }
}

__global__ void sum_ranked_kernel(const float* __restrict__ densities, int codebooks, int density,
                                  int64_t frames, int64_t f0, int64_t chunk, int n,
                                  const float* __restrict__ codebook,
                                  const float* __restrict__ weights, int senones, int streams,
                                  const float* __restrict__ e_in,
                                  const int32_t* __restrict__ idx_in,
                                  const float* __restrict__ top_in, float* __restrict__ out) {
  const int64_t total_items = chunk * senones;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total_items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t f = i % chunk;
    const int64_t s = i / chunk;
    const int64_t c = clamped_index(codebook[s], 0, codebooks - 1);
    float total = 0.0f;
    for (int t = 0; t < streams; ++t) {
      const int64_t g = static_cast<int64_t>(t) * codebooks + c;
      const float d1 = top_in[g * chunk + f];
      if (isnan(d1)) {
        total += NAN;
        continue;
      }
      if (d1 == -INFINITY) {
        total += -INFINITY;
        continue;
      }
      const float* w = weights + (s * streams + t) * density;
      const float* e = e_in + g * n * chunk + f;
      const int32_t* idx = idx_in + g * n * chunk + f;
      float sum = 0.0f;
      for (int r = 0; r < n; ++r)
        sum = __fadd_rn(sum, __fmul_rn(w[idx[r * chunk]], e[r * chunk]));
      if (!(sum < kTopNUnderflow)) {
        total += d1 + logf(sum);
        continue;
      }
      // Underflow guard, as above, the densities read again.
      const float* rows = densities + g * density * frames + f0 + f;
      float terms[kMaxTopN];
      for (int r = 0; r < n; ++r) {
        const int k = idx[r * chunk];
        terms[r] = logf(w[k]) + rows[static_cast<int64_t>(k) * frames];
      }
      total += log_sum_exp(terms, n);
    }
    out[(f0 + f) * senones + s] = total;
  }
}

// Backend::floor_densities. A block covers 32 frames of one stream
// (blockIdx.y): threadIdx.x the frame, so a warp reads 128 contiguous bytes
// of a row; the kFloorRowThreads threads of a frame split its rows, reduce
// their maxima through shared memory (a maximum is exact in any order; a
// NaN never wins, as on the CPU), then floor their rows with the three
// rounded operations of the definition (no fused multiply-add).
constexpr int kFloorFrames = 32;
constexpr int kFloorRowThreads = 16;

__global__ void floor_densities_kernel(float* __restrict__ densities, int64_t frames,
                                       int rows_per_stream, float floor, float slope) {
  __shared__ float best[kFloorRowThreads][kFloorFrames];
  const int64_t f = static_cast<int64_t>(blockIdx.x) * kFloorFrames + threadIdx.x;
  float* block = densities + static_cast<int64_t>(blockIdx.y) * rows_per_stream * frames;
  float m = -INFINITY;
  if (f < frames)
    for (int r = threadIdx.y; r < rows_per_stream; r += kFloorRowThreads) {
      const float d = block[static_cast<int64_t>(r) * frames + f];
      if (d > m) m = d;
    }
  best[threadIdx.y][threadIdx.x] = m;
  __syncthreads();
  for (int k = 0; k < kFloorRowThreads; ++k) {
    const float other = best[k][threadIdx.x];
    if (other > m) m = other;
  }
  if (f >= frames) return;
  const float lo = __fsub_rn(m, floor);
  for (int r = threadIdx.y; r < rows_per_stream; r += kFloorRowThreads) {
    float* p = block + static_cast<int64_t>(r) * frames + f;
    const float d = *p;
    if (d < lo) *p = __fadd_rn(lo, __fmul_rn(slope, __fsub_rn(d, lo)));
  }
}

}  // namespace

cudaError_t launch_senone_scores_top_n(const float* densities, int codebooks, int density,
                                       int64_t frames, int top_n, const float* codebook,
                                       const float* weights, int senones, int streams,
                                       float* out, cudaStream_t stream) {
  const int64_t n = frames * senones;
  if (n <= 0) return cudaSuccess;
  if (top_n < 1 || top_n > kMaxTopN) return cudaErrorInvalidValue;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  const int64_t kMaxBlocks = 1 << 20;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  senone_scores_top_n_kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
      densities, codebooks, density, frames, top_n, codebook, weights, senones, streams, out);
  return cudaGetLastError();
}

cudaError_t launch_senone_scores_top_n_ranked(const float* densities, int codebooks, int density,
                                              int64_t frames, int top_n, const float* codebook,
                                              const float* weights, int senones, int streams,
                                              float* scratch, int64_t chunk, float* out,
                                              cudaStream_t stream) {
  if (frames <= 0 || senones <= 0) return cudaSuccess;
  if (top_n < 1 || top_n > kMaxTopN || chunk < 1) return cudaErrorInvalidValue;
  const int n = top_n < density ? top_n : density;
  const int groups = streams * codebooks;
  float* e = scratch;
  int32_t* idx = reinterpret_cast<int32_t*>(scratch + static_cast<int64_t>(groups) * n * chunk);
  float* top = scratch + 2 * static_cast<int64_t>(groups) * n * chunk;
  const int64_t kMaxBlocks = 1 << 20;
  for (int64_t f0 = 0; f0 < frames; f0 += chunk) {
    const int64_t c = chunk < frames - f0 ? chunk : frames - f0;
    int64_t blocks = (static_cast<int64_t>(groups) * c + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    rank_codebooks_kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
        densities, groups, density, frames, f0, c, n, e, idx, top);
    blocks = (c * senones + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    sum_ranked_kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
        densities, codebooks, density, frames, f0, c, n, codebook, weights, senones, streams, e,
        idx, top, out);
  }
  return cudaGetLastError();
}

cudaError_t launch_senone_scores(const float* densities, int num_gaussians,
                                 int64_t frames, const float* offsets,
                                 const float* gaussian, const float* logw,
                                 int64_t entries, int senones, int streams,
                                 float* out, cudaStream_t stream) {
  const int64_t n = frames * senones;
  if (n <= 0) return cudaSuccess;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  const int64_t kMaxBlocks = 1 << 20;  // the grid-stride loop covers the rest
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  senone_scores_kernel<<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
      densities, num_gaussians, frames, offsets, gaussian, logw, entries, senones,
      streams, out);
  return cudaGetLastError();
}

cudaError_t launch_floor_densities(float* densities, int64_t frames, int rows_per_stream,
                                   int streams, float floor, float slope, cudaStream_t stream) {
  if (frames <= 0 || rows_per_stream <= 0 || streams <= 0) return cudaSuccess;
  const int64_t blocks = (frames + kFloorFrames - 1) / kFloorFrames;
  if (blocks > 0x7fffffff || streams > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned int>(blocks), static_cast<unsigned int>(streams));
  floor_densities_kernel<<<grid, dim3(kFloorFrames, kFloorRowThreads), 0, stream>>>(
      densities, frames, rows_per_stream, floor, slope);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
