// See cuda_round_batcher.h.
#include "common/search/cuda_round_batcher.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <utility>

#include "common/backends/backend.h"
#include "common/engine/fiber_pool.h"
#include "common/search/token_passing.h"
#include "common/seconds_since.h"

namespace gpuspeech {
using cuda_memory::check;
namespace {
int64_t realtime_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// Blocks of the lanes kernel per multiprocessor (256 threads each). Its 94
// registers a thread leave room for two. Compiled for 3, 4, 6 or 8 blocks
// (80 down to 32 registers; 6 and 8 spill to the stack) it gave the same
// speed at 256 streams on the H100, 272-287x (docs/benchmarks.md): more
// resident warps do not help.
constexpr int kLaneBlocksPerSm = 2;
// Blocks of a lane's cluster (the cluster kernel, sm_90). When a lane's
// round was the whole cost, wider was faster (256 streams on the H100, 4 /
// 8 / 12 / 16 blocks: 486 / 607 / 616 / 625x); since lanes wait on each
// other less, how many run at once counts more: at 6 blocks an SM, 8
// blocks keep 92 clusters resident against 16 blocks' 42, and gave 1 474.8x
// against 1 353.8x (means of 3 alternating runs on the H200; docs/
// benchmarks.md, "Clusters of 8 and the pipeline launcher"). 16 is the
// largest cluster the hardware allows (a non-portable size: the device is
// asked, and a smaller one taken if it refuses).
constexpr int kLaneClusterBlocks = 8;
// Blocks of a lane's cluster once the device is loaded: more than its
// resident clusters of kLaneClusterBlocks would be in flight. On the H200
// at 256 streams, clusters of 4 throughout gave +5.5 % (2 259-2 324x
// against 2 140-2 197x), but -22 to -30 % at 8, 32 and 64 streams, where
// the device has room and a lane's own time decides (docs/benchmarks.md,
// "Cluster size by load").
constexpr int kLaneClusterBlocksLoaded = 4;
// Blocks an SM the cluster kernel is compiled for, by capping its
// registers (tp_set_lanes_min_blocks): at 256 streams on the H100, 4 (the
// compiler's 56 registers, 28 clusters resident) / 5 (35) / 6 (42) gave
// 1 057 and 1 121x / 1 133 and 1 171x / 1 237 and 1 206x; each lane-round
// takes longer (188 / 204 / 223 µs) but more run at once (docs/benchmarks.md,
// "A lock per ticket, and more lanes resident").
constexpr int kLaneMinBlocks = 6;
// The pipeline's threads, and the lanes it keeps in flight at most per
// cluster the device holds at once. With one thread and room for twice the
// resident clusters, a round at 512 streams waited 1.0-1.3 ms to be
// launched; two threads and four times the clusters halve that wait, but
// the round then waits about as much longer on the device: +2.7 to +5 %
// at 256, 512 and 1 024 streams, in 5 of 7 alternating pairs on the H200
// (docs/benchmarks.md, "Where a round waits").
constexpr int kLanePipelines = 2;
constexpr int kLaneRoomPerResident = 4;

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  const int n = std::atoi(v);
  return n >= lo && n <= hi ? n : fallback;
}

std::mutex registry_mutex;
std::map<int, std::weak_ptr<CudaRoundBatcher>> registry;  // the batcher of each device
std::mutex totals_mutex;
CudaRoundBatcher::Stats totals_of_gone;  // of the batchers destroyed

void add_stats(CudaRoundBatcher::Stats& to, const CudaRoundBatcher::Stats& s) {
  to.launches += s.launches;
  to.rounds += s.rounds;
  to.widest = std::max(to.widest, s.widest);
  to.blocks = std::max(to.blocks, s.blocks);
  to.cluster = std::max(to.cluster, s.cluster);
  to.resident = std::max(to.resident, s.resident);
  to.loaded_cluster = std::max(to.loaded_cluster, s.loaded_cluster);
  to.loaded_launches += s.loaded_launches;
  to.busy_s += s.busy_s;
  to.waiting_s += s.waiting_s;
  to.in_run_s += s.in_run_s;
  to.until_launched_s += s.until_launched_s;
  to.until_flagged_s += s.until_flagged_s;
  to.until_running_s += s.until_running_s;
  for (int w = 0; w < cuda::kLaneProfileWords; ++w) to.lanes_profile[w] += s.lanes_profile[w];
  for (int b = 0; b < CudaRoundBatcher::Stats::kWidthBins; ++b) {
    to.launches_by_width[b] += s.launches_by_width[b];
    to.busy_by_width_s[b] += s.busy_by_width_s[b];
  }
}
}  // namespace

