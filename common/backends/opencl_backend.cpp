// The OpenCL backend: clFFT for the FFT, our own kernels (kernels/opencl/*.cl,
// embedded at build time) for everything else. Semantics follow
// common/backends/backend.h exactly; the CPU backend is the reference the tests
// compare against (backend_compare.h).
//
// The kernel program is compiled on first use, not when the backend is
// opened: list_backends() and `auto` open backends just to ask whether a
// device answers, and drivers such as pocl take a while to compile.
#include <CL/cl.h>
#include <clFFT.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/backends/argument_checks.h"
#include "common/backends/spectral_bands_composition.h"
#include "kernels/opencl/opencl_kernels.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

namespace gpuspeech {
namespace {

// Largest LPC order / cepstrum count the lpc_to_cepstrum kernel's private
// arrays hold (kernels/opencl/lpc.cl).
constexpr int kLpcMaxOrder = 64;
constexpr int kLpcMaxCeps = 128;
// Rows per clFFT call; see power_spectrum.
constexpr int64_t kFftChunkRows = 32768;

const char* cl_error_name(cl_int code) {
  switch (code) {
#define GPUSPEECH_CL_CASE(x) \
  case x:                    \
    return #x;
    GPUSPEECH_CL_CASE(CL_DEVICE_NOT_FOUND)
    GPUSPEECH_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
    GPUSPEECH_CL_CASE(CL_COMPILER_NOT_AVAILABLE)
    GPUSPEECH_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    GPUSPEECH_CL_CASE(CL_OUT_OF_RESOURCES)
    GPUSPEECH_CL_CASE(CL_OUT_OF_HOST_MEMORY)
    GPUSPEECH_CL_CASE(CL_BUILD_PROGRAM_FAILURE)
    GPUSPEECH_CL_CASE(CL_INVALID_VALUE)
    GPUSPEECH_CL_CASE(CL_INVALID_DEVICE_TYPE)
    GPUSPEECH_CL_CASE(CL_INVALID_PLATFORM)
    GPUSPEECH_CL_CASE(CL_INVALID_DEVICE)
    GPUSPEECH_CL_CASE(CL_INVALID_CONTEXT)
    GPUSPEECH_CL_CASE(CL_INVALID_COMMAND_QUEUE)
    GPUSPEECH_CL_CASE(CL_INVALID_MEM_OBJECT)
    GPUSPEECH_CL_CASE(CL_INVALID_BUILD_OPTIONS)
    GPUSPEECH_CL_CASE(CL_INVALID_PROGRAM)
    GPUSPEECH_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    GPUSPEECH_CL_CASE(CL_INVALID_KERNEL_NAME)
    GPUSPEECH_CL_CASE(CL_INVALID_KERNEL)
    GPUSPEECH_CL_CASE(CL_INVALID_ARG_INDEX)
    GPUSPEECH_CL_CASE(CL_INVALID_ARG_VALUE)
    GPUSPEECH_CL_CASE(CL_INVALID_ARG_SIZE)
    GPUSPEECH_CL_CASE(CL_INVALID_KERNEL_ARGS)
    GPUSPEECH_CL_CASE(CL_INVALID_WORK_DIMENSION)
    GPUSPEECH_CL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    GPUSPEECH_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    GPUSPEECH_CL_CASE(CL_INVALID_GLOBAL_OFFSET)
    GPUSPEECH_CL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    GPUSPEECH_CL_CASE(CL_INVALID_OPERATION)
    GPUSPEECH_CL_CASE(CL_INVALID_BUFFER_SIZE)
    GPUSPEECH_CL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    GPUSPEECH_CL_CASE(CL_PLATFORM_NOT_FOUND_KHR)
#undef GPUSPEECH_CL_CASE
    default:
      return nullptr;
  }
}

std::string describe_code(cl_int code) {
  const char* name = cl_error_name(code);
  return std::string(name ? name : "error") + " (" + std::to_string(code) + ")";
}

// clFFT's status codes are the OpenCL ones plus a few of its own.
std::string describe_clfft(clfftStatus status) {
  switch (status) {
    case CLFFT_BUGCHECK: return "CLFFT_BUGCHECK (4096)";
    case CLFFT_NOTIMPLEMENTED: return "CLFFT_NOTIMPLEMENTED (4097)";
    case CLFFT_TRANSPOSED_NOTIMPLEMENTED:
      return "CLFFT_TRANSPOSED_NOTIMPLEMENTED (4098)";
    case CLFFT_FILE_NOT_FOUND: return "CLFFT_FILE_NOT_FOUND (4099)";
    case CLFFT_FILE_CREATE_FAILURE: return "CLFFT_FILE_CREATE_FAILURE (4100)";
    case CLFFT_VERSION_MISMATCH: return "CLFFT_VERSION_MISMATCH (4101)";
    case CLFFT_INVALID_PLAN: return "CLFFT_INVALID_PLAN (4102)";
    case CLFFT_DEVICE_NO_DOUBLE: return "CLFFT_DEVICE_NO_DOUBLE (4103)";
    case CLFFT_DEVICE_MISMATCH: return "CLFFT_DEVICE_MISMATCH (4104)";
    default: return describe_code(static_cast<cl_int>(status));
  }
}

[[noreturn]] void throw_cl(const std::string& call, cl_int code) {
  throw BackendError("opencl: " + call + " failed: " + describe_code(code));
}

void check_cl(cl_int code, const std::string& call) {
  if (code != CL_SUCCESS) throw_cl(call, code);
}

void check_clfft(clfftStatus status, const std::string& call) {
  if (status != CLFFT_SUCCESS)
    throw BackendError("opencl: " + call + " failed: " + describe_clfft(status));
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  size_t first = s.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : s.substr(first);
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t n = 0;
  check_cl(clGetPlatformInfo(platform, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  check_cl(clGetPlatformInfo(platform, what, n, &s[0], nullptr), "clGetPlatformInfo");
  return trimmed(s);
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t n = 0;
  check_cl(clGetDeviceInfo(device, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check_cl(clGetDeviceInfo(device, what, n, &s[0], nullptr), "clGetDeviceInfo");
  return trimmed(s);
}

template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T v{};
  check_cl(clGetDeviceInfo(device, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
  return v;
}

struct DeviceEntry {
  cl_platform_id platform;
  cl_device_id device;
  std::string label;  // "<device> (<platform>)"
  bool is_gpu;
};

// Every device of every platform, in platform order.
std::vector<DeviceEntry> enumerate_devices() {
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && num_platforms == 0))
    throw BackendError(
        "no OpenCL platform (the ICD loader found no driver; install one, "
        "e.g. pocl-opencl-icd or a GPU vendor's OpenCL driver)");
  check_cl(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(num_platforms);
  check_cl(clGetPlatformIDs(num_platforms, platforms.data(), nullptr),
           "clGetPlatformIDs");

  std::vector<DeviceEntry> out;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    if (err == CL_DEVICE_NOT_FOUND || n == 0) continue;
    check_cl(err, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(n);
    check_cl(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr),
             "clGetDeviceIDs");
    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    for (cl_device_id d : devices) {
      auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
      out.push_back({p, d, device_string(d, CL_DEVICE_NAME) + " (" + pname + ")",
                     (type & CL_DEVICE_TYPE_GPU) != 0});
    }
  }
  return out;
}

// "0: name (platform), 1: ..." for device-id errors; without the indices
// where they would not be device ids.
std::string list_labels(const std::vector<DeviceEntry>& devices, bool with_index = true) {
  std::string s;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i) s += ", ";
    if (with_index) s += std::to_string(i) + ": ";
    s += devices[i].label;
  }
  return s;
}

// clFFT keeps process-wide state: set it up once, tear it down at exit (it
// complains on stderr otherwise). Backends destroyed after the teardown must
// not touch their plans any more.
std::once_flag g_clfft_once;
clfftStatus g_clfft_setup_status = CLFFT_SUCCESS;
std::atomic<bool> g_clfft_torn_down{false};

void clfft_teardown_at_exit() {
  g_clfft_torn_down = true;
  clfftTeardown();
}

void ensure_clfft() {
  std::call_once(g_clfft_once, [] {
    clfftSetupData setup;
    g_clfft_setup_status = clfftInitSetupData(&setup);
    if (g_clfft_setup_status == CLFFT_SUCCESS)
      g_clfft_setup_status = clfftSetup(&setup);
    // Registered after the first backend was constructed, so static
    // backends built from here on are destroyed before this runs.
    if (g_clfft_setup_status == CLFFT_SUCCESS) std::atexit(clfft_teardown_at_exit);
  });
  check_clfft(g_clfft_setup_status, "clfftSetup");
}

class ClBuffer : public DeviceBuffer {
 public:
  ClBuffer(const Backend* owner, size_t n, cl_mem mem)
      : DeviceBuffer(owner, n), mem_(mem) {}
  ~ClBuffer() override { clReleaseMemObject(mem_); }
  cl_mem mem() const { return mem_; }

 private:
  cl_mem mem_;
};

// The operation codes of kernels/opencl/elementwise.cl.
cl_int unary_code(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLogFloor: return 0;
    case UnaryOp::kLogOffset: return 1;
    case UnaryOp::kLogClamp: return 2;
    case UnaryOp::kPow: return 3;
    case UnaryOp::kSqrt: return 4;
  }
  throw BackendError("opencl: apply: unknown UnaryOp " +
                     std::to_string(static_cast<int>(op)));
}

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// GPUSPEECH_OPENCL_FUSED_BANDS=0 runs spectral_bands as the composition of
// frame_signal, power_spectrum (clFFT), the filterbank GEMM and apply (the
// path before the fused kernel), to compare the two in one benchmark command.
bool opencl_fused_bands_from_env() {
  const char* v = std::getenv("GPUSPEECH_OPENCL_FUSED_BANDS");
  return !(v != nullptr && std::string(v) == "0");
}

// GPUSPEECH_OPENCL_TOPN_RANKED=0 runs Gaussian selection as the kernel that
// ranks a codebook per senone, where codebooks are shared too.
bool opencl_ranked_top_n_from_env() {
  const char* v = std::getenv("GPUSPEECH_OPENCL_TOPN_RANKED");
  return !(v != nullptr && std::string(v) == "0");
}

// FFT sizes of the fused kernels (kernels/opencl/spectral_bands.cl, one a
// size): the powers of two the tests run them at (DeviceVsCpu.SpectralBands:
// 128..2048), where the device has the local memory they declare
// (kFusedBandsShapes). Other sizes, including the non-powers of two clFFT
// takes, go to the composition.
constexpr int kFusedBandsMinFft = 128;
constexpr int kFusedBandsMaxFft = 2048;
// Above this many bands (VTLN warps) the composition runs: the kernels'
// local memory holds the layout of at most 80 (SB_MAX_BANDS), as the CUDA
// kernel's (docs/benchmarks.md, "Fused front end").
constexpr int kFusedBandsMaxBands = 80;

// The fused kernels of kernels/opencl/spectral_bands.cl, one per FFT size:
// frames a work-group, items a frame, and the local memory they declare.
struct FusedBandsShape {
  int fft_size;
  const char* kernel;
  int frames;
  int items_per_frame;
  size_t local_bytes;  // bound of the static local arrays (the host checks the device has it)
};
constexpr size_t fused_local_bytes(int frames, int kbuf, int cap, int items) {
  return static_cast<size_t>(frames) * kbuf * 8 + static_cast<size_t>(cap) * 8 + 80 * 4 +
         1024 * 4 + static_cast<size_t>(frames) * items * 8;
}
constexpr FusedBandsShape kFusedBandsShapes[] = {
    {128, "spectral_bands_128", 32, 8, fused_local_bytes(32, 80, 130, 8)},
    {256, "spectral_bands_256", 16, 16, fused_local_bytes(16, 136, 258, 16)},
    {512, "spectral_bands_512", 16, 16, fused_local_bytes(16, 272, 514, 16)},
    {1024, "spectral_bands_1024", 4, 32, fused_local_bytes(4, 528, 1026, 32)},
    {2048, "spectral_bands_2048", 2, 32, fused_local_bytes(2, 1056, 1026, 32)},
};
// The layout buffer (LAYOUT_FLOATS in spectral_bands.cl) and the largest
// padded projection matrix a work-group holds (SB_MAX_PROJECTION_LOCAL).
constexpr size_t kFusedLayoutFloats = 1 + 81 + 80 + 2 + 80 + 1028 + 1028 + 2048 + 2048;
constexpr int kFusedMaxProjection = 1024;
constexpr int group_stride(int group) { return (group + 3) & ~3; }
constexpr int matrix_stride(int group) {
  return (group_stride(group) / 4) % 2 == 1 ? group_stride(group) : group_stride(group) + 4;
}

class OpenclBackend : public Backend {
 public:
  explicit OpenclBackend(const DeviceEntry& entry)
      : device_(entry.device), label_(entry.label) {
    // Device queries first: they may throw, and nothing needs releasing yet.
    max_alloc_ = device_value<cl_ulong>(device_, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    const std::string ext = device_string(device_, CL_DEVICE_EXTENSIONS);
    has_fp64_ = ext.find("cl_khr_fp64") != std::string::npos;
    const size_t max_wg = device_value<size_t>(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    gemm_tile_ = max_wg >= 256 ? 16 : (max_wg >= 64 ? 8 : 4);
    frame_wg_ = 1;
    while (frame_wg_ * 2 <= std::min<size_t>(max_wg, 128)) frame_wg_ *= 2;
    local_mem_ = device_value<cl_ulong>(device_, CL_DEVICE_LOCAL_MEM_SIZE);

    cl_int err = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check_cl(err, "clCreateContext(" + label_ + ")");
    queue_ = clCreateCommandQueue(context_, device_, 0, &err);
    if (err != CL_SUCCESS) {
      clReleaseContext(context_);
      throw_cl("clCreateCommandQueue(" + label_ + ")", err);
    }
  }

  ~OpenclBackend() override {
    clFinish(queue_);  // nothing queued may outlive the scratch it uses
    bands_scratch_ = SpectralBandsScratch{};  // its buffers go before the context
    projection_scratch_ = SpectralBandsScratch{};
    if (!g_clfft_torn_down)
      for (auto& kv : plans_) clfftDestroyPlan(&kv.second);
    if (fft_bins_) clReleaseMemObject(fft_bins_);
    if (ranked_) clReleaseMemObject(ranked_);
    for (auto& kv : twiddles_) clReleaseMemObject(kv.second);
    for (cl_kernel k : {k_frame_, k_power_, k_layout_, k_gemm_, k_apply_, k_logcol_, k_outer_,
                        k_splice_, k_lpc_, k_senone_, k_senone_top_n_, k_rank_, k_sum_ranked_,
                        k_floor_})
      if (k) clReleaseKernel(k);
    for (auto& kv : k_bands_) clReleaseKernel(kv.second);
    if (layout_) clReleaseMemObject(layout_);
    if (program_) clReleaseProgram(program_);
    clReleaseCommandQueue(queue_);
    clReleaseContext(context_);
  }

  const char* name() const override { return "opencl"; }
  std::string device_name() const override { return label_; }

  BufferPtr alloc(size_t n_floats) override {
    const size_t bytes = std::max<size_t>(n_floats, 1) * sizeof(float);
    if (n_floats > max_alloc_ / sizeof(float))
      throw BackendError("opencl: cannot allocate " + std::to_string(n_floats) +
                         " floats on " + label_ + ": the device allows at most " +
                         std::to_string(max_alloc_) + " bytes per buffer");
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check_cl(err, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
    return BufferPtr(new ClBuffer(this, n_floats, mem));
  }

  void upload(DeviceBuffer& dst, const float* src, size_t n,
              size_t dst_offset) override {
    const ClBuffer& d = own(dst, "upload");
    require_range(d, dst_offset, n, "upload destination");
    if (n == 0) return;
    check_cl(clEnqueueWriteBuffer(queue_, d.mem(), CL_TRUE, dst_offset * sizeof(float),
                                  n * sizeof(float), src, 0, nullptr, nullptr),
             "clEnqueueWriteBuffer");
  }

  void download(const DeviceBuffer& src, float* dst, size_t n,
                size_t src_offset) override {
    const ClBuffer& s = own(src, "download");
    require_range(s, src_offset, n, "download source");
    if (n == 0) return;
    check_cl(clEnqueueReadBuffer(queue_, s.mem(), CL_TRUE, src_offset * sizeof(float),
                                 n * sizeof(float), dst, 0, nullptr, nullptr),
             "clEnqueueReadBuffer");
  }

  void synchronize() override { check_cl(clFinish(queue_), "clFinish"); }

  void frame_signal(const DeviceBuffer& signal, const FramingSpec& spec,
                    const DeviceBuffer& window, DeviceBuffer& frames,
                    DeviceBuffer* energy) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& sig = own(signal, "frame_signal signal");
    const ClBuffer& win = own(window, "frame_signal window");
    const ClBuffer& out = own(frames, "frame_signal frames");
    const ClBuffer* en = energy ? &own(*energy, "frame_signal energy") : nullptr;
    if (spec.num_utts < 0 || spec.frames_per_utt < 0 || spec.utt_stride < 0 ||
        spec.valid_length < 0 || spec.frame_shift <= 0 || spec.frame_length <= 0 ||
        spec.fft_size < spec.frame_length)
      throw BackendError(
          "opencl: frame_signal: bad FramingSpec (need num_utts, frames_per_utt, "
          "utt_stride, valid_length >= 0, frame_shift, frame_length > 0 and "
          "fft_size >= frame_length)");
    const int64_t rows = spec.rows();
    require_size(win, static_cast<size_t>(spec.frame_length), "frame_signal window");
    require_size(out, static_cast<size_t>(rows) * spec.fft_size, "frame_signal frames");
    if (en) require_size(*en, static_cast<size_t>(rows), "frame_signal energy");
    if (spec.num_utts > 0 && spec.valid_length > 0)
      require_size(sig, static_cast<size_t>((spec.num_utts - 1) * spec.utt_stride +
                                            spec.valid_length),
                   "frame_signal signal");
    if (rows == 0) return;
    ensure_program();
    cl_mem energy_mem = en ? en->mem() : out.mem();  // unused when !en
    set_args(k_frame_, "frame_signal", sig.mem(), cl_long(spec.utt_stride),
             cl_long(spec.valid_length), cl_long(spec.frames_per_utt),
             cl_long(spec.first_frame_offset), cl_int(spec.frame_shift),
             cl_int(spec.frame_length), cl_int(spec.fft_size),
             cl_float(spec.preemphasis), cl_int(spec.preemphasis_per_frame ? 1 : 0),
             cl_int(spec.remove_dc ? 1 : 0), win.mem(), out.mem(), energy_mem,
             cl_int(en ? 1 : 0));
    const size_t global = static_cast<size_t>(rows) * frame_wg_;
    launch(k_frame_, "frame_signal", 1, &global, &frame_wg_);
  }

  void power_spectrum(const DeviceBuffer& frames, int64_t rows, int fft_size,
                      bool magnitude, DeviceBuffer& spectrum) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& in = own(frames, "power_spectrum frames");
    const ClBuffer& out = own(spectrum, "power_spectrum spectrum");
    if (fft_size < 2 || (fft_size & (fft_size - 1)) != 0)
      throw BackendError("opencl: power_spectrum: fft_size must be a power of two >= 2, got " +
                         std::to_string(fft_size));
    if (rows < 0) throw BackendError("opencl: power_spectrum: rows < 0");
    const size_t bins = static_cast<size_t>(fft_size) / 2 + 1;
    require_size(in, static_cast<size_t>(rows) * fft_size, "power_spectrum frames");
    require_size(out, static_cast<size_t>(rows) * bins, "power_spectrum spectrum");
    if (rows == 0) return;
    ensure_program();

    // clFFT has no buffer offsets, so a large batch is transformed in
    // chunks through sub-buffers of `frames`: the complex scratch stays
    // bounded (a full batch of complex bins would double the memory a big
    // benchmark needs). The chunk start is a multiple of kFftChunkRows rows,
    // which keeps every sub-buffer origin aligned for any device.
    const int64_t chunk = std::min<int64_t>(rows, kFftChunkRows);
    ensure_fft_bins(static_cast<size_t>(chunk) * bins * 2 * sizeof(float));
    for (int64_t first = 0; first < rows; first += chunk) {
      const int64_t n_rows = std::min<int64_t>(chunk, rows - first);
      clfftPlanHandle plan = fft_plan(n_rows, fft_size);
      cl_mem in_mem = in.mem();
      cl_mem sub = nullptr;
      if (first > 0 || n_rows < rows) {
        cl_buffer_region region;
        region.origin = static_cast<size_t>(first) * fft_size * sizeof(float);
        region.size = static_cast<size_t>(n_rows) * fft_size * sizeof(float);
        cl_int err = CL_SUCCESS;
        sub = clCreateSubBuffer(in.mem(), 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        check_cl(err, "clCreateSubBuffer(fft input rows " + std::to_string(first) + "+" +
                          std::to_string(n_rows) + ")");
        in_mem = sub;
      }
      const clfftStatus status = clfftEnqueueTransform(
          plan, CLFFT_FORWARD, 1, &queue_, 0, nullptr, nullptr, &in_mem, &fft_bins_, nullptr);
      // Released now; the runtime keeps it alive until the transform ran.
      if (sub) clReleaseMemObject(sub);
      check_clfft(status, "clfftEnqueueTransform");

      const cl_ulong n = static_cast<cl_ulong>(n_rows) * bins;
      set_args(k_power_, "hermitian_to_power", fft_bins_, n, cl_int(magnitude ? 1 : 0),
               out.mem(), cl_ulong(static_cast<size_t>(first) * bins));
      launch_1d(k_power_, "hermitian_to_power", n);
    }
  }

  // The fused kernel (kernels/opencl/spectral_bands.cl) for the FFT sizes
  // it covers and up to kFusedBandsMaxBands bands; otherwise, or with
  // GPUSPEECH_OPENCL_FUSED_BANDS=0, the composition of this backend's own
  // operations, frames and spectra through device memory in scratch kept
  // between calls (guarded on its own: the operations lock mu_ themselves).
  void spectral_bands(const DeviceBuffer& signal, const FramingSpec& spec,
                      const DeviceBuffer& window, const BandsSpec& b,
                      const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                      DeviceBuffer& bands, DeviceBuffer* energy) override {
    const ClBuffer& rng = own(ranges, "spectral_bands ranges");
    check_spectral_bands_args("opencl", spec, window, b, filterbank, ranges, bands, energy);
    const bool fused = fused_bands_taken(spec.fft_size, b.num_bands);
    if (b.projection != nullptr &&
        (!fused || b.num_bands / b.projection_group * group_stride(b.projection_group) > 128 ||
         b.projection_outputs * matrix_stride(b.projection_group) > kFusedMaxProjection)) {
      std::lock_guard<std::mutex> lock(projection_mu_);
      spectral_bands_then_projection(*this, projection_scratch_, signal, spec, window, b,
                                     filterbank, ranges, bands, energy);
      return;
    }
    if (!fused) {
      std::lock_guard<std::mutex> lock(compose_mu_);
      spectral_bands_by_composition(*this, bands_scratch_, signal, spec, window, b, filterbank,
                                    bands, energy);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& sig = own(signal, "spectral_bands signal");
    const ClBuffer& win = own(window, "spectral_bands window");
    const ClBuffer& fb = own(filterbank, "spectral_bands filterbank");
    const ClBuffer& out = own(bands, "spectral_bands bands");
    const ClBuffer* en = energy ? &own(*energy, "spectral_bands energy") : nullptr;
    if (spec.num_utts > 0 && spec.valid_length > 0)
      require_size(sig, static_cast<size_t>((spec.num_utts - 1) * spec.utt_stride +
                                            spec.valid_length),
                   "spectral_bands signal");
    const int64_t rows = spec.rows();
    if (rows == 0) return;
    ensure_program();
    const FusedBandsShape& shape = fused_shape(spec.fft_size);
    cl_kernel kernel = fused_kernel(shape);
    cl_mem tw = twiddles(spec.fft_size);
    const ClBuffer* proj = b.projection ? &own(*b.projection, "spectral_bands projection") : nullptr;
    const int group = b.projection ? b.projection_group : 0;
    const int outputs = b.projection ? b.projection_outputs : 0;
    // The layout first (one work-group), then the frames; in order on the
    // queue, under this lock.
    if (!layout_) {
      cl_int err = CL_SUCCESS;
      layout_ = clCreateBuffer(context_, CL_MEM_READ_WRITE, kFusedLayoutFloats * sizeof(cl_float),
                               nullptr, &err);
      check_cl(err, "clCreateBuffer(spectral_bands layout)");
    }
    set_args(k_layout_, "filterbank_layout", fb.mem(), rng.mem(), proj ? proj->mem() : fb.mem(),
             win.mem(), cl_int(spec.frame_length), cl_int(spec.fft_size), cl_int(b.num_bands),
             cl_int(shape.items_per_frame), cl_int(group), cl_int(outputs), layout_);
    const size_t layout_wg = 256;
    launch(k_layout_, "filterbank_layout", 1, &layout_wg, &layout_wg);
    cl_mem energy_mem = en ? en->mem() : out.mem();  // unused when !en
    set_args(kernel, shape.kernel, sig.mem(), cl_long(spec.utt_stride),
             cl_long(spec.valid_length), cl_long(spec.frames_per_utt),
             cl_long(spec.first_frame_offset), cl_int(spec.frame_shift),
             cl_int(spec.frame_length), cl_float(spec.preemphasis),
             cl_int(spec.preemphasis_per_frame ? 1 : 0), cl_int(spec.remove_dc ? 1 : 0), tw,
             cl_int(b.magnitude ? 1 : 0), cl_int(b.num_bands), fb.mem(), layout_,
             cl_int(b.apply_op ? 1 : 0), cl_int(unary_code(b.op)), cl_float(b.op_param),
             cl_int(group), cl_int(outputs), cl_long(rows), out.mem(), energy_mem,
             cl_int(en ? 1 : 0));
    const size_t wg = static_cast<size_t>(shape.frames) * shape.items_per_frame;
    const size_t global = static_cast<size_t>((rows + shape.frames - 1) / shape.frames) * wg;
    launch(kernel, shape.kernel, 1, &global, &wg);
  }

  static const FusedBandsShape& fused_shape(int fft_size) {
    for (const FusedBandsShape& s : kFusedBandsShapes)
      if (s.fft_size == fft_size) return s;
    throw BackendError("opencl: no fused spectral_bands kernel for " + std::to_string(fft_size) +
                       " points");
  }
  cl_kernel fused_kernel(const FusedBandsShape& shape) {
    auto it = k_bands_.find(shape.fft_size);
    if (it != k_bands_.end()) return it->second;
    cl_kernel k = make_kernel(shape.kernel);
    k_bands_.emplace(shape.fft_size, k);
    return k;
  }

  // Whether spectral_bands takes the fused kernel for this shape.
  bool fused_bands_taken(int fft_size, int num_bands) const {
    const bool power_of_two = fft_size > 0 && (fft_size & (fft_size - 1)) == 0;
    if (!use_fused_bands_ || !power_of_two || fft_size < kFusedBandsMinFft ||
        fft_size > kFusedBandsMaxFft || num_bands > kFusedBandsMaxBands)
      return false;
    return fused_shape(fft_size).local_bytes <= local_mem_;
  }

  void gemm_nt(const DeviceBuffer& a, int64_t rows, int k, const DeviceBuffer& b,
               int m, DeviceBuffer& c, size_t a_offset, size_t c_offset) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& ab = own(a, "gemm_nt A");
    const ClBuffer& bb = own(b, "gemm_nt B");
    const ClBuffer& cb = own(c, "gemm_nt C");
    if (rows < 0 || k < 0 || m < 0)
      throw BackendError("opencl: gemm_nt: negative size (rows " + std::to_string(rows) +
                         ", k " + std::to_string(k) + ", m " + std::to_string(m) + ")");
    require_range(ab, a_offset, static_cast<size_t>(rows) * k, "gemm_nt A");
    require_size(bb, static_cast<size_t>(m) * k, "gemm_nt B");
    require_range(cb, c_offset, static_cast<size_t>(rows) * m, "gemm_nt C");
    if (rows == 0 || m == 0) return;
    ensure_program();
    set_args(k_gemm_, "gemm_nt", ab.mem(), cl_ulong(a_offset), cl_long(rows), cl_int(k),
             bb.mem(), cl_int(m), cb.mem(), cl_ulong(c_offset));
    const size_t global[2] = {round_up(static_cast<size_t>(rows), gemm_tile_),
                              round_up(static_cast<size_t>(m), gemm_tile_)};
    const size_t local[2] = {gemm_tile_, gemm_tile_};
    launch(k_gemm_, "gemm_nt", 2, global, local);
  }

  void apply(UnaryOp op, float param, DeviceBuffer& x, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& xb = own(x, "apply");
    require_size(xb, n, "apply");
    if (n == 0) return;
    ensure_program();
    set_args(k_apply_, "apply_unary", xb.mem(), cl_ulong(n), unary_code(op),
             cl_float(param));
    launch_1d(k_apply_, "apply_unary", n);
  }

  void extended_outer_products(const DeviceBuffer& x, int64_t rows, int dim,
                               DeviceBuffer& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& s = own(x, "extended_outer_products x");
    const ClBuffer& d = own(out, "extended_outer_products out");
    if (rows < 0 || dim < 1 || dim > kMaxExtendedDim)
      throw BackendError("opencl: extended_outer_products: need rows >= 0 and 1 <= dim <= " +
                         std::to_string(kMaxExtendedDim) + " (got rows " + std::to_string(rows) +
                         ", dim " + std::to_string(dim) + ")");
    const size_t pairs = static_cast<size_t>(dim + 1) * (dim + 2) / 2;
    require_size(s, static_cast<size_t>(rows) * dim, "extended_outer_products x");
    require_size(d, static_cast<size_t>(rows) * pairs, "extended_outer_products out");
    if (rows == 0) return;
    ensure_program();
    set_args(k_outer_, "extended_outer_products", s.mem(), cl_long(rows), cl_int(dim), d.mem());
    launch_1d(k_outer_, "extended_outer_products", static_cast<size_t>(rows));
  }

  void log_into_column(const DeviceBuffer& src, int64_t rows, float param,
                       DeviceBuffer& dst, int dst_cols, int dst_col) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& s = own(src, "log_into_column src");
    const ClBuffer& d = own(dst, "log_into_column dst");
    if (rows < 0 || dst_cols <= 0 || dst_col < 0 || dst_col >= dst_cols)
      throw BackendError("opencl: log_into_column: need rows >= 0 and 0 <= dst_col < "
                         "dst_cols (got rows " + std::to_string(rows) + ", dst_col " +
                         std::to_string(dst_col) + ", dst_cols " +
                         std::to_string(dst_cols) + ")");
    require_size(s, static_cast<size_t>(rows), "log_into_column src");
    require_size(d, static_cast<size_t>(rows) * dst_cols, "log_into_column dst");
    if (rows == 0) return;
    ensure_program();
    set_args(k_logcol_, "log_into_column", s.mem(), cl_long(rows), cl_float(param),
             d.mem(), cl_int(dst_cols), cl_int(dst_col));
    launch_1d(k_logcol_, "log_into_column", static_cast<size_t>(rows));
  }

  void splice(const DeviceBuffer& src, int64_t num_utts, int64_t rows_per_utt,
              int cols, int left, int right, DeviceBuffer& dst) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& s = own(src, "splice src");
    const ClBuffer& d = own(dst, "splice dst");
    if (num_utts < 0 || rows_per_utt < 0 || cols <= 0 || left < 0 || right < 0)
      throw BackendError("opencl: splice: need num_utts, rows_per_utt, left, right >= 0 "
                         "and cols > 0");
    const size_t rows = static_cast<size_t>(num_utts * rows_per_utt);
    const size_t width = static_cast<size_t>(left + right + 1) * cols;
    require_size(s, rows * cols, "splice src");
    require_size(d, rows * width, "splice dst");
    if (rows == 0) return;
    ensure_program();
    const cl_ulong total = rows * width;
    set_args(k_splice_, "splice", s.mem(), cl_long(rows_per_utt), cl_int(cols),
             cl_int(left), cl_int(right), d.mem(), total);
    launch_1d(k_splice_, "splice", total);
  }

