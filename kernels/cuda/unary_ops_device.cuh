// The element-wise functions of Backend::apply (UnaryOp, as cuda::ApplyOp
// codes) as one device function, shared by the apply kernel and the kernels
// that apply them on the chip (spectral_bands.cu), so both compute the same
// numbers. Accurate logf/powf/sqrtf: no fast-math intrinsics (the numbers
// must match the CPU reference).
#pragma once

#include <cuda_runtime.h>
#include <math.h>

#include "kernels/cuda/feature_kernels.cuh"

namespace gpuspeech {
namespace cuda {

__device__ __forceinline__ float unary_op(int op, float param, float v) {
  switch (op) {
    case kOpLogFloor: return v > 0.0f ? logf(v) : param;
    case kOpLogOffset: return logf(v + param);
    case kOpLogClamp: return logf(fmaxf(v, param));
    case kOpPow: return v >= 0.0f ? powf(v, param) : 0.0f;
    default: return sqrtf(fmaxf(v, 0.0f));
  }
}

}  // namespace cuda
}  // namespace gpuspeech