CudaRoundBatcher::Stats CudaRoundBatcher::totals() {
  Stats sum;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (const auto& entry : registry)
      if (std::shared_ptr<CudaRoundBatcher> b = entry.second.lock()) add_stats(sum, b->stats());
  }
  std::lock_guard<std::mutex> lock(totals_mutex);
  add_stats(sum, totals_of_gone);
  return sum;
}

std::shared_ptr<CudaRoundBatcher> CudaRoundBatcher::for_device(int device) {
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
  int cooperative = 0;
  check(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device_),
        "cudaDeviceGetAttribute");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_),
        "cudaDeviceGetAttribute");
  min_width_ = env_int("GPUSPEECH_LANES_MIN_WIDTH", 1, 1, cuda::kMaxLanesPerLaunch);
  part_width_ = env_int("GPUSPEECH_LANES_PART", cuda::kMaxLanesPerLaunch, 1, cuda::kMaxLanesPerLaunch);
  blocks_ = cooperative != 0
                ? cuda::tp_lanes_round_blocks(sms, kLaneBlocksPerSm, cuda::kMaxLanesPerLaunch)
                : 0;
  if (blocks_ <= 0) {
    cuda_memory::forget_error();
    throw BackendError("cuda search: device " + std::to_string(device_) +
                       " cannot run the batched search (no cooperative launch)");
  }
  const char* profile = std::getenv("GPUSPEECH_LANES_PROFILE");
  const char* log = std::getenv("GPUSPEECH_LANES_LOG");
  const bool profiling = (profile != nullptr && std::string(profile) == "1") ||
                         (log != nullptr && *log != '\0');
  // A cluster of blocks per lane where the device has clusters (sm_90):
  // each lane's round runs on its own cluster with cluster barriers, so no
  // lane waits for another's phases (docs/search-lanes-plan.md, S1). The
  // cooperative kernel (one grid over all lanes) stays for older devices
  // and for GPUSPEECH_LANES_CLUSTER=0. Their profiles differ: device time
  // by phase for the cooperative kernel, lane time summed over lanes for
  // the cluster kernel.
  const int wanted = env_int("GPUSPEECH_LANES_CLUSTER", kLaneClusterBlocks, 0, 16);
  cuda::tp_set_lanes_min_blocks(env_int("GPUSPEECH_LANES_MIN_BLOCKS", kLaneMinBlocks, 0, 6));
  cluster_ = wanted > 0 ? cuda::tp_lanes_cluster_size(wanted) : 0;
  // For the statistics: how many lanes can run at once (the default
  // histogram's shared memory; registers usually decide).
  if (cluster_ > 0) resident_ = cuda::tp_lanes_clusters_resident(cluster_, SearchOptions().histogram_bins);
  if (log != nullptr && *log != '\0') {
    // One line a step: rounds, device ns and closure passes, then each
    // phase's ns (tp_lanes_round's profile; for measuring).
    launch_log_ = std::fopen((std::string(log) + "." + std::to_string(device_)).c_str(), "w");
  }
  if (profiling) {
    profile_.resize(cuda::kLaneProfileWords);
    check(cudaMemset(profile_.get(), 0, cuda::kLaneProfileWords * sizeof(unsigned long long)),
          "cudaMemset (lanes profile)");
  }
  if (const char* path = std::getenv("GPUSPEECH_LANES_TIMELINE"); path != nullptr && *path != '\0' && cluster_ > 0) {
    const int spans = env_int("GPUSPEECH_LANES_TIMELINE_SPANS", 1 << 22, 1, 1 << 26);
    timeline_spans_.resize(static_cast<size_t>(spans));
    timeline_count_.resize(1);
    check(cudaMemset(timeline_count_.get(), 0, sizeof(unsigned int)), "cudaMemset (lanes timeline)");
    check(cuda::tp_set_lanes_timeline(timeline_spans_.get(), static_cast<unsigned int>(spans),
                                      timeline_count_.get()),
          "tp_set_lanes_timeline");
    timeline_path_ = path;
  }
  // (GPUSPEECH_LANES_LOG's lines are one launch's each only with one in
  // flight; with more they mix the launches that overlapped.)
  early_ = cluster_ > 0 && env_int("GPUSPEECH_LANES_EARLY", 1, 0, 1) == 1;
  pipeline_ = early_ && env_int("GPUSPEECH_LANES_PIPELINE", 1, 0, 1) == 1;
  room_ = static_cast<size_t>(env_int("GPUSPEECH_LANES_ROOM", kLaneRoomPerResident * std::max(resident_, 1), 1, 1 << 20));
  // Smaller clusters under load, for the pipeline (which counts the lanes
  // in flight): the largest size the device takes up to the one asked for.
  if (pipeline_) {
    const int loaded = env_int("GPUSPEECH_LANES_CLUSTER_LOADED", kLaneClusterBlocksLoaded, 0, 16);
    if (loaded > 0 && loaded < cluster_) {
      loaded_cluster_ = cuda::tp_lanes_cluster_size(loaded);
      if (loaded_cluster_ >= cluster_) loaded_cluster_ = 0;
      loaded_at_ = static_cast<size_t>(env_int("GPUSPEECH_LANES_LOADED_AT", std::max(resident_, 1), 0, 1 << 20));
    }
  }
  // The pipeline's slots are launches in flight on their own CUDA streams
  // (GPUSPEECH_LANES_IN_FLIGHT up to 32, default 16), shared out among its
  // threads.
  const int in_flight = pipeline_      ? env_int("GPUSPEECH_LANES_IN_FLIGHT", 16, 1, 32)
                        : cluster_ > 0 ? env_int("GPUSPEECH_LANES_IN_FLIGHT", 2, 1, 4)
                                       : 1;
  for (int k = 0; k < in_flight; ++k) {
    auto slot = std::make_unique<Slot>();
    const cudaError_t st = cudaStreamCreateWithFlags(&slot->stream, cudaStreamNonBlocking);
    if (st != cudaSuccess) {
      for (auto& made : slots_) cudaStreamDestroy(made->stream);
      if (launch_log_ != nullptr) std::fclose(launch_log_);
      cuda_memory::forget_error();
      throw BackendError(std::string("cuda search: cudaStreamCreate failed for the round batcher: ") +
                         cudaGetErrorName(st));
    }
    slots_.push_back(std::move(slot));
  }
  if (pipeline_) {
    // GPUSPEECH_LANES_PIPELINES threads share the slots, each serving its
    // own share: one thread's scans, launches and wake-ups are each
    // round's serial path, and at 256 streams one thread makes 160 000
    // wake-ups a second.
    const size_t threads = std::min<size_t>(
        slots_.size(), static_cast<size_t>(env_int("GPUSPEECH_LANES_PIPELINES", kLanePipelines, 1, 8)));
    for (size_t k = 0; k < threads; ++k) {
      const size_t first = k * slots_.size() / threads, last = (k + 1) * slots_.size() / threads;
      threads_.emplace_back([this, first, last] { pipeline(first, last); });
    }
  } else {
    for (auto& slot : slots_) threads_.emplace_back([this, s = slot.get()] { launcher(*s); });
  }
}

