// CUDA kernels of the feature pipeline, behind plain host-callable launch
// wrappers so that the backend (common/backends/cuda_backend.cpp) is built by
// the ordinary C++ compiler and only this folder goes through nvcc.
//
// Every wrapper queues work on `stream` and returns the launch status
// (cudaGetLastError after the launch); the caller turns a failure into a
// BackendError naming the wrapper. Sizes and bounds are validated by the
// caller; these functions trust their arguments. The semantics of each
// operation are those of the same-named Backend method (common/backends/backend.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpuspeech {
namespace cuda {

// Framing parameters as the kernel reads them (a copy of FramingSpec without
// depending on the C++ header from device code).
struct FrameParams {
  int64_t num_utts;
  int64_t utt_stride;
  int64_t valid_length;
  int64_t frames_per_utt;
  int64_t first_frame_offset;
  int frame_shift;
  int frame_length;
  int fft_size;
  float preemphasis;
  bool preemphasis_per_frame;
  bool remove_dc;
};

// Largest frame_length the framing kernel accepts (a warp stages a frame
// twice in shared memory, within the default 48 KiB).
constexpr int kMaxFrameLength = 6000;
// Largest LPC order / cepstrum count lpc_to_cepstrum accepts (per-thread
// arrays of doubles).
constexpr int kMaxLpcOrder = 64;
constexpr int kMaxLpcCeps = 128;

// Checks that this binary holds kernels the current device can run (e.g. an
// sm_90 build on an older GPU fails here, not at the first launch).
cudaError_t check_kernel_image();

cudaError_t launch_frame_signal(const float* signal, const FrameParams& p,
                                const float* window, float* frames,
                                float* energy, cudaStream_t stream);

// Whether launch_real_fft_power handles this FFT size (otherwise use cuFFT
// and launch_power_from_complex).
bool has_real_fft_power(int fft_size);

// The real FFT of each row of `frames` (rows x fft_size) and |X_k|^2 (or
// |X_k|) for k = 0..fft_size/2 into `spectrum`, in one kernel.
// `twiddles` holds exp(-2 pi i k / fft_size) for k < fft_size as
// interleaved (re, im) floats.
cudaError_t launch_real_fft_power(const float* frames, int64_t rows, int fft_size,
                                  const float* twiddles, bool magnitude,
                                  float* spectrum, cudaStream_t stream);

// spectrum[i] = |bins[i]|^2, or |bins[i]| if magnitude, for i < n complex
// bins stored as interleaved (re, im) floats.
cudaError_t launch_power_from_complex(const float* bins, int64_t n,
                                      bool magnitude, float* spectrum,
                                      cudaStream_t stream);

// Operation codes for launch_apply (gpuspeech::UnaryOp, mapped explicitly
// by the backend so the enum's order is free to change).
enum ApplyOp : int {
  kOpLogFloor = 0,  // x > 0 ? ln(x) : param
  kOpLogOffset,     // ln(x + param)
  kOpLogClamp,      // ln(max(x, param))
  kOpPow,           // x >= 0 ? x^param : 0
  kOpSqrt,          // sqrt(max(x, 0))
};
cudaError_t launch_apply(int op, float param, float* x, int64_t n,
                         cudaStream_t stream);

cudaError_t launch_log_into_column(const float* src, int64_t rows,
                                   float param, float* dst, int dst_cols,
                                   int dst_col, cudaStream_t stream);

cudaError_t launch_splice(const float* src, int64_t num_utts,
                          int64_t rows_per_utt, int cols, int left, int right,
                          float* dst, cudaStream_t stream);

cudaError_t launch_lpc_to_cepstrum(const float* autocorr, int64_t rows,
                                   int order, int num_ceps, float* ceps,
                                   cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
