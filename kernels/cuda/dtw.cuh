// CUDA kernels of DTW template matching (common/dtw/dtw_engine.h), behind a
// host-callable launch wrapper like the other .cuh files here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpuspeech {
namespace cuda {

// Longest template the kernels hold in shared memory (frames).
constexpr int kDtwMaxTemplateFrames = 2048;

// One block per template: the DTW distance of the utterance (frames x dim)
// to each of `count` templates, whose frames lie back to back in
// `templates` (template t: rows offsets[t] .. offsets[t+1]-1) into
// out[t]. itakura / band / first_coeff (1 for the cepstral distance) /
// normalize as in common/dtw/dtw_options.h. max_frames: the longest
// template (<= kDtwMaxTemplateFrames).
cudaError_t launch_dtw_match(const float* utterance, int64_t frames, const float* templates,
                             const int64_t* offsets, int64_t count, int dim, int64_t max_frames,
                             bool itakura, int band, int first_coeff, bool normalize, float* out,
                             cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