CudaRoundBatcher::~CudaRoundBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> lock(totals_mutex);
    add_stats(totals_of_gone, stats());
  }
  if (!timeline_path_.empty()) write_timeline();
  for (auto& slot : slots_)
    if (slot->stream != nullptr) cudaStreamDestroy(slot->stream);
  if (launch_log_ != nullptr) std::fclose(launch_log_);
  cuda_memory::forget_error();  // errors of cleanup are not the next launch's
}

void CudaRoundBatcher::write_timeline() {
  // (A measurement: failures here only lose the files.)
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  unsigned int count = 0;
  cudaMemcpy(&count, timeline_count_.get(), sizeof count, cudaMemcpyDeviceToHost);
  const size_t n = std::min<size_t>(count, timeline_spans_.size());
  std::vector<cuda::TpLaneSpan> spans(n);
  if (n > 0) cudaMemcpy(spans.data(), timeline_spans_.get(), n * sizeof(cuda::TpLaneSpan), cudaMemcpyDeviceToHost);
  cuda::tp_set_lanes_timeline(nullptr, 0, nullptr);
  const std::string base = timeline_path_ + "." + std::to_string(device_);
  if (std::FILE* f = std::fopen((base + ".spans").c_str(), "wb")) {
    if (n > 0) std::fwrite(spans.data(), sizeof(cuda::TpLaneSpan), n, f);
    std::fclose(f);
  }
  std::lock_guard<std::mutex> lock(timeline_mutex_);
  if (std::FILE* f = std::fopen((base + ".launches").c_str(), "wb")) {
    if (!timeline_launches_.empty())
      std::fwrite(timeline_launches_.data(), sizeof(LaunchStamp), timeline_launches_.size(), f);
    std::fclose(f);
  }
  if (std::FILE* f = std::fopen((base + ".seen").c_str(), "wb")) {
    if (!timeline_seen_.empty()) std::fwrite(timeline_seen_.data(), sizeof(SeenStamp), timeline_seen_.size(), f);
    std::fclose(f);
  }
  std::fprintf(stderr, "lanes timeline: %zu spans (%u lanes ran), %zu launches, %zu flags seen -> %s.{spans,launches,seen}\n",
               n, count, timeline_launches_.size(), timeline_seen_.size(), base.c_str());
  cuda_memory::forget_error();
}

