// See cuda_round_batcher.h.
#include "common/search/cuda_round_batcher.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "common/backend.h"

namespace gpuspeech {
using cuda_memory::check;
namespace {
constexpr int kDefaultLaneThreads = 512;
}  // namespace

std::shared_ptr<CudaRoundBatcher> CudaRoundBatcher::for_device(int device) {
  static std::mutex registry_mutex;
  static std::map<int, std::weak_ptr<CudaRoundBatcher>> registry;
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::shared_ptr<CudaRoundBatcher> b = registry[device].lock();
  if (!b) {
    b = std::make_shared<CudaRoundBatcher>(device);
    registry[device] = b;
  }
  return b;
}

CudaRoundBatcher::CudaRoundBatcher(int device) : device_(device) {
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  // A lane's block: 512 threads unless GPUSPEECH_CUDA_LANE_THREADS says
  // otherwise (for measuring: more threads finish a lane's round sooner,
  // fewer let more lanes share a multiprocessor).
  int wanted = kDefaultLaneThreads;
  if (const char* env = std::getenv("GPUSPEECH_CUDA_LANE_THREADS"); env != nullptr && std::atoi(env) > 0)
    wanted = std::atoi(env);
  threads_ = cuda::tp_lanes_round_threads(wanted);
  thread_ = std::thread([this] { launcher(); });
}

CudaRoundBatcher::~CudaRoundBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cuda_memory::forget_error();  // errors of cleanup are not the next launch's
}

void CudaRoundBatcher::run(const cuda::TpLaneRound& round) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) throw BackendError("cuda search: the round batcher has stopped");
  const uint64_t step = next_step_;
  waiting_.push_back(round);
  if (waiting_.size() == 1) work_.notify_one();
  done_[step & 1].wait(lock, [&] { return completed_step_ >= step; });
  if (error_step_ == step) throw BackendError(error_);
}

CudaRoundBatcher::Stats CudaRoundBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.threads = threads_;
  return s;
}

void CudaRoundBatcher::launcher() {
  const cudaError_t set = cudaSetDevice(device_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !waiting_.empty(); });
    if (waiting_.empty()) break;  // stopping, nothing left to run
    batch_.swap(waiting_);
    waiting_.clear();
    const uint64_t step = next_step_++;
    stats_.launches += 1;
    stats_.rounds += batch_.size();
    stats_.widest = std::max<uint32_t>(stats_.widest, static_cast<uint32_t>(batch_.size()));
    lock.unlock();
    std::string error;
    if (set != cudaSuccess) {
      error = std::string("cuda search: cudaSetDevice failed for the round batcher: ") +
              cudaGetErrorName(set);
    } else {
      try {
        error = launch(batch_.size());
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    lock.lock();
    if (!error.empty()) {
      error_ = error;
      error_step_ = step;
    }
    completed_step_ = step;
    done_[step & 1].notify_all();
  }
}

std::string CudaRoundBatcher::launch(size_t n) {
  if (host_rounds_.size() < n) {
    const size_t room = std::max<size_t>(n * 2, 64);
    host_rounds_.resize(room);
    device_rounds_.resize(room);
  }
  uint32_t bins = 1;
  for (size_t i = 0; i < n; ++i) {
    host_rounds_.get()[i] = batch_[i];
    bins = std::max(bins, batch_[i].bins);
  }
  check(cudaMemcpyAsync(device_rounds_.get(), host_rounds_.get(), n * sizeof(cuda::TpLaneRound),
                        cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (lane rounds)");
  check(cuda::tp_lanes_round(device_rounds_.get(), static_cast<int>(n), static_cast<int>(bins),
                             threads_, stream_),
        "tp_lanes_round");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (lane rounds)");
  return std::string();
}

}  // namespace gpuspeech
