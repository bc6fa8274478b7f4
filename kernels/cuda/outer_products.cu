#include "kernels/cuda/outer_products.cuh"

namespace gpuspeech {
namespace cuda {
namespace {

constexpr int kThreads = 256;

// One thread a row, the pairs in order: consecutive threads write
// consecutive floats of each pair's row of `out` (coalesced), and read their
// own feature row (dim floats, L1-cached), which a run-time dim keeps out
// of registers.
__global__ void extended_outer_products_kernel(const float* __restrict__ x, int64_t rows,
                                               int dim, float* __restrict__ out) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * dim;
  int64_t pair = 0;
  for (int p = 0; p <= dim; ++p) {
    const float xp = p < dim ? xr[p] : 1.0f;
    for (int q = p; q <= dim; ++q, ++pair) out[pair * rows + r] = xp * (q < dim ? xr[q] : 1.0f);
  }
}

}  // namespace

cudaError_t launch_extended_outer_products(const float* x, int64_t rows, int dim, float* out,
                                           cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int64_t blocks = (rows + kThreads - 1) / kThreads;
  extended_outer_products_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x, rows, dim, out);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
