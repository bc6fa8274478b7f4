// CUDA kernels of acoustic scoring, behind a host-callable launch wrapper
// (the same arrangement as feature_kernels.cuh: the backend is ordinary
// C++, only this folder goes through nvcc). The wrapper queues work on
// `stream` and returns the launch status; the caller validates sizes and
// turns a failure into a BackendError.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpuspeech {
namespace cuda {

// Backend::senone_scores (common/backends/backend.h). `entries` is how many values
// the gaussian and logw buffers hold: CSR indices are clamped to it and to
// num_gaussians, so a corrupt CSR cannot read outside the buffers.
cudaError_t launch_senone_scores(const float* densities, int num_gaussians,
                                 int64_t frames, const float* offsets,
                                 const float* gaussian, const float* logw,
                                 int64_t entries, int senones, int streams,
                                 float* out, cudaStream_t stream);

// Backend::senone_scores_top_n (common/backends/backend.h); codebook indices are
// clamped into 0..codebooks-1.
cudaError_t launch_senone_scores_top_n(const float* densities, int codebooks, int density,
                                       int64_t frames, int top_n, const float* codebook,
                                       const float* weights, int senones, int streams,
                                       float* out, cudaStream_t stream);

// The same in two kernels through `scratch` (scoring_kernels.cu says why):
// each (stream, codebook, frame) ranked once, then each senone's sum,
// `chunk` frames at a time; Backend::top_n_ranked_chunk and
// top_n_ranked_floats (common/backends/backend.h) give the chunk and the scratch.
cudaError_t launch_senone_scores_top_n_ranked(const float* densities, int codebooks, int density,
                                              int64_t frames, int top_n, const float* codebook,
                                              const float* weights, int senones, int streams,
                                              float* scratch, int64_t chunk, float* out,
                                              cudaStream_t stream);

// Backend::floor_densities (common/backends/backend.h), in place: densities holds
// streams * rows_per_stream rows of `frames` floats; `slope` is
// Backend::kDensityFloorSlope (passed, so that it is written once).
cudaError_t launch_floor_densities(float* densities, int64_t frames, int rows_per_stream,
                                   int streams, float floor, float slope, cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
