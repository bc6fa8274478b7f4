// DTW of one utterance against many templates, one thread block per
// template (see common/dtw/dtw_engine.h for the plan and dtw_options.h for
// the recursions). Additions and products are written with __fadd_rn /
// __fmul_rn so that nvcc does not contract them into FMAs: the local
// distances then round exactly as on the host.
#include "kernels/cuda/dtw.cuh"

#include <cmath>

#include "common/dtw/dtw_region.h"

namespace gpuspeech {
namespace cuda {
namespace {

__device__ __forceinline__ float frame_distance(const float* x, const float* y, int dim, int first) {
  float s = 0.0f;
  for (int k = first; k < dim; ++k) {
    const float t = __fsub_rn(x[k], y[k]);
    s = __fadd_rn(s, __fmul_rn(t, t));
  }
  return sqrtf(s);
}

// kItakura, column sweep: two columns of (flat, sloped) costs in shared
// memory, used alternately; the threads take the cells of a column.
__global__ void dtw_itakura_kernel(const float* __restrict__ utt, int64_t n,
                                   const float* __restrict__ templates,
                                   const int64_t* __restrict__ offsets, int dim, int64_t cap,
                                   int band, int first, bool normalize, float* __restrict__ out) {
  extern __shared__ float sh[];
  float* flat[2] = {sh, sh + 2 * cap};
  float* sloped[2] = {sh + cap, sh + 3 * cap};
  float* x = sh + 4 * cap;
  const int64_t t = blockIdx.x;
  const int64_t m = offsets[t + 1] - offsets[t];
  const float* y = templates + offsets[t] * dim;
  const float inf = __int_as_float(0x7f800000);

  for (int64_t j = threadIdx.x; j < m; j += blockDim.x)
    flat[0][j] = sloped[0][j] = flat[1][j] = sloped[1][j] = inf;
  int64_t lo = 0, hi = 0;
  if (!dtw_region::column_range(true, band, n, m, 0, &lo, &hi) || lo != 0) {
    if (threadIdx.x == 0) out[t] = inf;
    return;
  }
  __syncthreads();
  if (threadIdx.x == 0) sloped[0][0] = frame_distance(utt, y, dim, first);
  int64_t lo_prev2 = 0;  // lo of the column the buffer about to be written holds
  int64_t lo_prev = 0;
  for (int64_t i = 1; i < n; ++i) {
    for (int k = threadIdx.x; k < dim; k += blockDim.x) x[k] = utt[i * dim + k];
    __syncthreads();  // x loaded; previous column complete
    if (!dtw_region::column_range(true, band, n, m, i, &lo, &hi)) {
      if (threadIdx.x == 0) out[t] = inf;
      return;
    }
    const int p = (i - 1) & 1, c = i & 1;
    const float* pf = flat[p];
    const float* ps = sloped[p];
    float* cf = flat[c];
    float* cs = sloped[c];
    for (int64_t j = lo + threadIdx.x; j <= hi; j += blockDim.x) {
      const float d = frame_distance(x, y + j * dim, dim, first);
      float best = inf;
      if (j >= 1) best = fminf(best, fminf(pf[j - 1], ps[j - 1]));
      if (j >= 2) best = fminf(best, fminf(pf[j - 2], ps[j - 2]));
      cf[j] = __fadd_rn(ps[j], d);
      cs[j] = __fadd_rn(best, d);
    }
    // The buffer held column i-2: cells of it below this column's range go.
    for (int64_t j = lo_prev2 + threadIdx.x; j < lo; j += blockDim.x) cf[j] = cs[j] = inf;
    lo_prev2 = lo_prev;
    lo_prev = lo;
    __syncthreads();  // column i complete before x is overwritten
  }
  if (threadIdx.x == 0) {
    const int c = (n - 1) & 1;
    const float total = fminf(flat[c][m - 1], sloped[c][m - 1]);
    out[t] = (normalize && total < inf) ? total / static_cast<float>(n) : total;
  }
}

// kSymmetric, anti-diagonal sweep: cell (i, j) of diagonal k = i + j needs
// (i-1, j) and (i, j-1) from diagonal k-1 and (i-1, j-1) from k-2. Three
// diagonals in shared memory, indexed by j; cells the constraints leave out
// hold +inf.
__global__ void dtw_symmetric_kernel(const float* __restrict__ utt, int64_t n,
                                     const float* __restrict__ templates,
                                     const int64_t* __restrict__ offsets, int dim, int64_t cap,
                                     int band, int first, bool normalize, float* __restrict__ out) {
  extern __shared__ float sh[];
  const int64_t t = blockIdx.x;
  const int64_t m = offsets[t + 1] - offsets[t];
  const float* y = templates + offsets[t] * dim;
  const float inf = __int_as_float(0x7f800000);
  for (int64_t k = 0; k < n + m - 1; ++k) {
    float* cur = sh + (k % 3) * cap;
    const float* d1 = sh + ((k + 2) % 3) * cap;  // diagonal k-1
    const float* d2 = sh + ((k + 1) % 3) * cap;  // diagonal k-2
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      const int64_t i = k - j;
      int64_t lo = 0, hi = -1;
      float g = inf;
      if (i >= 0 && i < n && dtw_region::column_range(false, band, n, m, i, &lo, &hi) && j >= lo &&
          j <= hi) {
        const float d = frame_distance(utt + i * dim, y + j * dim, dim, first);
        if (k == 0) {
          g = __fmul_rn(2.0f, d);
        } else {
          const float left = k >= 1 ? __fadd_rn(d1[j], d) : inf;  // (i-1, j)
          const float diag = (k >= 2 && j >= 1) ? __fadd_rn(d2[j - 1], __fmul_rn(2.0f, d)) : inf;
          const float below = j >= 1 ? __fadd_rn(d1[j - 1], d) : inf;  // (i, j-1)
          g = fminf(fminf(left, diag), below);
        }
      }
      cur[j] = g;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float total = sh[((n + m - 2) % 3) * cap + (m - 1)];
    out[t] = (normalize && total < inf) ? total / static_cast<float>(n + m) : total;
  }
}

}  // namespace

cudaError_t launch_dtw_match(const float* utterance, int64_t frames, const float* templates,
                             const int64_t* offsets, int64_t count, int dim, int64_t max_frames,
                             bool itakura, int band, int first_coeff, bool normalize, float* out,
                             cudaStream_t stream) {
  if (count <= 0 || frames <= 0) return cudaSuccess;
  if (max_frames < 1 || max_frames > kDtwMaxTemplateFrames || count > 0x7fffffff)
    return cudaErrorInvalidValue;
  // Enough threads for a typical column or diagonal, in whole warps.
  int threads = static_cast<int>((max_frames + 31) / 32 * 32);
  threads = threads < 32 ? 32 : (threads > 256 ? 256 : threads);
  const int64_t cap = max_frames;
  const unsigned blocks = static_cast<unsigned>(count);
  if (itakura) {
    const size_t shmem = (4 * static_cast<size_t>(cap) + static_cast<size_t>(dim)) * sizeof(float);
    if (shmem > 48 * 1024) {
      const cudaError_t e = cudaFuncSetAttribute(
          dtw_itakura_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shmem));
      if (e != cudaSuccess) return e;
    }
    dtw_itakura_kernel<<<blocks, threads, shmem, stream>>>(utterance, frames, templates, offsets,
                                                           dim, cap, band, first_coeff, normalize,
                                                           out);
  } else {
    const size_t shmem = 3 * static_cast<size_t>(cap) * sizeof(float);
    dtw_symmetric_kernel<<<blocks, threads, shmem, stream>>>(utterance, frames, templates, offsets,
                                                             dim, cap, band, first_coeff, normalize,
                                                             out);
  }
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
