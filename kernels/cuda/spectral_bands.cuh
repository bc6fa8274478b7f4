// Backend::spectral_bands on CUDA in one kernel: each frame is cut from the
// signal, cleaned and windowed (FramingSpec) while it is loaded into the
// real FFT's registers, its |X|^2 (or |X|) lands in shared memory, and the
// sparse filterbank and the log (or pow) run there; only the band energies
// (and the raw frame energy, if asked) are written. Against frame_signal +
// the fused FFT + the cuBLAS filterbank GEMM + apply, that saves the frames
// (2 KB a frame at 512 points, written and read) and the power spectrum
// (1 KB, written and read).
//
// Host-callable wrappers, as in feature_kernels.cuh: they queue work on
// `stream`, return the launch status, and trust arguments the backend has
// validated.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/feature_kernels.cuh"

namespace gpuspeech {
namespace cuda {

struct SpectralBandsParams {
  FrameParams frame;
  bool magnitude;
  int num_bands;
  bool apply_op;
  int op;  // ApplyOp
  float op_param;
};

// Whether launch_spectral_bands handles this FFT size (the sizes of the
// fused real FFT: 256, 512, 1024, 2048; frame_length <= fft_size).
bool has_spectral_bands(int fft_size);

// `twiddles`: exp(-2 pi i k / fft_size), k < fft_size, interleaved (re, im).
// `filterbank`: num_bands x (fft_size / 2 + 1); `ranges`: 2 * num_bands
// float-stored (first bin, count) pairs, clamped into the row.
// `bands`: rows x num_bands; `energy`: rows floats or null.
cudaError_t launch_spectral_bands(const float* signal, const SpectralBandsParams& p,
                                  const float* window, const float* twiddles,
                                  const float* filterbank, const float* ranges, float* bands,
                                  float* energy, cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
