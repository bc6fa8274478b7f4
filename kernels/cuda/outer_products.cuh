// Backend::extended_outer_products on the device (common/backends/backend.h): the
// second-order terms of the constrained-MLLR statistics, built next to the
// GEMM that weights them instead of on the host and uploaded.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gpuspeech {
namespace cuda {

// out[pair * rows + r] = xi_p * xi_q for p <= q <= dim, xi = [x_r; 1]; x is
// rows x dim. Asynchronous on `stream`.
cudaError_t launch_extended_outer_products(const float* x, int64_t rows, int dim, float* out,
                                           cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