void CudaRoundBatcher::run(const cuda::TpLaneRound& round) {
  const auto t0 = std::chrono::steady_clock::now();
  Ticket ticket;
  // On a fiber (common/engine/fiber_pool.h) the wait gives the thread to
  // the worker's other streams instead of sleeping.
  ticket.fiber = current_fiber();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) throw BackendError("cuda search: the round batcher has stopped");
    waiting_.push_back(round);
    waiting_tickets_.push_back(&ticket);
    waiting_count_.store(waiting_.size(), std::memory_order_release);
    if (waiting_.size() == 1 || waiting_.size() == static_cast<size_t>(min_width_)) work_.notify_one();
  }
  // The ticket lives here until its launcher has set `done` under the
  // ticket's lock and let it go (wake): the launcher touches no ticket
  // after that.
  if (ticket.fiber != nullptr) {
    suspend_fiber();
  } else {
    std::unique_lock<std::mutex> lock(ticket.mutex);
    ticket.cv.wait(lock, [&] { return ticket.done; });
  }
  const auto t1 = std::chrono::steady_clock::now();
  const auto ns = [](std::chrono::steady_clock::duration d) {
    return static_cast<uint64_t>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
  };
  in_run_ns_.fetch_add(ns(t1 - t0), std::memory_order_relaxed);
  if (ticket.error.empty()) {  // (a failed launch may not have set them)
    until_launched_ns_.fetch_add(ns(ticket.taken - t0), std::memory_order_relaxed);
    until_flagged_ns_.fetch_add(ns(ticket.flagged - ticket.taken), std::memory_order_relaxed);
    until_running_ns_.fetch_add(ns(t1 - ticket.flagged), std::memory_order_relaxed);
  }
  if (!ticket.error.empty()) throw BackendError(ticket.error);
}

void CudaRoundBatcher::wake(Ticket* t, const std::string& error) {
  // Notified under the ticket's lock: once the lock is let go the thread
  // may see `done`, return and destroy the ticket, its condition variable
  // with it.
  const auto now = std::chrono::steady_clock::now();
  if (t->fiber != nullptr) {
    t->flagged = now;
    t->error = error;
    resume_fiber(t->fiber);  // from here the ticket may be gone
    return;
  }
  std::lock_guard<std::mutex> lock(t->mutex);
  t->flagged = now;
  t->error = error;
  t->done = true;
  t->cv.notify_one();
}

