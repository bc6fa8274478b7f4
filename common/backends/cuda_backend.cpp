// The CUDA backend: the kernels of kernels/cuda, cuBLAS for the matrix
// products, and for the power spectrum either our fused real-FFT + |X|^2
// kernel (FFT sizes 256..2048, the ones speech uses) or cuFFT followed by a
// power kernel (every other size, or all sizes with GPUSPEECH_CUDA_FFT=cufft).
// spectral_bands, the pipeline's front end, is one fused kernel
// (kernels/cuda/spectral_bands.cuh) for the same FFT sizes: frames and
// spectra never reach device memory.
// All work is queued on one stream per backend; every CUDA, cuFFT and cuBLAS
// status is checked and becomes a BackendError naming the call.
//
// Numbers must match the CPU reference, so cuBLAS runs plain FP32 (no TF32
// tensor-op math) and no kernel uses fast-math intrinsics.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/backends/backend.h"
#include "common/backends/backend_registry.h"
#include "common/backends/argument_checks.h"
#include "common/backends/cuda_stream_wait.h"
#include "common/backends/spectral_bands_composition.h"
#include "kernels/cuda/feature_kernels.cuh"
#include "kernels/cuda/outer_products.cuh"
#include "kernels/cuda/scoring_kernels.cuh"
#include "kernels/cuda/spectral_bands.cuh"

namespace gpuspeech {
namespace {

// The failed call's error is taken off the thread's last-error slot, where
// the next launch check would report it as its own (cuda_memory.h).
void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError(std::string("cuda: ") + call + " failed: " +
                       cudaGetErrorName(status) + " (" +
                       cudaGetErrorString(status) + ")");
  }
}

const char* cufft_result_name(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (out of device memory)";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT error";
  }
}

// cuFFT and cuBLAS run runtime calls of their own; a failure of theirs
// (no memory for a plan or a handle) can leave the runtime's last error
// behind too, so it is taken off as in check_cuda.
void check_cufft(cufftResult status, const char* call) {
  if (status != CUFFT_SUCCESS) {
    (void)cudaGetLastError();
    throw BackendError(std::string("cuda: ") + call + " failed: " +
                       cufft_result_name(status) + " (code " +
                       std::to_string(static_cast<int>(status)) + ")");
  }
}

// Each cuBLAS handle gets a workspace pool when it is made: 64 MiB on the
// H100, two thirds of what a decoding stream (one backend each) added to
// the device. cublasSetWorkspace lends a handle another buffer but does not
// shrink that pool; CUBLAS_WORKSPACE_CONFIG, read when handles are made,
// does. Measured with 32 streams (docs/benchmarks.md): ":16:8" (8 buffers
// of 16 KiB) took each stream from 93.7 to 29.7 MiB when made and the
// scoring GEMM ran as fast. Set once, before the process's first handle,
// and only where the user has not set it.
void limit_cublas_workspace() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr)
      setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 0);
  });
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    (void)cudaGetLastError();
    throw BackendError(std::string("cuda: ") + call + " failed: " +
                       cublasGetStatusName(status) + " (" +
                       cublasGetStatusString(status) + ")");
  }
}

// GPUSPEECH_CUDA_FUSED_BANDS=0 runs spectral_bands as the composition of
// frame_signal, power_spectrum, the filterbank GEMM and apply (the path
// before the fused kernel), to compare the two in one benchmark command.
bool fused_bands_from_env() {
  const char* v = std::getenv("GPUSPEECH_CUDA_FUSED_BANDS");
  return !(v != nullptr && std::string(v) == "0");
}

bool fused_fft_from_env() {
  const char* v = std::getenv("GPUSPEECH_CUDA_FFT");
  return !(v != nullptr && std::string(v) == "cufft");
}

// GPUSPEECH_CUDA_TOPN_RANKED=0 runs Gaussian selection as one kernel that
// ranks a codebook per senone (the path before the ranked lists), to
// compare the two in one benchmark command.
bool ranked_top_n_from_env() {
  const char* v = std::getenv("GPUSPEECH_CUDA_TOPN_RANKED");
  return !(v != nullptr && std::string(v) == "0");
}