  void lpc_to_cepstrum(const DeviceBuffer& autocorr, int64_t rows, int order,
                       int num_ceps, DeviceBuffer& ceps) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& r = own(autocorr, "lpc_to_cepstrum autocorr");
    const ClBuffer& c = own(ceps, "lpc_to_cepstrum ceps");
    if (rows < 0 || order < 1 || order > kLpcMaxOrder || num_ceps < 1 ||
        num_ceps > kLpcMaxCeps)
      throw BackendError("opencl: lpc_to_cepstrum: need rows >= 0, 1 <= order <= " +
                         std::to_string(kLpcMaxOrder) + " and 1 <= num_ceps <= " +
                         std::to_string(kLpcMaxCeps) + " (got order " +
                         std::to_string(order) + ", num_ceps " +
                         std::to_string(num_ceps) + ")");
    require_size(r, static_cast<size_t>(rows) * (order + 1), "lpc_to_cepstrum autocorr");
    require_size(c, static_cast<size_t>(rows) * num_ceps, "lpc_to_cepstrum ceps");
    if (rows == 0) return;
    ensure_program();
    set_args(k_lpc_, "lpc_to_cepstrum", r.mem(), cl_long(rows), cl_int(order),
             cl_int(num_ceps), c.mem());
    launch_1d(k_lpc_, "lpc_to_cepstrum", static_cast<size_t>(rows));
  }