CudaRoundBatcher::Stats CudaRoundBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.in_run_s = 1e-9 * static_cast<double>(in_run_ns_.load(std::memory_order_relaxed));
  s.until_launched_s = 1e-9 * static_cast<double>(until_launched_ns_.load(std::memory_order_relaxed));
  s.until_flagged_s = 1e-9 * static_cast<double>(until_flagged_ns_.load(std::memory_order_relaxed));
  s.until_running_s = 1e-9 * static_cast<double>(until_running_ns_.load(std::memory_order_relaxed));
  s.blocks = blocks_;
  s.cluster = cluster_;
  s.resident = resident_;
  s.loaded_cluster = loaded_cluster_;
  return s;
}

int CudaRoundBatcher::take_waiting(Slot& slot) {
  slot.batch.swap(waiting_);
  waiting_.clear();
  slot.tickets.swap(waiting_tickets_);
  waiting_tickets_.clear();
  waiting_count_.store(0, std::memory_order_release);
  const auto now = std::chrono::steady_clock::now();
  for (Ticket* t : slot.tickets) t->taken = now;
  stats_.launches += 1;
  stats_.rounds += slot.batch.size();
  stats_.widest = std::max<uint32_t>(stats_.widest, static_cast<uint32_t>(slot.batch.size()));
  // A prune-only round carries no frame (its histogram is the one its
  // lane began in an earlier launch, maybe another slot's): the largest
  // histogram any lane has begun, kept here under the lock.
  for (const cuda::TpLaneRound& r : slot.batch)
    if (r.num_frames > 0) cluster_bins_ = std::max(cluster_bins_, r.frames[0].bins);
  return cluster_bins_;
}

void CudaRoundBatcher::launcher(Slot& slot) {
  const cudaError_t set = cudaSetDevice(device_);
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const Clock::time_point idle = Clock::now();
    work_.wait(lock, [&] { return stop_ || !waiting_.empty(); });
    if (min_width_ > 1)  // measuring wide launches (GPUSPEECH_LANES_MIN_WIDTH)
      work_.wait_for(lock, std::chrono::milliseconds(20),
                     [&] { return stop_ || waiting_.size() >= static_cast<size_t>(min_width_); });
    const Clock::time_point begin = Clock::now();
    stats_.waiting_s += std::chrono::duration<double>(begin - idle).count();
    if (waiting_.empty()) {
      if (stop_) break;  // stopping, nothing left to run
      continue;          // another launcher took them
    }
    const int bins = take_waiting(slot);
    slot.cluster = cluster_;
    lock.unlock();
    const std::string error = start_launch(slot, bins, set, early_);
    const double busy = std::chrono::duration<double>(Clock::now() - begin).count();
    // The rounds' threads, woken before the statistics below take the lock.
    for (Ticket* t : slot.tickets)
      if (t != nullptr) wake(t, error);  // null: woken by its lane's flag (wait_lanes)
    slot.tickets.clear();
    record_launch(slot, busy, error, lock);
  }
}

std::string CudaRoundBatcher::start_launch(Slot& slot, int bins, cudaError_t set, bool wait) {
  if (set != cudaSuccess)
    return std::string("cuda search: cudaSetDevice failed for the round batcher: ") + cudaGetErrorName(set);
  try {
    launch(slot, bins);
    if (wait) wait_lanes(slot);
  } catch (const std::exception& e) {
    // Without a wait after each part, a part launched before the failure
    // may still run: no thread hears of the error (and frees its lane's
    // tables) while its lane is on the device.
    if (early_ && cudaStreamSynchronize(slot.stream) != cudaSuccess) cuda_memory::forget_error();
    return e.what();
  }
  return std::string();
}

