// CUDA kernels of acoustic scoring; see scoring_kernels.cuh and
// Backend::senone_scores in common/backend.h. The CPU backend
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

}  // namespace

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

}  // namespace cuda
}  // namespace gpuspeech
