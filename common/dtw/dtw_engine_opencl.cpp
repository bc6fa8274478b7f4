// The OpenCL DTW engine: its own context, queue and program (only
// kernels/opencl/dtw.cl, from the sources embedded for the backend), the
// templates uploaded once, per utterance one upload, one launch, one read.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/dtw/dtw_engine.h"
#include "kernels/opencl/opencl_kernels.h"

namespace gpuspeech {
namespace {

void check(cl_int err, const std::string& call) {
  if (err != CL_SUCCESS)
    throw BackendError("opencl dtw: " + call + " failed with OpenCL error " + std::to_string(err));
}

std::string device_text(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, &s[0], nullptr), "clGetDeviceInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
  return v;
}

// The devices of every platform in platform order (the numbering the
// OpenCL backend's device-id uses), GPUs only when asked.
std::vector<cl_device_id> list_devices(bool gpu_only) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0)
    throw BackendError("opencl dtw: no OpenCL platform");
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<cl_device_id> out;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    const cl_device_type type = gpu_only ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
    if (clGetDeviceIDs(p, type, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    check(clGetDeviceIDs(p, type, nd, ds.data(), nullptr), "clGetDeviceIDs");
    out.insert(out.end(), ds.begin(), ds.end());
  }
  return out;
}

const char* dtw_source() {
  for (int i = 0; i < opencl_kernels::kNumSources; ++i)
    if (std::strcmp(opencl_kernels::kSources[i].name, "dtw.cl") == 0)
      return opencl_kernels::kSources[i].text;
  throw BackendError("opencl dtw: dtw.cl is not embedded in this build");
}

class ClMem {
 public:
  ClMem() = default;
  ~ClMem() {
    if (mem_) clReleaseMemObject(mem_);
  }
  ClMem(const ClMem&) = delete;
  ClMem& operator=(const ClMem&) = delete;
  void reserve(cl_context ctx, size_t bytes) {
    if (bytes <= size_ && mem_) return;
    if (mem_) clReleaseMemObject(mem_);
    mem_ = nullptr;
    size_ = 0;
    cl_int err = CL_SUCCESS;
    mem_ = clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 4), nullptr, &err);
    check(err, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
    size_ = bytes;
  }
  cl_mem get() const { return mem_; }

 private:
  cl_mem mem_ = nullptr;
  size_t size_ = 0;
};