  void senone_scores(const DeviceBuffer& densities, int num_gaussians, int64_t frames,
                     const DeviceBuffer& offsets, const DeviceBuffer& gaussian,
                     const DeviceBuffer& logw, int senones, int streams, DeviceBuffer& out,
                     size_t out_offset) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& d = own(densities, "senone_scores densities");
    const ClBuffer& o = own(offsets, "senone_scores offsets");
    const ClBuffer& g = own(gaussian, "senone_scores gaussian");
    const ClBuffer& w = own(logw, "senone_scores logw");
    const ClBuffer& r = own(out, "senone_scores out");
    if (num_gaussians < 1 || frames < 0 || senones < 0 || streams < 1)
      throw BackendError("opencl: senone_scores: need num_gaussians >= 1, frames >= 0, "
                         "senones >= 0 and streams >= 1 (got " +
                         std::to_string(num_gaussians) + ", " + std::to_string(frames) +
                         ", " + std::to_string(senones) + ", " + std::to_string(streams) +
                         ")");
    require_size(d, static_cast<size_t>(num_gaussians) * frames, "senone_scores densities");
    require_size(o, static_cast<size_t>(senones) * streams + 1, "senone_scores offsets");
    require_range(r, out_offset, static_cast<size_t>(frames) * senones, "senone_scores out");
    if (frames == 0 || senones == 0) return;
    ensure_program();
    // The kernel clamps entry indices to what both entry buffers hold.
    const cl_long entries = static_cast<cl_long>(std::min(g.size(), w.size()));
    set_args(k_senone_, "senone_scores", d.mem(), cl_int(num_gaussians), cl_long(frames),
             o.mem(), g.mem(), w.mem(), entries, cl_int(senones), cl_int(streams), r.mem(),
             cl_ulong(out_offset));
    launch_1d(k_senone_, "senone_scores", static_cast<size_t>(frames) * senones);
  }