void CudaRoundBatcher::record_launch(const Slot& slot, double seconds, const std::string& error,
                                     std::unique_lock<std::mutex>& lock) {
  // The kernel's profile (GPUSPEECH_LANES_PROFILE / _LOG; one slot then),
  // read before the lock is taken, so that streams handing in rounds do
  // not wait for the copy.
  unsigned long long words[cuda::kLaneProfileWords];
  const bool profiled =
      profile_.get() != nullptr && error.empty() &&
      cudaMemcpy(words, profile_.get(), sizeof words, cudaMemcpyDeviceToHost) == cudaSuccess;
  lock.lock();
  stats_.busy_s += seconds;
  if (profiled) {
    const uint64_t* before = stats_.lanes_profile;  // the sums up to the last launch
    if (launch_log_ != nullptr) {
      uint64_t ns = 0;
      for (int k = 0; k < cuda::kLanePhases; ++k)
        ns += words[cuda::kLaneProfileNs + k] - before[cuda::kLaneProfileNs + k];
      std::fprintf(launch_log_, "%zu %llu %llu", slot.batch.size(), static_cast<unsigned long long>(ns),
                   words[cuda::kLaneProfilePasses] - before[cuda::kLaneProfilePasses]);
      for (int k = 0; k < cuda::kLanePhases; ++k)
        std::fprintf(launch_log_, " %llu", words[cuda::kLaneProfileNs + k] - before[cuda::kLaneProfileNs + k]);
      std::fprintf(launch_log_, "\n");
    }
    // The words only grow; with launches in flight another launch may
    // have stored a later reading already.
    for (int k = 0; k < cuda::kLaneProfileWords; ++k)
      stats_.lanes_profile[k] = std::max<uint64_t>(stats_.lanes_profile[k], words[k]);
  }
  const size_t w = slot.batch.size();
  const int bin = w < 2 ? 0 : w < 8 ? 1 : w < 32 ? 2 : w < 128 ? 3 : 4;
  stats_.launches_by_width[bin] += 1;
  stats_.busy_by_width_s[bin] += seconds;
}

void CudaRoundBatcher::launch(Slot& slot, int bins) {
  // At most kMaxLanesPerLaunch lanes a launch (or GPUSPEECH_LANES_PART):
  // more run one launch after another within the step.
  const size_t all = slot.batch.size();
  if (!timeline_path_.empty()) slot.taken_ns = realtime_ns();
  if (early_) {
    // A flag per lane of the whole batch (the slot's last launch has
    // ended: wait_lanes waited for its stream).
    if (slot.done.size() < all) {
      const size_t room = std::max<size_t>(all, 2 * slot.done.size());
      slot.done.resize(room);
      std::fill(slot.done.host(), slot.done.host() + room, 0u);
    }
    if (++slot.serial == 0) slot.serial = 1;  // 0 is the flags' initial value
  }
  const size_t part = static_cast<size_t>(part_width_);
  for (size_t first = 0; first < all; first += part) {
    const size_t n = std::min<size_t>(all - first, part);
    launch_part(slot, first, n, bins);
  }
}

void CudaRoundBatcher::launch_part(Slot& slot, size_t first, size_t n, int bins) {
  // Without a wait after each part (completion flags), the next part must
  // not refill the descriptors before the last part's copy has run.
  if (early_ && first > 0) check(cudaStreamSynchronize(slot.stream), "cudaStreamSynchronize (lane rounds)");
  if (slot.host_rounds.size() < n) {
    const size_t room = std::min<size_t>(std::max<size_t>(n * 2, 64), cuda::kMaxLanesPerLaunch);
    slot.host_rounds.resize(room);
    slot.device_rounds.resize(room);
    if (cluster_ == 0) slot.scratch.resize(cuda::tp_lanes_scratch_bytes(static_cast<int>(room)));
  }
  const int64_t copy_ns = timeline_path_.empty() ? 0 : realtime_ns();
  std::copy(slot.batch.begin() + static_cast<std::ptrdiff_t>(first),
            slot.batch.begin() + static_cast<std::ptrdiff_t>(first + n), slot.host_rounds.get());
  check(cudaMemcpyAsync(slot.device_rounds.get(), slot.host_rounds.get(), n * sizeof(cuda::TpLaneRound),
                        cudaMemcpyHostToDevice, slot.stream),
        "cudaMemcpyAsync (lane rounds)");
  if (cluster_ > 0) {
    check(cuda::tp_lanes_cluster_round(slot.device_rounds.get(), static_cast<int>(n), slot.cluster, bins,
                                       slot.stream, profile_.get(),
                                       early_ ? slot.done.device() + first : nullptr, slot.serial),
          "tp_lanes_cluster_round");
    if (!timeline_path_.empty()) {
      const LaunchStamp stamp{reinterpret_cast<uint64_t>(slot.device_rounds.get()), slot.serial,
                              static_cast<uint32_t>(n), slot.taken_ns, copy_ns, realtime_ns()};
      slot.scan_ns = stamp.called_ns;  // no flag of this launch before its call returned
      std::lock_guard<std::mutex> lock(timeline_mutex_);
      timeline_launches_.push_back(stamp);
    }
    // With flags the parts run back to back on the slot's stream; the
    // launcher watches their lanes (wait_lanes).
    if (early_) return;
  } else {
    check(cuda::tp_lanes_round(slot.device_rounds.get(), static_cast<int>(n), slot.scratch.get(), blocks_,
                               slot.stream, profile_.get()),
          "tp_lanes_round");
  }
  check(cudaStreamSynchronize(slot.stream), "cudaStreamSynchronize (lane rounds)");
}

