// Device memory helpers of the CUDA search (built only with CUDA): owning
// arrays in device, page-locked and mapped host memory, and the error check
// that turns a CUDA status into a BackendError.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/backends/backend.h"

namespace gpuspeech {
namespace cuda_memory {

// A failed runtime call also stays behind as the thread's last error,
// which the next kernel launch's check (cudaGetLastError) would report as
// its own: one stream refused for lack of memory would fail the next
// stream on that thread. So the error is taken off before throwing, and
// cleanup code whose errors are ignored (destructors: freeing, destroying
// streams and graphs of a stream that was refused half made) takes its
// own off with forget_error().
inline void forget_error() { (void)cudaGetLastError(); }

inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError(std::string("cuda search: ") + call + " failed: " +
                       cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

// Device memory of n T's, freed on destruction.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) { resize(n); }
  ~DeviceArray() { release(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept : ptr_(other.ptr_), size_(other.size_) {
    other.ptr_ = nullptr;
    other.size_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = other.ptr_;
      size_ = other.size_;
      other.ptr_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }

  void resize(size_t n) {
    release();
    if (n > 0) check(cudaMalloc(reinterpret_cast<void**>(&ptr_), n * sizeof(T)), "cudaMalloc");
    size_ = n;
  }
  T* get() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (ptr_ != nullptr && cudaFree(ptr_) != cudaSuccess) forget_error();
    ptr_ = nullptr;
    size_ = 0;
  }
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory, so transfers are real asynchronous DMA.
template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  ~PinnedArray() { release(); }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;

  void resize(size_t n) {
    release();
    if (n > 0) check(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n * sizeof(T)), "cudaMallocHost");
    size_ = n;
  }
  T* get() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (ptr_ != nullptr && cudaFreeHost(ptr_) != cudaSuccess) forget_error();
    ptr_ = nullptr;
    size_ = 0;
  }
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory that kernels read and write in place (mapped
// into the device's address space): the word-end events and offers of a
// rescoring round, a few hundred small structs, cross the bus as the
// kernels touch them, with no copy operation to queue or wait for.
template <typename T>
class MappedArray {
 public:
  MappedArray() = default;
  ~MappedArray() { release(); }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;

  void resize(size_t n) {
    release();
    if (n == 0) return;
    check(cudaHostAlloc(reinterpret_cast<void**>(&host_), n * sizeof(T), cudaHostAllocMapped),
          "cudaHostAlloc (mapped)");
    size_ = n;
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0),
          "cudaHostGetDevicePointer");
  }
  T* host() const { return host_; }
  T* device() const { return device_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (host_ != nullptr && cudaFreeHost(host_) != cudaSuccess) forget_error();
    host_ = device_ = nullptr;
    size_ = 0;
  }
  T* host_ = nullptr;
  T* device_ = nullptr;
  size_t size_ = 0;
};

// A non-blocking CUDA stream for the length of a scope (uploads of shared
// resources): made by the constructor (BackendError if it cannot be),
// destroyed however the scope ends, an error of the destruction dropped.
class ScopedStream {
 public:
  ScopedStream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~ScopedStream() {
    if (cudaStreamDestroy(stream_) != cudaSuccess) forget_error();
  }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

template <typename T>
inline void upload(DeviceArray<T>& dst, const std::vector<T>& src, cudaStream_t stream) {
  dst.resize(src.size());
  if (!src.empty())
    check(cudaMemcpyAsync(dst.get(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice,
                          stream),
          "cudaMemcpyAsync (graph)");
}

}  // namespace cuda_memory
}  // namespace gpuspeech