  void senone_scores_top_n(const DeviceBuffer& densities, int codebooks, int density,
                           int64_t frames, int top_n, const DeviceBuffer& codebook,
                           const DeviceBuffer& weights, int senones, int streams, DeviceBuffer& out,
                           size_t out_offset) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& d = own(densities, "senone_scores_top_n densities");
    const ClBuffer& c = own(codebook, "senone_scores_top_n codebook");
    const ClBuffer& w = own(weights, "senone_scores_top_n weights");
    const ClBuffer& r = own(out, "senone_scores_top_n out");
    if (codebooks < 1 || density < 1 || frames < 0 || senones < 0 || streams < 1 ||
        top_n < 1 || top_n > kMaxTopN)
      throw BackendError("opencl: senone_scores_top_n: need codebooks, density, streams >= 1, "
                         "frames, senones >= 0 and top_n in 1.." + std::to_string(kMaxTopN) +
                         " (got " + std::to_string(codebooks) + ", " + std::to_string(density) +
                         ", " + std::to_string(streams) + ", " + std::to_string(frames) + ", " +
                         std::to_string(senones) + ", " + std::to_string(top_n) + ")");
    require_size(d, static_cast<size_t>(streams) * codebooks * density * frames,
                 "senone_scores_top_n densities");
    require_size(c, static_cast<size_t>(senones), "senone_scores_top_n codebook");
    require_size(w, static_cast<size_t>(senones) * streams * density, "senone_scores_top_n weights");
    require_range(r, out_offset, static_cast<size_t>(frames) * senones, "senone_scores_top_n out");
    if (frames == 0 || senones == 0) return;
    ensure_program();
    const int64_t chunk =
        use_ranked_top_n_ ? top_n_ranked_chunk(codebooks, density, frames, top_n, senones, streams)
                          : 0;
    if (chunk > 0) {
      const int n = std::min(top_n, density);
      // Taken whole at the first use (a stream's warm-up), as on CUDA;
      // every chunk's lists fit in it (top_n_ranked_chunk).
      ensure_ranked(static_cast<size_t>(kTopNRankedScratchFloats) * sizeof(cl_float));
      for (int64_t f0 = 0; f0 < frames; f0 += chunk) {
        const int64_t part = std::min(chunk, frames - f0);
        set_args(k_rank_, "rank_codebooks", d.mem(), cl_int(streams * codebooks),
                 cl_int(density), cl_long(frames), cl_long(f0), cl_long(part), cl_int(n), ranked_);
        launch_1d(k_rank_, "rank_codebooks", static_cast<size_t>(streams) * codebooks * part);
        set_args(k_sum_ranked_, "sum_ranked", d.mem(), cl_int(codebooks), cl_int(density),
                 cl_long(frames), cl_long(f0), cl_long(part), cl_int(n), c.mem(), w.mem(),
                 cl_int(senones), cl_int(streams), ranked_, r.mem(), cl_ulong(out_offset));
        launch_1d(k_sum_ranked_, "sum_ranked", static_cast<size_t>(part) * senones);
      }
      return;
    }
    set_args(k_senone_top_n_, "senone_scores_top_n", d.mem(), cl_int(codebooks), cl_int(density),
             cl_long(frames), cl_int(top_n), c.mem(), w.mem(), cl_int(senones), cl_int(streams),
             r.mem(), cl_ulong(out_offset));
    launch_1d(k_senone_top_n_, "senone_scores_top_n", static_cast<size_t>(frames) * senones);
  }

  void floor_densities(DeviceBuffer& densities, int64_t frames, int rows_per_stream, int streams,
                       float floor) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ClBuffer& d = own(densities, "floor_densities densities");
    check_floor_densities_args("opencl", frames, rows_per_stream, streams, floor);
    require_size(d, static_cast<size_t>(streams) * rows_per_stream * frames,
                 "floor_densities densities");
    if (frames == 0) return;
    ensure_program();
    set_args(k_floor_, "floor_densities", d.mem(), cl_long(frames), cl_int(rows_per_stream),
             cl_int(streams), cl_float(floor), cl_float(kDensityFloorSlope));
    launch_1d(k_floor_, "floor_densities", static_cast<size_t>(frames) * streams);
  }

 private:
  const ClBuffer& own(const DeviceBuffer& b, const char* what) const {
    auto* cb = dynamic_cast<const ClBuffer*>(&b);
    if (!cb || b.owner() != this)
      throw BackendError(std::string("opencl: ") + what +
                         ": buffer belongs to another backend");
    return *cb;
  }

  static void require_size(const DeviceBuffer& b, size_t need, const char* what) {
    if (b.size() < need)
      throw BackendError(std::string("opencl: ") + what + ": buffer holds " +
                         std::to_string(b.size()) + " floats, needs " +
                         std::to_string(need));
  }

  static void require_range(const DeviceBuffer& b, size_t offset, size_t n,
                            const char* what) {
    if (offset > b.size() || n > b.size() - offset)
      throw BackendError(std::string("opencl: ") + what + ": range [" +
                         std::to_string(offset) + ", " + std::to_string(offset + n) +
                         ") exceeds the buffer's " + std::to_string(b.size()) +
                         " floats");
  }

  // tw[k] = exp(-2 pi i k / n) for k < n, computed in double and kept per
  // FFT size for the backend's life (16 KB at 2048 points).
  cl_mem twiddles(int n) {
    auto it = twiddles_.find(n);
    if (it != twiddles_.end()) return it->second;
    std::vector<cl_float> host(2 * static_cast<size_t>(n));
    const double pi = 3.14159265358979323846;
    for (int k = 0; k < n; ++k) {
      const double angle = -2.0 * pi * k / n;
      host[2 * k] = static_cast<cl_float>(std::cos(angle));
      host[2 * k + 1] = static_cast<cl_float>(std::sin(angle));
    }
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                host.size() * sizeof(cl_float), host.data(), &err);
    check_cl(err, "clCreateBuffer(twiddles, " + std::to_string(n) + " points)");
    twiddles_.emplace(n, mem);
    return mem;
  }

  // Builds the program from the embedded sources (once per backend).
  void ensure_program() {
    if (program_) return;
    std::vector<const char*> texts;
    for (int i = 0; i < opencl_kernels::kNumSources; ++i)
      texts.push_back(opencl_kernels::kSources[i].text);
    cl_int err = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(
        context_, static_cast<cl_uint>(texts.size()), texts.data(), nullptr, &err);
    check_cl(err, "clCreateProgramWithSource");
    const std::string options = "-DGPUSPEECH_FP64=" + std::to_string(has_fp64_ ? 1 : 0) +
                                " -DGEMM_TILE=" + std::to_string(gemm_tile_) +
                                " -DFRAME_WG=" + std::to_string(frame_wg_);
    err = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      std::string log;
      size_t n = 0;
      if (clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) ==
          CL_SUCCESS) {
        log.resize(n);
        clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
      }
      clReleaseProgram(program);
      throw BackendError("opencl: clBuildProgram(kernels/opencl/*.cl, " + options +
                         ") failed on " + label_ + ": " + describe_code(err) +
                         "\n" + trimmed(log));
    }
    program_ = program;
    // GPUSPEECH_OPENCL_DUMP_BINARY=FILE writes the built program's binary
    // (PTX on NVIDIA's driver): where a kernel keeps its private arrays
    // (a __local_depot is a stack frame) shows there, or under ptxas -v.
    if (const char* dump = std::getenv("GPUSPEECH_OPENCL_DUMP_BINARY")) {
      size_t size = 0;
      if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) ==
              CL_SUCCESS && size > 0) {
        std::vector<unsigned char> bin(size);
        unsigned char* ptr = bin.data();
        if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) ==
            CL_SUCCESS)
          if (FILE* fp = std::fopen(dump, "wb")) {
            std::fwrite(bin.data(), 1, size, fp);
            std::fclose(fp);
          }
      }
    }
    k_frame_ = make_kernel("frame_signal");
    k_power_ = make_kernel("hermitian_to_power");
    k_layout_ = make_kernel("filterbank_layout");
    k_gemm_ = make_kernel("gemm_nt");
    k_apply_ = make_kernel("apply_unary");
    k_logcol_ = make_kernel("log_into_column");
    k_outer_ = make_kernel("extended_outer_products");
    k_splice_ = make_kernel("splice");
    k_lpc_ = make_kernel("lpc_to_cepstrum");
    k_senone_ = make_kernel("senone_scores");
    k_senone_top_n_ = make_kernel("senone_scores_top_n");
    k_rank_ = make_kernel("rank_codebooks");
    k_sum_ranked_ = make_kernel("sum_ranked");
    k_floor_ = make_kernel("floor_densities");
  }

  cl_kernel make_kernel(const char* name) {
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program_, name, &err);
    check_cl(err, std::string("clCreateKernel(") + name + ")");
    return k;
  }

  // A scratch buffer of at least `bytes`, replaced by a larger one when it
  // is too small (a buffer released while queued kernels use it lives until
  // they finish).
  void grow_scratch(cl_mem& buffer, size_t& held, size_t bytes, const char* what) {
    if (bytes <= held) return;
    if (buffer) clReleaseMemObject(buffer);
    buffer = nullptr;
    held = 0;
    cl_int err = CL_SUCCESS;
    buffer = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check_cl(err, std::string("clCreateBuffer(") + what + ", " + std::to_string(bytes) + " bytes)");
    held = bytes;
  }

  // senone_scores_top_n's ranked lists.
  void ensure_ranked(size_t bytes) { grow_scratch(ranked_, ranked_bytes_, bytes, "ranked lists"); }

  // Scratch for one chunk of complex FFT output.
  void ensure_fft_bins(size_t bytes) {
    grow_scratch(fft_bins_, fft_bins_bytes_, bytes, "fft scratch");
  }

  // A batched real-to-complex plan for `rows` rows of `fft_size`, cached.
  // clFFT shares the compiled kernels between plans of the same length, so
  // a plan per row count is cheap; the cache is bounded for streams whose
  // chunk sizes vary.
  clfftPlanHandle fft_plan(int64_t rows, int fft_size) {
    const auto key = std::make_pair(rows, fft_size);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    ensure_clfft();
    if (plans_.size() >= 32) {
      for (auto& kv : plans_) clfftDestroyPlan(&kv.second);
      plans_.clear();
    }
    clfftPlanHandle plan = 0;
    size_t length = static_cast<size_t>(fft_size);
    check_clfft(clfftCreateDefaultPlan(&plan, context_, CLFFT_1D, &length),
                "clfftCreateDefaultPlan");
    try {
      size_t stride = 1;
      check_clfft(clfftSetPlanPrecision(plan, CLFFT_SINGLE), "clfftSetPlanPrecision");
      check_clfft(clfftSetLayout(plan, CLFFT_REAL, CLFFT_HERMITIAN_INTERLEAVED),
                  "clfftSetLayout");
      check_clfft(clfftSetResultLocation(plan, CLFFT_OUTOFPLACE),
                  "clfftSetResultLocation");
      check_clfft(clfftSetPlanBatchSize(plan, static_cast<size_t>(rows)),
                  "clfftSetPlanBatchSize");
      check_clfft(clfftSetPlanInStride(plan, CLFFT_1D, &stride), "clfftSetPlanInStride");
      check_clfft(clfftSetPlanOutStride(plan, CLFFT_1D, &stride), "clfftSetPlanOutStride");
      check_clfft(clfftSetPlanDistance(plan, length, length / 2 + 1),
                  "clfftSetPlanDistance");
      check_clfft(clfftBakePlan(plan, 1, &queue_, nullptr, nullptr), "clfftBakePlan");
    } catch (...) {
      clfftDestroyPlan(&plan);
      throw;
    }
    plans_.emplace(key, plan);
    return plan;
  }

  // Sets kernel arguments in order; each value's C++ type must be the cl_*
  // type matching the kernel's parameter.
  template <typename... Args>
  void set_args(cl_kernel k, const char* name, const Args&... args) {
    cl_uint index = 0;
    (set_arg(k, name, index++, args), ...);
  }

  template <typename T>
  void set_arg(cl_kernel k, const char* name, cl_uint index, const T& value) {
    check_cl(clSetKernelArg(k, index, sizeof(T), &value),
             std::string("clSetKernelArg(") + name + ", " + std::to_string(index) + ")");
  }

  void launch(cl_kernel k, const char* name, cl_uint dims, const size_t* global,
              const size_t* local) {
    check_cl(clEnqueueNDRangeKernel(queue_, k, dims, nullptr, global, local, 0, nullptr,
                                    nullptr),
             std::string("clEnqueueNDRangeKernel(") + name + ")");
  }

  void launch_1d(cl_kernel k, const char* name, size_t n) {
    // A fixed group size keeps the global size a multiple of it on drivers
    // without non-uniform work-groups; kernels check their index against n.
    const size_t local = 64;
    const size_t global = round_up(n, local);
    launch(k, name, 1, &global, &local);
  }

  // Kernel objects carry their arguments and the FFT scratch is shared, so
  // operations from different threads are serialised: each enqueues its
  // whole sequence under this lock (the in-order queue then keeps it whole).
  std::mutex mu_;
  std::mutex compose_mu_;                // spectral_bands' scratch
  SpectralBandsScratch bands_scratch_;
  std::mutex projection_mu_;  // guards projection_scratch_ (taken before compose_mu_ or mu_)
  SpectralBandsScratch projection_scratch_;
  cl_device_id device_;
  std::string label_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_ulong max_alloc_ = 0;
  bool has_fp64_ = false;
  size_t gemm_tile_ = 16;
  size_t frame_wg_ = 128;
  cl_ulong local_mem_ = 0;
  const bool use_fused_bands_ = opencl_fused_bands_from_env();
  std::map<int, cl_mem> twiddles_;  // per FFT size, see twiddles()

  cl_program program_ = nullptr;
  std::map<int, cl_kernel> k_bands_;  // the fused kernels by FFT size (fused_kernel())
  cl_mem layout_ = nullptr;           // their filterbank layout (spectral_bands.cl)
  cl_kernel k_frame_ = nullptr, k_power_ = nullptr, k_layout_ = nullptr, k_gemm_ = nullptr,
            k_apply_ = nullptr, k_logcol_ = nullptr, k_outer_ = nullptr, k_splice_ = nullptr,
            k_lpc_ = nullptr, k_senone_ = nullptr, k_senone_top_n_ = nullptr,
            k_rank_ = nullptr, k_sum_ranked_ = nullptr, k_floor_ = nullptr;

  std::map<std::pair<int64_t, int>, clfftPlanHandle> plans_;
  cl_mem fft_bins_ = nullptr;
  size_t fft_bins_bytes_ = 0;
  // senone_scores_top_n's ranked lists (rank_codebooks, sum_ranked).
  cl_mem ranked_ = nullptr;
  size_t ranked_bytes_ = 0;
  // GPUSPEECH_OPENCL_TOPN_RANKED=0: rank per senone even where codebooks
  // are shared (to compare the two paths in one build).
  const bool use_ranked_top_n_ = opencl_ranked_top_n_from_env();
};

}  // namespace

int opencl_device_count() {
  try {
    return static_cast<int>(enumerate_devices().size());
  } catch (const std::exception&) {
    return 0;
  }
}

BackendPtr make_opencl_backend(int device_id, bool gpu_only) {
  if (device_id < 0)
    throw BackendError("opencl: device-id must be >= 0, got " + std::to_string(device_id));
  std::vector<DeviceEntry> all = enumerate_devices();
  std::vector<DeviceEntry> usable;
  for (const DeviceEntry& d : all)
    if (!gpu_only || d.is_gpu) usable.push_back(d);
  if (usable.empty()) {
    if (gpu_only)
      throw BackendError("no OpenCL GPU device (found: " +
                         (all.empty() ? std::string("no devices") : list_labels(all, false)) + ")");
    throw BackendError("no OpenCL device (platforms exist but list no devices)");
  }
  if (static_cast<size_t>(device_id) >= usable.size())
    throw BackendError("opencl device-id " + std::to_string(device_id) +
                       " out of range: " + std::to_string(usable.size()) +
                       (gpu_only ? " GPU" : "") + " device(s) (" + list_labels(usable) +
                       ")");
  return BackendPtr(new OpenclBackend(usable[static_cast<size_t>(device_id)]));
}

}  // namespace gpuspeech