void CudaRoundBatcher::pipeline(size_t first_slot, size_t last_slot) {
  const cudaError_t set = cudaSetDevice(device_);
  using Clock = std::chrono::steady_clock;
  const size_t mine = last_slot - first_slot;
  size_t busy = 0;  // this thread's slots with a launch on the device
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  // Lanes launched and not yet flagged, over every pipeline thread.
  const auto landed = [&](size_t n) { lanes_in_flight_.fetch_sub(n, std::memory_order_relaxed); };
  for (;;) {
    // Launch what waits, on a free slot, while the device has room: the
    // clusters beyond the resident ones start as others end, so `room_`
    // only keeps launches from growing narrow when the device is full.
    if (waiting_count_.load(std::memory_order_acquire) > 0 && busy < mine &&
        lanes_in_flight_.load(std::memory_order_relaxed) < room_) {
      Slot* slot = nullptr;
      for (size_t k = first_slot; k < last_slot; ++k)
        if (!slots_[k]->busy) {
          slot = slots_[k].get();
          break;
        }
      lock.lock();
      if (waiting_.empty()) {  // (a stale count)
        lock.unlock();
        continue;
      }
      const int bins = take_waiting(*slot);
      slot->cluster = cluster_;
      if (loaded_cluster_ > 0 &&
          lanes_in_flight_.load(std::memory_order_relaxed) + slot->batch.size() > loaded_at_) {
        slot->cluster = loaded_cluster_;
        stats_.loaded_launches += 1;
      }
      lock.unlock();
      slot->began = Clock::now();
      const std::string error = start_launch(*slot, bins, set, false);
      if (!error.empty()) {
        for (Ticket* t : slot->tickets) wake(t, error);
        slot->tickets.clear();
        continue;
      }
      slot->busy = true;
      slot->left = slot->tickets.size();
      slot->idle_scans = 0;
      lanes_in_flight_.fetch_add(slot->left, std::memory_order_relaxed);
      ++busy;
      continue;
    }
    if (busy == 0) {
      lock.lock();
      const Clock::time_point idle = Clock::now();
      if (!stop_ && !waiting_.empty())
        // Rounds wait, but other pipeline threads' lanes fill the room:
        // they wake no one as their lanes land, so look again shortly.
        work_.wait_for(lock, std::chrono::microseconds(50));
      else
        work_.wait(lock, [&] { return stop_ || !waiting_.empty(); });
      stats_.waiting_s += std::chrono::duration<double>(Clock::now() - idle).count();
      const bool done = stop_ && waiting_.empty();
      lock.unlock();
      if (done) break;
      continue;
    }
    // One scan of every lane in flight: wake the threads of those that
    // flagged their end (read with acquire order: the kernel fenced the
    // lane's `out` and tables first), free the slots whose launch ended.
    const auto wake_flagged = [&](Slot& slot) {
      const unsigned int* done = slot.done.host();
      bool woke = false;
      for (size_t i = 0; i < slot.tickets.size(); ++i) {
        Ticket* t = slot.tickets[i];
        if (t == nullptr || __atomic_load_n(done + i, __ATOMIC_ACQUIRE) != slot.serial) continue;
        if (!timeline_path_.empty())
          slot.seen.push_back({reinterpret_cast<uint64_t>(slot.device_rounds.get()), slot.serial,
                               static_cast<uint32_t>(i), realtime_ns(), slot.scan_ns, slot.prev_scan_ns});
        wake(t, std::string());
        slot.tickets[i] = nullptr;  // its thread owns it again
        --slot.left;
        landed(1);
        woke = true;
      }
      return woke;
    };
    for (size_t k = first_slot; k < last_slot; ++k) {
      Slot& slot = *slots_[k];
      if (!slot.busy) continue;
      if (!timeline_path_.empty()) {
        slot.prev_scan_ns = slot.scan_ns;
        slot.scan_ns = realtime_ns();
      }
      // Asking the driver costs a lock the streams' threads also take:
      // once every lane has flagged (the launch's last blocks may still be
      // running), or every 32 scans without news (a failed launch ends
      // without flags).
      if (wake_flagged(slot)) slot.idle_scans = 0;
      if (slot.left > 0 && ++slot.idle_scans % 32 != 0) continue;
      const cudaError_t q = cudaStreamQuery(slot.stream);
      if (q == cudaErrorNotReady) continue;
      // The flags of lanes that ended between the scan and the query.
      if (q == cudaSuccess && slot.left > 0) wake_flagged(slot);
      std::string error;
      if (q != cudaSuccess) {
        error = std::string("cuda search: a batched launch failed: ") + cudaGetErrorName(q);
        cuda_memory::forget_error();
      } else if (slot.left > 0) {
        error = "cuda search: " + std::to_string(slot.left) +
                " lane(s) of a batched round ended without their completion flag";
      }
      for (Ticket* t : slot.tickets)
        if (t != nullptr) wake(t, error);
      slot.tickets.clear();
      landed(slot.left);
      slot.left = 0;
      slot.busy = false;
      --busy;
      const double seconds = std::chrono::duration<double>(Clock::now() - slot.began).count();
      if (!slot.seen.empty()) {
        std::lock_guard<std::mutex> stamps(timeline_mutex_);
        timeline_seen_.insert(timeline_seen_.end(), slot.seen.begin(), slot.seen.end());
        slot.seen.clear();
      }
      record_launch(slot, seconds, error, lock);
      lock.unlock();
    }
  }
}

