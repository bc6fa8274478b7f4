// Waiting for a CUDA stream's work to end, from a thread or from a fiber
// (common/engine/fiber_pool.h). A thread synchronizes as always. A fiber
// asks whether the stream is done and, while it is not, lets the other
// fibers of its thread run: a synchronize would hold the whole thread,
// and with it every stream the thread serves.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cuda_runtime.h>

#include "common/engine/fiber_pool.h"

namespace gpuspeech {

inline cudaError_t wait_for_stream(cudaStream_t stream) {
  if (current_fiber() == nullptr) return cudaStreamSynchronize(stream);
  cudaError_t e;
  while ((e = cudaStreamQuery(stream)) == cudaErrorNotReady) yield_fiber();
  return e;
}

}  // namespace gpuspeech
