// The CUDA DTW engine: templates uploaded once, per utterance one upload,
// one launch (kernels/cuda/dtw.cu), one download of the distances.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/backends/backend.h"
#include "common/dtw/dtw_engine.h"
#include "kernels/cuda/dtw.cuh"

namespace gpuspeech {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw BackendError(std::string("cuda dtw: ") + call + " failed: " + cudaGetErrorName(status) +
                       " (" + cudaGetErrorString(status) + ")");
}

// Device memory of n bytes, freed on destruction.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  ~DeviceBytes() {
    if (ptr_ && cudaFree(ptr_) != cudaSuccess) (void)cudaGetLastError();
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  // Grows to at least n bytes (contents are not kept).
  void reserve(size_t n) {
    if (n <= size_) return;
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    check(cudaMalloc(&ptr_, std::max<size_t>(n, 1)), "cudaMalloc");
    size_ = n;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

class CudaDtwEngine : public DtwEngine {
 public:
  CudaDtwEngine(const DtwOptions& options, int device_id) : options_(options) {
    options_.validate();
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw BackendError(std::string("cuda dtw: no usable CUDA device (") +
                         (e != cudaSuccess ? cudaGetErrorString(e) : "none found") + ")");
    if (device_id < 0 || device_id >= count)
      throw BackendError("cuda dtw: device-id " + std::to_string(device_id) + " out of range: " +
                         std::to_string(count) + " device(s)");
    device_ = device_id;
    check(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    device_name_ = prop.name;
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaDtwEngine() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    (void)cudaGetLastError();  // cleanup's errors are not the next launch's
  }

  const char* name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }
  int64_t max_template_frames() const override { return cuda::kDtwMaxTemplateFrames; }

  void set_templates(const PackedTemplates& t) override {
    if (t.count() < 1) throw std::invalid_argument("dtw: no templates");
    if (options_.distance == LocalDistance::kCepstral && t.dim < 2)
      throw std::invalid_argument("dtw: the cepstral distance needs >= 2 coefficients per frame");
    const int64_t longest = t.max_length();
    if (longest > cuda::kDtwMaxTemplateFrames)
      throw BackendError("cuda dtw: a template has " + std::to_string(longest) +
                         " frames; the device engine holds at most " +
                         std::to_string(cuda::kDtwMaxTemplateFrames));
    check(cudaSetDevice(device_), "cudaSetDevice");
    frames_.reserve(t.frames.size() * sizeof(float));
    offsets_.reserve(t.offsets.size() * sizeof(int64_t));
    out_.reserve(static_cast<size_t>(t.count()) * sizeof(float));
    check(cudaMemcpyAsync(frames_.as<float>(), t.frames.data(), t.frames.size() * sizeof(float),
                          cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync(templates)");
    check(cudaMemcpyAsync(offsets_.as<int64_t>(), t.offsets.data(),
                          t.offsets.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync(offsets)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    count_ = t.count();
    dim_ = t.dim;
    longest_ = longest;
  }

  std::vector<float> match(const float* utterance, int64_t frames) override {
    if (count_ < 1) throw std::logic_error("dtw: match() before set_templates()");
    if (frames < 1) throw std::invalid_argument("dtw: the utterance has no frames");
    check(cudaSetDevice(device_), "cudaSetDevice");
    const size_t bytes = static_cast<size_t>(frames) * dim_ * sizeof(float);
    utt_.reserve(bytes);
    check(cudaMemcpyAsync(utt_.as<float>(), utterance, bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync(utterance)");
    check(cuda::launch_dtw_match(utt_.as<float>(), frames, frames_.as<float>(),
                                 offsets_.as<int64_t>(), count_, dim_, longest_,
                                 options_.pattern == StepPattern::kItakura, options_.band,
                                 options_.distance == LocalDistance::kCepstral ? 1 : 0,
                                 options_.normalize, out_.as<float>(), stream_),
          "dtw kernel launch");
    std::vector<float> out(static_cast<size_t>(count_));
    check(cudaMemcpyAsync(out.data(), out_.as<float>(), out.size() * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync(distances)");
    check(cudaStreamSynchronize(stream_), "dtw kernel");
    return out;
  }

 private:
  DtwOptions options_;
  int device_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  DeviceBytes frames_, offsets_, out_, utt_;
  int64_t count_ = 0;
  int dim_ = 0;
  int64_t longest_ = 0;
};

}  // namespace

std::unique_ptr<DtwEngine> make_cuda_dtw_engine(const DtwOptions& options, int device_id) {
  return std::make_unique<CudaDtwEngine>(options, device_id);
}

}  // namespace gpuspeech