void CudaRoundBatcher::wait_lanes(Slot& slot) {
  // Lane i of the launch is slot.tickets[i] (the parts' flags lie end to
  // end in slot.done). The flags are read with acquire order: the kernel
  // fenced the lane's `out` and tables before storing its flag.
  const unsigned int* done = slot.done.host();
  const size_t n = slot.tickets.size();
  size_t left = n;
  int idle_scans = 0;
  bool ended = false;  // the slot's stream has nothing left to run
  while (left > 0) {
    slot.ready.clear();
    for (size_t i = 0; i < n; ++i)
      if (slot.tickets[i] != nullptr && __atomic_load_n(done + i, __ATOMIC_ACQUIRE) == slot.serial)
        slot.ready.push_back(i);
    if (!slot.ready.empty()) {
      for (size_t i : slot.ready) {
        wake(slot.tickets[i], std::string());
        slot.tickets[i] = nullptr;  // its thread owns it again
      }
      left -= slot.ready.size();
      idle_scans = 0;
      continue;
    }
    if (ended) break;  // a lane ended without its flag, or the launch failed
    // Asking the driver costs a lock the streams' threads also take: every
    // 32 empty scans only. A failed launch ends the stream without flags.
    if (++idle_scans % 32 == 0 && cudaStreamQuery(slot.stream) != cudaErrorNotReady) ended = true;
  }
  check(cudaStreamSynchronize(slot.stream), "cudaStreamSynchronize (lane rounds)");
  if (left > 0)
    throw BackendError("cuda search: " + std::to_string(left) +
                       " lane(s) of a batched round ended without their completion flag");
}

}  // namespace gpuspeech
