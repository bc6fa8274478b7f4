// Backend::spectral_bands on CUDA in one kernel: each frame is cut from the
// signal, cleaned and windowed (FramingSpec) while it is loaded into the
// real FFT's registers, its |X|^2 (or |X|) lands in shared memory, and the
// sparse filterbank and the log (or pow) run there, and the projection
// (MFCC's DCT) when asked; only the band energies or their projection (and
// the raw frame energy, if asked) are written. A one-block kernel first
// lays out what every block copies (the filterbank's support, the padded
// projection and window) in a scratch buffer of the backend's. Against
// frame_signal + the fused FFT + the cuBLAS filterbank GEMM + apply, that
// saves the frames (2 KB a frame at 512 points, written and read) and the
// power spectrum (1 KB, written and read).
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
  // The projection of BandsSpec (0 outputs: none): each group of
  // proj_group bands is mapped by a proj_outputs x proj_group matrix.
  int proj_group;
  int proj_outputs;
};

// The most bands the kernel takes (a Kaldi fbank's 80; multi-warp VTLN
// with more runs faster as a composition, docs/benchmarks.md), and the
// largest projection matrix, in floats (rows padded), it holds in shared
// memory.
constexpr int kSpectralBandsMaxBands = 80;
constexpr int kSpectralBandsMaxProjection = 2048;

// Whether launch_spectral_bands handles this FFT size (the sizes of the
// fused real FFT: 256, 512, 1024, 2048; frame_length <= fft_size).
bool has_spectral_bands(int fft_size);

// `twiddles`: exp(-2 pi i k / fft_size), k < fft_size, interleaved (re, im).
// `filterbank`: num_bands x (fft_size / 2 + 1); `ranges`: 2 * num_bands
// float-stored (first bin, count) pairs, clamped into the row.
// Whether the kernel applies a projection of `outputs` rows over groups of
// `group` of `num_bands` bands (the matrix and the padded groups must fit
// its shared memory); otherwise the caller runs a GEMM after the bands.
bool spectral_bands_projects(int num_bands, int group, int outputs);

// Floats of device scratch launch_spectral_bands needs for the
// filterbank's layout (written, then read by the same call's kernel).
size_t spectral_bands_layout_floats();

// `projection`: proj_outputs x proj_group, or null when proj_outputs is 0.
// `layout`: spectral_bands_layout_floats() floats of scratch; work queued
// on `stream` must be done with it before another call reuses it (one
// stream: in order).
// `bands`: rows x num_bands, or with a projection rows x (num_bands /
// proj_group * proj_outputs); `energy`: rows floats or null.
cudaError_t launch_spectral_bands(const float* signal, const SpectralBandsParams& p,
                                  const float* window, const float* twiddles,
                                  const float* filterbank, const float* ranges,
                                  const float* projection, float* layout, float* bands,
                                  float* energy, cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