// The OpenCL objects, released in reverse order of creation; a member, so
// that a constructor that throws half-way still releases what it made.
struct ClHandles {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel itakura = nullptr, symmetric = nullptr;
  ClHandles() = default;
  ClHandles(const ClHandles&) = delete;
  ClHandles& operator=(const ClHandles&) = delete;
  ~ClHandles() {
    if (queue) clFinish(queue);
    if (itakura) clReleaseKernel(itakura);
    if (symmetric) clReleaseKernel(symmetric);
    if (program) clReleaseProgram(program);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

class OpenclDtwEngine : public DtwEngine {
 public:
  OpenclDtwEngine(const DtwOptions& options, int device_id, bool gpu_only) : options_(options) {
    options_.validate();
    const std::vector<cl_device_id> devices = list_devices(gpu_only);
    if (devices.empty())
      throw BackendError(gpu_only ? "opencl dtw: no OpenCL GPU device" : "opencl dtw: no OpenCL device");
    if (device_id < 0 || static_cast<size_t>(device_id) >= devices.size())
      throw BackendError("opencl dtw: device-id " + std::to_string(device_id) + " out of range: " +
                         std::to_string(devices.size()) + " device(s)");
    device_ = devices[static_cast<size_t>(device_id)];
    name_ = device_text(device_, CL_DEVICE_NAME);
    local_bytes_ = device_value<cl_ulong>(device_, CL_DEVICE_LOCAL_MEM_SIZE);
    max_wg_ = device_value<size_t>(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    const auto fp = device_value<cl_device_fp_config>(device_, CL_DEVICE_SINGLE_FP_CONFIG);
    cl_int err = CL_SUCCESS;
    cl_.context = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext(" + name_ + ")");
    cl_.queue = clCreateCommandQueue(cl_.context, device_, 0, &err);
    check(err, "clCreateCommandQueue");
    const char* src = dtw_source();
    cl_.program = clCreateProgramWithSource(cl_.context, 1, &src, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    // The host's sqrt is correctly rounded; ask the same of the device.
    const std::string build_opts =
        (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "-cl-fp32-correctly-rounded-divide-sqrt" : "";
    err = clBuildProgram(cl_.program, 1, &device_, build_opts.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t n = 0;
      std::string log;
      if (clGetProgramBuildInfo(cl_.program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS) {
        log.resize(n);
        clGetProgramBuildInfo(cl_.program, device_, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
      }
      throw BackendError("opencl dtw: building dtw.cl failed on " + name_ + " (error " +
                         std::to_string(err) + "):\n" + log);
    }
    cl_.itakura = clCreateKernel(cl_.program, "dtw_itakura", &err);
    check(err, "clCreateKernel(dtw_itakura)");
    cl_.symmetric = clCreateKernel(cl_.program, "dtw_symmetric", &err);
    check(err, "clCreateKernel(dtw_symmetric)");
  }
  ~OpenclDtwEngine() override {
    if (cl_.queue) clFinish(cl_.queue);  // before the buffers go
  }

  const char* name() const override { return "opencl"; }
  std::string device_name() const override { return name_; }
  int64_t max_template_frames() const override {
    // Four columns of the longest template plus one frame of up to 1024
    // values must fit in local memory.
    return static_cast<int64_t>((local_bytes_ / sizeof(float) - 1024) / 4);
  }

  void set_templates(const PackedTemplates& t) override {
    if (t.count() < 1) throw std::invalid_argument("dtw: no templates");
    if (options_.distance == LocalDistance::kCepstral && t.dim < 2)
      throw std::invalid_argument("dtw: the cepstral distance needs >= 2 coefficients per frame");
    if (t.dim > 1024)
      throw BackendError("opencl dtw: " + std::to_string(t.dim) +
                         " values per frame; the device engine takes at most 1024");
    const int64_t longest = t.max_length();
    if (longest > max_template_frames())
      throw BackendError("opencl dtw: a template has " + std::to_string(longest) +
                         " frames; " + name_ + " holds at most " +
                         std::to_string(max_template_frames()));
    frames_.reserve(cl_.context, t.frames.size() * sizeof(float));
    offsets_.reserve(cl_.context, t.offsets.size() * sizeof(cl_long));
    out_.reserve(cl_.context, static_cast<size_t>(t.count()) * sizeof(float));
    check(clEnqueueWriteBuffer(cl_.queue, frames_.get(), CL_TRUE, 0, t.frames.size() * sizeof(float),
                               t.frames.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer(templates)");
    static_assert(sizeof(cl_long) == sizeof(int64_t), "offsets are 64-bit on both sides");
    check(clEnqueueWriteBuffer(cl_.queue, offsets_.get(), CL_TRUE, 0, t.offsets.size() * sizeof(cl_long),
                               t.offsets.data(), 0, nullptr, nullptr),
          "clEnqueueWriteBuffer(offsets)");
    count_ = t.count();
    dim_ = t.dim;
    longest_ = longest;
  }

  std::vector<float> match(const float* utterance, int64_t frames) override {
    if (count_ < 1) throw std::logic_error("dtw: match() before set_templates()");
    if (frames < 1) throw std::invalid_argument("dtw: the utterance has no frames");
    const size_t bytes = static_cast<size_t>(frames) * dim_ * sizeof(float);
    utt_.reserve(cl_.context, bytes);
    check(clEnqueueWriteBuffer(cl_.queue, utt_.get(), CL_FALSE, 0, bytes, utterance, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer(utterance)");
    const bool itakura = options_.pattern == StepPattern::kItakura;
    cl_kernel k = itakura ? cl_.itakura : cl_.symmetric;
    const cl_long n = frames, cap = longest_;
    const cl_int dim = dim_, band = options_.band,
                 first = options_.distance == LocalDistance::kCepstral ? 1 : 0,
                 normalize = options_.normalize ? 1 : 0;
    const size_t local_floats = itakura ? 4 * static_cast<size_t>(cap) + dim : 3 * static_cast<size_t>(cap);
    cl_mem utt = utt_.get(), tpl = frames_.get(), off = offsets_.get(), out = out_.get();
    int a = 0;
    check(clSetKernelArg(k, a++, sizeof(cl_mem), &utt), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_long), &n), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_mem), &tpl), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_mem), &off), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_int), &dim), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_long), &cap), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_int), &band), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_int), &first), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_int), &normalize), "clSetKernelArg");
    check(clSetKernelArg(k, a++, sizeof(cl_mem), &out), "clSetKernelArg");
    check(clSetKernelArg(k, a++, local_floats * sizeof(float), nullptr), "clSetKernelArg(local)");
    // Whole warps/wavefronts for a typical column, within the device's limit.
    size_t local = static_cast<size_t>((longest_ + 31) / 32 * 32);
    local = std::min<size_t>({std::max<size_t>(local, 32), 256, max_wg_});
    const size_t global = local * static_cast<size_t>(count_);
    check(clEnqueueNDRangeKernel(cl_.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel(dtw)");
    std::vector<float> result(static_cast<size_t>(count_));
    check(clEnqueueReadBuffer(cl_.queue, out, CL_TRUE, 0, result.size() * sizeof(float), result.data(), 0,
                              nullptr, nullptr),
          "clEnqueueReadBuffer(distances)");
    return result;
  }

 private:
  DtwOptions options_;
  cl_device_id device_ = nullptr;
  std::string name_;
  cl_ulong local_bytes_ = 0;
  size_t max_wg_ = 1;
  ClHandles cl_;  // declared before the buffers: released after them
  ClMem frames_, offsets_, out_, utt_;
  int64_t count_ = 0;
  int dim_ = 0;
  int64_t longest_ = 0;
};

}  // namespace

std::unique_ptr<DtwEngine> make_opencl_dtw_engine(const DtwOptions& options, int device_id,
                                                  bool gpu_only) {
  return std::make_unique<OpenclDtwEngine>(options, device_id, gpu_only);
}

}  // namespace gpuspeech