class CudaBuffer : public DeviceBuffer {
 public:
  CudaBuffer(const Backend* owner, size_t n) : DeviceBuffer(owner, n) {
    if (n > 0) check_cuda(cudaMalloc(&ptr_, n * sizeof(float)), "cudaMalloc");
  }
  ~CudaBuffer() override {
    // No throwing from a destructor, and no error left behind (check_cuda).
    if (ptr_ != nullptr && cudaFree(ptr_) != cudaSuccess) (void)cudaGetLastError();
  }
  float* ptr() const { return ptr_; }

 private:
  float* ptr_ = nullptr;
};

// A cuFFT plan for `batch` real-to-complex transforms of size n.
struct FftPlan {
  int64_t batch = 0;
  int n = 0;
  cufftHandle handle = 0;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device_id) : device_id_(device_id) {
    int count = 0;
    const cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess)
      throw BackendError(std::string("no CUDA device: ") +
                         cudaGetErrorString(st));
    if (count == 0) throw BackendError("no CUDA device: none found");
    if (device_id < 0 || device_id >= count)
      throw BackendError("device-id " + std::to_string(device_id) +
                         " out of range (" + std::to_string(count) +
                         (count == 1 ? " device)" : " devices)"));
    check_cuda(cudaSetDevice(device_id), "cudaSetDevice");
    apply_cuda_wait_policy(device_id);
    cudaDeviceProp prop;
    check_cuda(cudaGetDeviceProperties(&prop, device_id),
               "cudaGetDeviceProperties");
    device_name_ = std::string(prop.name) + " (cuda device " +
                   std::to_string(device_id) + ", sm_" +
                   std::to_string(prop.major) + std::to_string(prop.minor) +
                   ")";
    const cudaError_t img = cuda::check_kernel_image();
    if (img != cudaSuccess)
      throw BackendError("CUDA device " + device_name_ +
                         " cannot run this build's kernels (" +
                         cudaGetErrorString(img) +
                         "); rebuild with -Dcuda_arch=" +
                         std::to_string(prop.major) +
                         std::to_string(prop.minor));
    try {
      check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                 "cudaStreamCreate");
      limit_cublas_workspace();
      check_cublas(cublasCreate(&blas_), "cublasCreate");
      check_cublas(cublasSetStream(blas_, stream_), "cublasSetStream");
      // Plain FP32: TF32 tensor ops would move results by ~1e-3 relative.
      // Pedantic math keeps FP32 whatever NVIDIA_TF32_OVERRIDE or a changed
      // library default says.
      check_cublas(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH),
                   "cublasSetMathMode");

    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaBackend() override { release(); }

  const char* name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }

  BufferPtr alloc(size_t n_floats) override {
    select_device();
    return BufferPtr(new CudaBuffer(this, n_floats));
  }

  void upload(DeviceBuffer& dst, const float* src, size_t n,
              size_t dst_offset) override {
    select_device();
    float* d = ptr(dst, "upload destination");
    check_range(dst, dst_offset, n, "upload");
    if (n == 0) return;
    // From pageable memory the copy has read `src` by the time it returns.
    check_cuda(cudaMemcpyAsync(d + dst_offset, src, n * sizeof(float),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (upload)");
  }

  void download(const DeviceBuffer& src, float* dst, size_t n,
                size_t src_offset) override {
    select_device();
    const float* s = ptr(src, "download source");
    check_range(src, src_offset, n, "download");
    if (n > 0)
      check_cuda(cudaMemcpyAsync(dst, s + src_offset, n * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_),
                 "cudaMemcpyAsync (download)");
    check_cuda(wait_for_stream(stream_), "cudaStreamSynchronize");
  }

  void synchronize() override {
    select_device();
    check_cuda(wait_for_stream(stream_), "cudaStreamSynchronize");
  }

  void frame_signal(const DeviceBuffer& signal, const FramingSpec& spec,
                    const DeviceBuffer& window, DeviceBuffer& frames,
                    DeviceBuffer* energy) override {
    select_device();
    if (spec.num_utts < 0 || spec.frames_per_utt < 0 || spec.valid_length < 0 ||
        spec.utt_stride < 0 || spec.frame_shift <= 0 ||
        spec.frame_length <= 0 || spec.fft_size < spec.frame_length)
      throw BackendError("cuda: frame_signal: invalid framing (frame_length " +
                         std::to_string(spec.frame_length) + ", fft_size " +
                         std::to_string(spec.fft_size) + ", frame_shift " +
                         std::to_string(spec.frame_shift) + ")");
    if (spec.frame_length > cuda::kMaxFrameLength)
      throw BackendError("cuda: frame_signal: frame_length " +
                         std::to_string(spec.frame_length) + " exceeds " +
                         std::to_string(cuda::kMaxFrameLength));
    const int64_t rows = spec.rows();
    check_rows(rows, "frame_signal");
    if (spec.num_utts > 0 && spec.valid_length > 0) {
      const int64_t need =
          (spec.num_utts - 1) * spec.utt_stride + spec.valid_length;
      check_size(signal, static_cast<size_t>(need), "frame_signal signal");
    }
    check_size(window, spec.frame_length, "frame_signal window");
    check_size(frames, static_cast<size_t>(rows) * spec.fft_size,
               "frame_signal frames");
    float* e = nullptr;
    if (energy != nullptr) {
      check_size(*energy, static_cast<size_t>(rows), "frame_signal energy");
      e = ptr(*energy, "frame_signal energy");
    }
    const cuda::FrameParams p = frame_params(spec);
    check_cuda(cuda::launch_frame_signal(ptr(signal, "frame_signal signal"), p,
                                         ptr(window, "frame_signal window"),
                                         ptr(frames, "frame_signal frames"), e,
                                         stream_),
               "frame_signal kernel");
  }

  void power_spectrum(const DeviceBuffer& frames, int64_t rows, int fft_size,
                      bool magnitude, DeviceBuffer& spectrum) override {
    select_device();
    if (fft_size < 2 || (fft_size & (fft_size - 1)) != 0)
      throw BackendError("cuda: power_spectrum: fft_size " +
                         std::to_string(fft_size) + " is not a power of two");
    check_rows(rows, "power_spectrum");
    const int64_t bins = fft_size / 2 + 1;
    check_size(frames, static_cast<size_t>(rows) * fft_size,
               "power_spectrum frames");
    check_size(spectrum, static_cast<size_t>(rows * bins),
               "power_spectrum spectrum");
    if (rows == 0) return;
    float* out = ptr(spectrum, "power_spectrum spectrum");
    const float* in = ptr(frames, "power_spectrum frames");
    if (use_fused_fft_ && cuda::has_real_fft_power(fft_size)) {
      check_cuda(cuda::launch_real_fft_power(in, rows, fft_size, twiddles(fft_size),
                                             magnitude, out, stream_),
                 "real FFT + power kernel");
      return;
    }
    float* complex_out = grow_scratch(complex_, static_cast<size_t>(rows * bins * 2));
    cufftHandle plan = plan_for(rows, fft_size);
    check_cufft(cufftExecR2C(plan, const_cast<float*>(in),
                             reinterpret_cast<cufftComplex*>(complex_out)),
                "cufftExecR2C");
    check_cuda(cuda::launch_power_from_complex(complex_out, rows * bins, magnitude,
                                               out, stream_),
               "power spectrum kernel");
  }

  // The fused kernel (kernels/cuda/spectral_bands.cuh) where it covers the
  // FFT size and at most 80 bands; otherwise, or with GPUSPEECH_CUDA_FFT=cufft or
  // GPUSPEECH_CUDA_FUSED_BANDS=0, the composition of this backend's own
  // operations.
  void spectral_bands(const DeviceBuffer& signal, const FramingSpec& spec,
                      const DeviceBuffer& window, const BandsSpec& b,
                      const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                      DeviceBuffer& bands, DeviceBuffer* energy) override {
    select_device();
    check_spectral_bands_args("cuda", spec, window, b, filterbank, ranges, bands, energy);
    const cuda::ApplyOp code = apply_code(b.op, "spectral_bands");
    // Many bands (multi-warp VTLN) compose: the kernel holds at most 80
    // bands (a Kaldi fbank), and with 200 an earlier version of it was 12 %
    // slower than the composition (docs/benchmarks.md).
    const bool fused = use_fused_bands_ && use_fused_fft_ &&
                       cuda::has_spectral_bands(spec.fft_size) &&
                       b.num_bands <= cuda::kSpectralBandsMaxBands;
    // The projection (the DCT of MFCC) in the kernel too, where its matrix
    // fits the kernel's shared memory; otherwise a cuBLAS GEMM after it.
    if (b.projection != nullptr &&
        (!fused || !cuda::spectral_bands_projects(b.num_bands, b.projection_group,
                                                  b.projection_outputs))) {
      spectral_bands_then_projection(*this, projection_scratch_, signal, spec, window, b,
                                     filterbank, ranges, bands, energy);
      return;
    }
    if (!fused) {
      spectral_bands_by_composition(*this, bands_scratch_, signal, spec, window, b, filterbank,
                                    bands, energy);
      return;
    }
    const int64_t rows = spec.rows();
    check_rows(rows, "spectral_bands");
    if (spec.num_utts > 0 && spec.valid_length > 0) {
      const int64_t need = (spec.num_utts - 1) * spec.utt_stride + spec.valid_length;
      check_size(signal, static_cast<size_t>(need), "spectral_bands signal");
    }
    float* e = energy != nullptr ? ptr(*energy, "spectral_bands energy") : nullptr;
    cuda::SpectralBandsParams p;
    p.frame = frame_params(spec);
    p.magnitude = b.magnitude;
    p.num_bands = b.num_bands;
    p.apply_op = b.apply_op;
    p.op = code;
    p.op_param = b.op_param;
    p.proj_group = b.projection ? b.projection_group : 0;
    p.proj_outputs = b.projection ? b.projection_outputs : 0;
    check_cuda(cuda::launch_spectral_bands(
                   ptr(signal, "spectral_bands signal"), p, ptr(window, "spectral_bands window"),
                   twiddles(spec.fft_size), ptr(filterbank, "spectral_bands filterbank"),
                   ptr(ranges, "spectral_bands ranges"),
                   b.projection ? ptr(*b.projection, "spectral_bands projection") : nullptr,
                   filterbank_layout(), ptr(bands, "spectral_bands bands"), e, stream_),
               "spectral_bands kernel");
  }

  void gemm_nt(const DeviceBuffer& a, int64_t rows, int k,
               const DeviceBuffer& b, int m, DeviceBuffer& c, size_t a_offset,
               size_t c_offset) override {
    select_device();
    if (k < 0 || m < 0)
      throw BackendError("cuda: gemm_nt: negative size (k " + std::to_string(k) +
                         ", m " + std::to_string(m) + ")");
    check_rows(rows, "gemm_nt");
    check_size(a, a_offset + static_cast<size_t>(rows) * k, "gemm_nt A");
    check_size(b, static_cast<size_t>(m) * k, "gemm_nt B");
    check_size(c, c_offset + static_cast<size_t>(rows) * m, "gemm_nt C");
    if (rows == 0 || m == 0) return;
    if (k == 0) {  // an empty sum: C is zero
      check_cuda(cudaMemsetAsync(ptr(c, "gemm_nt C") + c_offset, 0,
                                 static_cast<size_t>(rows) * m * sizeof(float), stream_),
                 "cudaMemsetAsync");
      return;
    }
    // Row-major C = A B^T is column-major C^T (m x rows) = B^T' A^T', where
    // the stored row-major B (m x k) reads as a column-major k x m matrix.
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, m,
                             static_cast<int>(rows), k, &alpha,
                             ptr(b, "gemm_nt B"), k,
                             ptr(a, "gemm_nt A") + a_offset, k, &beta,
                             ptr(c, "gemm_nt C") + c_offset, m),
                 "cublasSgemm");
  }

  void apply(UnaryOp op, float param, DeviceBuffer& x, size_t n) override {
    select_device();
    check_size(x, n, "apply");
    const cuda::ApplyOp code = apply_code(op, "apply");
    check_cuda(cuda::launch_apply(code, param, ptr(x, "apply"),
                                  static_cast<int64_t>(n), stream_),
               "apply kernel");
  }

  void extended_outer_products(const DeviceBuffer& x, int64_t rows, int dim,
                               DeviceBuffer& out) override {
    select_device();
    if (dim < 1 || dim > kMaxExtendedDim)
      throw BackendError("cuda: extended_outer_products: dim " + std::to_string(dim) +
                         " outside 1.." + std::to_string(kMaxExtendedDim));
    check_rows(rows, "extended_outer_products");
    const size_t pairs = static_cast<size_t>(dim + 1) * (dim + 2) / 2;
    check_size(x, static_cast<size_t>(rows) * dim, "extended_outer_products x");
    check_size(out, static_cast<size_t>(rows) * pairs, "extended_outer_products out");
    check_cuda(cuda::launch_extended_outer_products(ptr(x, "extended_outer_products x"), rows, dim,
                                                    ptr(out, "extended_outer_products out"),
                                                    stream_),
               "extended_outer_products kernel");
  }

  void log_into_column(const DeviceBuffer& src, int64_t rows, float param,
                       DeviceBuffer& dst, int dst_cols, int dst_col) override {
    select_device();
    if (dst_cols <= 0 || dst_col < 0 || dst_col >= dst_cols)
      throw BackendError("cuda: log_into_column: column " +
                         std::to_string(dst_col) + " outside 0.." +
                         std::to_string(dst_cols - 1));
    check_rows(rows, "log_into_column");
    check_size(src, static_cast<size_t>(rows), "log_into_column source");
    check_size(dst, static_cast<size_t>(rows) * dst_cols,
               "log_into_column destination");
    check_cuda(cuda::launch_log_into_column(ptr(src, "log_into_column source"),
                                            rows, param,
                                            ptr(dst, "log_into_column dst"),
                                            dst_cols, dst_col, stream_),
               "log_into_column kernel");
  }

  void splice(const DeviceBuffer& src, int64_t num_utts, int64_t rows_per_utt,
              int cols, int left, int right, DeviceBuffer& dst) override {
    select_device();
    if (num_utts < 0 || rows_per_utt < 0 || cols <= 0 || left < 0 ||
        right < 0)
      throw BackendError("cuda: splice: invalid shape");
    if (num_utts == 0 || rows_per_utt == 0) return;
    const size_t rows = static_cast<size_t>(num_utts * rows_per_utt);
    check_size(src, rows * cols, "splice source");
    check_size(dst, rows * (left + right + 1) * cols, "splice destination");
    check_cuda(cuda::launch_splice(ptr(src, "splice source"), num_utts,
                                   rows_per_utt, cols, left, right,
                                   ptr(dst, "splice destination"), stream_),
               "splice kernel");
  }

  void lpc_to_cepstrum(const DeviceBuffer& autocorr, int64_t rows, int order,
                       int num_ceps, DeviceBuffer& ceps) override {
    select_device();
    if (order < 1 || order > cuda::kMaxLpcOrder || num_ceps < 1 ||
        num_ceps > cuda::kMaxLpcCeps)
      throw BackendError("cuda: lpc_to_cepstrum: order " +
                         std::to_string(order) + " / num_ceps " +
                         std::to_string(num_ceps) + " outside 1.." +
                         std::to_string(cuda::kMaxLpcOrder) + " / 1.." +
                         std::to_string(cuda::kMaxLpcCeps));
    check_rows(rows, "lpc_to_cepstrum");
    check_size(autocorr, static_cast<size_t>(rows) * (order + 1),
               "lpc_to_cepstrum autocorrelation");
    check_size(ceps, static_cast<size_t>(rows) * num_ceps,
               "lpc_to_cepstrum cepstra");
    check_cuda(cuda::launch_lpc_to_cepstrum(ptr(autocorr, "autocorr"), rows,
                                            order, num_ceps,
                                            ptr(ceps, "ceps"), stream_),
               "lpc_to_cepstrum kernel");
  }

  void senone_scores(const DeviceBuffer& densities, int num_gaussians, int64_t frames,
                     const DeviceBuffer& offsets, const DeviceBuffer& gaussian,
                     const DeviceBuffer& logw, int senones, int streams, DeviceBuffer& out,
                     size_t out_offset) override {
    select_device();
    if (num_gaussians < 1 || senones < 0 || streams < 1)
      throw BackendError("cuda: senone_scores: need num_gaussians >= 1, senones >= 0 and "
                         "streams >= 1 (got " + std::to_string(num_gaussians) + ", " +
                         std::to_string(senones) + ", " + std::to_string(streams) + ")");
    check_rows(frames, "senone_scores");
    check_size(densities, static_cast<size_t>(num_gaussians) * frames,
               "senone_scores densities");
    check_size(offsets, static_cast<size_t>(senones) * streams + 1, "senone_scores offsets");
    check_range(out, out_offset, static_cast<size_t>(frames) * senones, "senone_scores out");
    if (frames == 0 || senones == 0) return;
    // The kernel clamps entry indices to what both entry buffers hold.
    const int64_t entries = static_cast<int64_t>(std::min(gaussian.size(), logw.size()));
    check_cuda(cuda::launch_senone_scores(
                   ptr(densities, "senone_scores densities"), num_gaussians, frames,
                   ptr(offsets, "senone_scores offsets"), ptr(gaussian, "senone_scores gaussian"),
                   ptr(logw, "senone_scores logw"), entries, senones, streams,
                   ptr(out, "senone_scores out") + out_offset, stream_),
               "senone_scores kernel");
  }

  void senone_scores_top_n(const DeviceBuffer& densities, int codebooks, int density,
                           int64_t frames, int top_n, const DeviceBuffer& codebook,
                           const DeviceBuffer& weights, int senones, int streams, DeviceBuffer& out,
                           size_t out_offset) override {
    select_device();
    if (codebooks < 1 || density < 1 || senones < 0 || streams < 1 || top_n < 1 ||
        top_n > kMaxTopN)
      throw BackendError("cuda: senone_scores_top_n: need codebooks, density, streams >= 1, "
                         "senones >= 0 and top_n in 1.." + std::to_string(kMaxTopN) + " (got " +
                         std::to_string(codebooks) + ", " + std::to_string(density) + ", " +
                         std::to_string(streams) + ", " + std::to_string(senones) + ", " +
                         std::to_string(top_n) + ")");
    check_rows(frames, "senone_scores_top_n");
    check_size(densities, static_cast<size_t>(streams) * codebooks * density * frames,
               "senone_scores_top_n densities");
    check_size(codebook, static_cast<size_t>(senones), "senone_scores_top_n codebook");
    check_size(weights, static_cast<size_t>(senones) * streams * density, "senone_scores_top_n weights");
    check_range(out, out_offset, static_cast<size_t>(frames) * senones, "senone_scores_top_n out");
    if (frames == 0 || senones == 0) return;
    if (use_ranked_top_n_) {
      const int64_t chunk =
          top_n_ranked_chunk(codebooks, density, frames, top_n, senones, streams);
      if (chunk > 0) {
        // Taken whole at the first use (the warm-up, when a stream is
        // made), so that a stream once admitted asks for no more device
        // memory here, whatever its later batches' lengths; every chunk's
        // lists fit in it (top_n_ranked_chunk).
        float* scratch =
            grow_scratch(ranked_, static_cast<size_t>(kTopNRankedScratchFloats));
        check_cuda(cuda::launch_senone_scores_top_n_ranked(
                       ptr(densities, "senone_scores_top_n densities"), codebooks, density,
                       frames, top_n, ptr(codebook, "senone_scores_top_n codebook"),
                       ptr(weights, "senone_scores_top_n weights"), senones, streams, scratch,
                       chunk, ptr(out, "senone_scores_top_n out") + out_offset, stream_),
                   "senone_scores_top_n kernels");
        return;
      }
    }
    check_cuda(cuda::launch_senone_scores_top_n(
                   ptr(densities, "senone_scores_top_n densities"), codebooks, density, frames,
                   top_n, ptr(codebook, "senone_scores_top_n codebook"),
                   ptr(weights, "senone_scores_top_n weights"), senones, streams,
                   ptr(out, "senone_scores_top_n out") + out_offset, stream_),
               "senone_scores_top_n kernel");
  }

  void floor_densities(DeviceBuffer& densities, int64_t frames, int rows_per_stream, int streams,
                       float floor) override {
    select_device();
    check_floor_densities_args("cuda", frames, rows_per_stream, streams, floor);
    check_size(densities, static_cast<size_t>(streams) * rows_per_stream * frames,
               "floor_densities densities");
    if (frames == 0) return;
    check_cuda(cuda::launch_floor_densities(ptr(densities, "floor_densities densities"), frames,
                                            rows_per_stream, streams, floor, kDensityFloorSlope,
                                            stream_),
               "floor_densities kernel");
  }

 private:
  // Plans hold device work areas; a stream of differently sized batches must
  // not grow the cache without bound.
  static constexpr size_t kMaxPlans = 8;

  void select_device() const {
    int current = -1;
    check_cuda(cudaGetDevice(&current), "cudaGetDevice");
    if (current != device_id_)
      check_cuda(cudaSetDevice(device_id_), "cudaSetDevice");
  }

  float* ptr(const DeviceBuffer& b, const char* what) const {
    if (b.owner() != this)
      throw BackendError(std::string("cuda: ") + what +
                         " belongs to another backend");
    return static_cast<const CudaBuffer&>(b).ptr();
  }

  static cuda::FrameParams frame_params(const FramingSpec& spec) {
    cuda::FrameParams p;
    p.num_utts = spec.num_utts;
    p.utt_stride = spec.utt_stride;
    p.valid_length = spec.valid_length;
    p.frames_per_utt = spec.frames_per_utt;
    p.first_frame_offset = spec.first_frame_offset;
    p.frame_shift = spec.frame_shift;
    p.frame_length = spec.frame_length;
    p.fft_size = spec.fft_size;
    p.preemphasis = spec.preemphasis;
    p.preemphasis_per_frame = spec.preemphasis_per_frame;
    p.remove_dc = spec.remove_dc;
    return p;
  }

  // Explicit, so the enums' orders are free to change.
  static cuda::ApplyOp apply_code(UnaryOp op, const char* what) {
    switch (op) {
      case UnaryOp::kLogFloor: return cuda::kOpLogFloor;
      case UnaryOp::kLogOffset: return cuda::kOpLogOffset;
      case UnaryOp::kLogClamp: return cuda::kOpLogClamp;
      case UnaryOp::kPow: return cuda::kOpPow;
      case UnaryOp::kSqrt: return cuda::kOpSqrt;
    }
    throw BackendError(std::string("cuda: ") + what + ": unknown operation");
  }

  static void check_size(const DeviceBuffer& b, size_t need, const char* what) {
    if (b.size() < need)
      throw BackendError(std::string("cuda: ") + what + " holds " +
                         std::to_string(b.size()) + " floats, needs " +
                         std::to_string(need));
  }

  static void check_range(const DeviceBuffer& b, size_t offset, size_t n,
                          const char* what) {
    if (offset > b.size() || n > b.size() - offset)
      throw BackendError(std::string("cuda: ") + what + " of " +
                         std::to_string(n) + " floats at offset " +
                         std::to_string(offset) + " overruns a buffer of " +
                         std::to_string(b.size()));
  }

  // Kernels index rows by block or int; cuBLAS and cuFFT take int counts.
  static void check_rows(int64_t rows, const char* what) {
    if (rows < 0 || rows > INT32_MAX)
      throw BackendError(std::string("cuda: ") + what + ": " +
                         std::to_string(rows) +
                         " rows is outside 0..2^31-1; split the batch");
  }

  // The fused kernel's scratch for the filterbank's layout, made once: the
  // calls on this backend's stream use it one after another.
  float* filterbank_layout() {
    if (!layout_) layout_.reset(new CudaBuffer(this, cuda::spectral_bands_layout_floats()));
    return layout_->ptr();
  }

  // exp(-2 pi i k / n), k < n, as (re, im) floats, computed in double.
  const float* twiddles(int n) {
    auto it = twiddles_.find(n);
    if (it != twiddles_.end()) return it->second->ptr();
    std::vector<float> host(2 * static_cast<size_t>(n));
    const double kTwoPi = 6.283185307179586476925286766559;
    for (int k = 0; k < n; ++k) {
      host[2 * k] = static_cast<float>(std::cos(kTwoPi * k / n));
      host[2 * k + 1] = static_cast<float>(-std::sin(kTwoPi * k / n));
    }
    std::unique_ptr<CudaBuffer> buf(new CudaBuffer(this, host.size()));
    // On this backend's stream, then waited for: a plain cudaMemcpy runs on
    // the legacy default stream, which a non-blocking stream does not wait
    // for, and from pageable memory it may return before the data has
    // arrived; the FFT kernels queued next then read twiddles still being
    // written (the likely cause of one test run on an H100 in which one
    // configuration's features were wrong in every value, the others right).
    // The wait also lets `host` go out of scope.
    check_cuda(cudaMemcpyAsync(buf->ptr(), host.data(), host.size() * sizeof(float),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (twiddles)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (twiddles)");
    const float* p = buf->ptr();
    twiddles_.emplace(n, std::move(buf));
    return p;
  }

  // A scratch buffer of at least n floats, grown (never shrunk) in place:
  // the FFT's complex spectrum (complex_) and senone_scores_top_n's ranked
  // lists (ranked_, at most kTopNRankedScratchFloats).
  float* grow_scratch(std::unique_ptr<CudaBuffer>& scratch, size_t n) {
    if (!scratch || scratch->size() < n) {
      // Free first (the old one may be large), once the stream is done
      // with it.
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      scratch.reset();
      scratch.reset(new CudaBuffer(this, n));
    }
    return scratch->ptr();
  }

  cufftHandle plan_for(int64_t batch, int n) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if (it->batch == batch && it->n == n) {
        plans_.splice(plans_.begin(), plans_, it);  // most recent first
        return plans_.front().handle;
      }
    }
    if (plans_.size() >= kMaxPlans) {
      // The stream may still run a transform with the oldest plan.
      check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      cufftDestroy(plans_.back().handle);
      plans_.pop_back();
    }
    FftPlan p;
    p.batch = batch;
    p.n = n;
    int dims[1] = {n};
    check_cufft(cufftPlanMany(&p.handle, 1, dims, nullptr, 1, n, nullptr, 1,
                              n / 2 + 1, CUFFT_R2C, static_cast<int>(batch)),
                "cufftPlanMany");
    const cufftResult st = cufftSetStream(p.handle, stream_);
    if (st != CUFFT_SUCCESS) {
      cufftDestroy(p.handle);
      check_cufft(st, "cufftSetStream");
    }
    plans_.push_front(p);
    return p.handle;
  }

  // Errors are ignored here: this runs from the destructor.
  void release() {
    cudaSetDevice(device_id_);
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (auto& p : plans_) cufftDestroy(p.handle);
    plans_.clear();
    complex_.reset();
    ranked_.reset();
    bands_scratch_ = SpectralBandsScratch{};
    projection_scratch_ = SpectralBandsScratch{};
    layout_.reset();
    twiddles_.clear();
    if (blas_ != nullptr) cublasDestroy(blas_);
    blas_ = nullptr;

    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = nullptr;
    // Whatever failed here stays no thread's last error (check_cuda).
    (void)cudaGetLastError();
  }

  int device_id_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::list<FftPlan> plans_;
  std::unique_ptr<CudaBuffer> complex_;
  std::unique_ptr<CudaBuffer> ranked_;
  // GPUSPEECH_CUDA_TOPN_RANKED=0: Gaussian selection by the one-kernel path
  // even where codebooks are shared (to compare the two in one build).
  bool use_ranked_top_n_ = ranked_top_n_from_env();
  std::map<int, std::unique_ptr<CudaBuffer>> twiddles_;
  // GPUSPEECH_CUDA_FFT=cufft forces cuFFT + a separate power kernel for
  // every size (to compare the two paths); otherwise the fused kernel runs
  // where it exists.
  bool use_fused_fft_ = fused_fft_from_env();
  bool use_fused_bands_ = fused_bands_from_env();
  // spectral_bands' frames and spectra where it runs as a composition.
  SpectralBandsScratch bands_scratch_;
  SpectralBandsScratch projection_scratch_;  // spectral_bands_then_projection's
  std::unique_ptr<CudaBuffer> layout_;         // filterbank_layout()
};

}  // namespace

int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

DeviceMemory cuda_device_memory(int device_id) {
  int current = 0;
  if (device_id < 0 || cudaGetDevice(&current) != cudaSuccess) return {};
  // cudaMemGetInfo reports on the calling thread's current device.
  if (cudaSetDevice(device_id) != cudaSuccess) {
    (void)cudaGetLastError();  // not left for the next launch check
    return {};
  }
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t st = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(current);
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  DeviceMemory m;
  m.free = static_cast<int64_t>(free_bytes);
  m.total = static_cast<int64_t>(total_bytes);
  return m;
}

void apply_cuda_wait_policy(int device_id) {
  const char* env = std::getenv("GPUSPEECH_CUDA_WAIT");
  if (env == nullptr || *env == '\0') return;
  const std::string v = env;
  unsigned flags = 0;
  if (v == "spin") flags = cudaDeviceScheduleSpin;
  else if (v == "yield") flags = cudaDeviceScheduleYield;
  else if (v == "block") flags = cudaDeviceScheduleBlockingSync;
  else throw BackendError("GPUSPEECH_CUDA_WAIT must be spin, yield or block, got '" + v + "'");
  int current = 0;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  check_cuda(cudaSetDevice(device_id), "cudaSetDevice");
  const cudaError_t st = cudaSetDeviceFlags(flags);
  cudaSetDevice(current);
  check_cuda(st, "cudaSetDeviceFlags (GPUSPEECH_CUDA_WAIT)");
}

float* cuda_buffer_pointer(const DeviceBuffer& buffer) {
  const auto* b = dynamic_cast<const CudaBuffer*>(&buffer);
  if (b == nullptr) throw BackendError("cuda_buffer_pointer: the buffer is not a CUDA backend's");
  return b->ptr();
}

BackendPtr make_cuda_backend(int device_id) {
  return BackendPtr(new CudaBackend(device_id));
}

}  // namespace gpuspeech
