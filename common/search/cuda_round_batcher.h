// The batched search across streams (issue 14, docs/search.md "Batched
// search across streams"): one batcher per device gathers the closure
// rounds that every batched CudaSearcher on the device asks for and runs
// them together in one launch (kernels/cuda/token_passing.cuh): on sm_90
// each lane (stream) on its own cluster of blocks (tp_lanes_cluster_round),
// elsewhere in one cooperative grid whose phases walk the items of every
// lane at once (tp_lanes_round). Alone, each stream's frame is a chain of
// dependent phases whose grid-wide barriers cost ~48 µs of device time,
// however little it holds, and two streams' cooperative kernels do not
// share the device; in one launch the device holds many such chains.
//
// Continuous batching: a searcher's thread hands its round to run() and
// sleeps. With the cluster kernel two pipeline threads (each with half of
// 16 slots, a launch in flight on its own CUDA stream per slot) launch
// every round waiting as soon as the device has room, and watch the lanes
// in flight: each lane flags its own end in mapped memory, and the thread
// wakes that lane's stream then, not when its launch's slowest lane ends.
// The woken threads rescore their word ends on their own cores and come
// back for the next round while the device runs the rounds of others.
// GPUSPEECH_LANES_PIPELINE=0 gives the older shape: two launcher threads,
// each launching what waits and watching its own launch; without the
// cluster kernel one launcher waits for each launch to end. Nothing
// waits for a batch to fill, so a lone stream is not delayed by a timer,
// and a stream is never in two launches at once (its thread waits in
// run()), so its rounds keep their order.
//
// Every lane (stream) runs the same steps as the single-stream round on
// its own tables and counters: its results do not depend on what else is
// in the launch (the CUDA tests compare them with the CPU searcher's).
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/search/cuda_memory.h"
#include "kernels/cuda/token_passing.cuh"

namespace gpuspeech {

class Fiber;

class CudaRoundBatcher {
 public:
  // The batcher of `device`, made on first use and shared by every
  // searcher on it while any holds it.
  static std::shared_ptr<CudaRoundBatcher> for_device(int device);

  explicit CudaRoundBatcher(int device);
  ~CudaRoundBatcher();
  CudaRoundBatcher(const CudaRoundBatcher&) = delete;
  CudaRoundBatcher& operator=(const CudaRoundBatcher&) = delete;

  // Runs `round` in the next launch and returns once it has finished on
  // the device (its `out` written). The caller's own stream must have no
  // work pending that the round reads (scores, cleared tables). Throws
  // BackendError if the launch failed.
  void run(const cuda::TpLaneRound& round);
  // Blocks of each lane's cluster (the cluster kernel, which runs a lane's
  // round as the single-stream round kernel does); 0: the cooperative
  // lanes kernel runs them.
  int cluster() const { return cluster_; }

  struct Stats {
    uint64_t launches = 0;
    uint64_t rounds = 0;
    uint32_t widest = 0;    // the most rounds in one launch
    int blocks = 0;         // the cooperative lanes kernel's grid
    int cluster = 0;        // blocks of a lane's cluster; 0: the cooperative kernel ran
    int resident = 0;       // clusters the device holds at once (default histogram); 0: unknown
    // Blocks of a lane's cluster in launches made while the device was
    // loaded (0: every launch used `cluster`), and how many such launches.
    int loaded_cluster = 0;
    uint64_t loaded_launches = 0;
    double busy_s = 0.0;    // the launcher in launches (copy, kernel, wait)
    double waiting_s = 0.0;  // the launcher waiting for rounds
    double in_run_s = 0.0;   // streams' threads in run(), summed over them
    // in_run_s split by where a round was (summed over rounds): handed in
    // until a launch took it; taken until its lane's flag was seen (the
    // launch's copy and start, the wait for a free cluster, the lane's own
    // time, the scan that finds the flag); seen until its thread ran again.
    double until_launched_s = 0.0;
    double until_flagged_s = 0.0;
    double until_running_s = 0.0;
    // Launches and their busy time by width: 1, 2-7, 8-31, 32-127, 128+ rounds.
    static constexpr int kWidthBins = 5;
    uint64_t launches_by_width[kWidthBins] = {};
    double busy_by_width_s[kWidthBins] = {};
    // With GPUSPEECH_LANES_PROFILE=1 only: the lanes kernel's own counters
    // (cuda::kLaneProfile*: device time and items per phase, closure
    // passes, chained launches), summed over launches; all zero otherwise.
    uint64_t lanes_profile[cuda::kLaneProfileWords] = {};
  };
  Stats stats() const;
  // The sums over every batcher this process has had (for benchmarks,
  // whose searchers and batchers are gone when they report).
  static Stats totals();

 private:
  // GPUSPEECH_LANES_TIMELINE's host stamps (see timeline_path_ below).
  // Host times are CLOCK_REALTIME, ns.
  struct LaunchStamp {
    uint64_t launch;   // the descriptors' device address (TpLaneSpan::launch)
    uint32_t serial;   // TpLaneSpan::serial
    uint32_t lanes;
    int64_t taken_ns;   // its rounds taken from the waiting ones
    int64_t host_ns;    // before the descriptors' copy and the launch call
    int64_t called_ns;  // the launch call returned
  };
  // A lane's flag seen by the pipeline (PATH.<device>.seen). The flag
  // appeared after the slot's previous scan and before this one, so
  // scan_ns - prev_scan_ns bounds how late the scan found it, on the
  // host's clock alone.
  struct SeenStamp {
    uint64_t launch;
    uint32_t serial;
    uint32_t lane;
    int64_t host_ns;       // just before its thread was woken
    int64_t scan_ns;       // the scan of the slot that found it began
    int64_t prev_scan_ns;  // the slot's scan before (or its launch call's return)
  };
  // A round handed in by run(), and what its thread waits for.
  // Each has its own lock: its thread sleeps on it and the launcher wakes
  // it without the batcher's lock, so a woken thread does not queue again
  // for the lock that every stream's hand-in and the other launcher take.
  struct Ticket {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;  // under `mutex`
    // The waiting stream's fiber (common/engine/fiber_pool.h), or null: a
    // fiber is resumed instead of notified.
    Fiber* fiber = nullptr;
    std::string error;  // empty: the round ran
    // For Stats: when a launch took the round (written under mutex_) and
    // when its end was seen (under `mutex`, before `done`).
    std::chrono::steady_clock::time_point taken, flagged;
  };
  // Marks `t` done and wakes its thread. After this the launcher must not
  // touch the ticket: its thread may return from run() at once.
  static void wake(Ticket* t, const std::string& error);
  // One launch in flight: its CUDA stream, its rounds, their descriptors
  // in pinned memory and on the device. The pipeline thread serves every
  // slot (or each slot has its own launcher thread); the slots' launches
  // overlap on the device.
  struct Slot {
    cudaStream_t stream = nullptr;
    std::vector<cuda::TpLaneRound> batch;
    std::vector<Ticket*> tickets;
    cuda_memory::PinnedArray<cuda::TpLaneRound> host_rounds;
    cuda_memory::DeviceArray<cuda::TpLaneRound> device_rounds;
    cuda_memory::DeviceArray<unsigned char> scratch;  // tp_lanes_scratch_bytes
    // Lanes' completion flags (the cluster kernel with early_): lane i of
    // the launch stores `serial` into done[i] when its round is over.
    cuda_memory::MappedArray<unsigned int> done;
    unsigned int serial = 0;
    int cluster = 0;  // blocks of each lane's cluster in this launch (cluster kernel)
    std::vector<size_t> ready;  // wait_lanes' scratch
    // The pipeline's (GPUSPEECH_LANES_PIPELINE) view of the slot: a launch
    // of it is on the device, its lanes not yet flagged, when it began.
    bool busy = false;
    size_t left = 0;
    uint32_t idle_scans = 0;
    std::chrono::steady_clock::time_point began;
    int64_t taken_ns = 0;  // GPUSPEECH_LANES_TIMELINE: when launch() began
    int64_t scan_ns = 0, prev_scan_ns = 0;  // the pipeline's scans of the slot
    std::vector<SeenStamp> seen;  // and the flags seen, merged when its launch ends
  };
  void launcher(Slot& slot);
  // One thread for every slot (the default with the cluster kernel and
  // completion flags; GPUSPEECH_LANES_PIPELINE=0 for launchers): it
  // launches the waiting rounds on a free slot as soon as the device has
  // room for them, and watches the flags of every lane in flight, waking
  // each lane's thread as its flag appears. No launch waits for another's slowest lane
  // (docs/search-lanes-plan.md, S10).
  // Each pipeline thread serves the slots [first_slot, last_slot).
  void pipeline(size_t first_slot, size_t last_slot);
  // Moves the waiting rounds into `slot` (under mutex_) and returns the
  // histogram size to launch them with.
  int take_waiting(Slot& slot);
  // Launches the rounds taken into `slot` (`set`: the thread's
  // cudaSetDevice result) and, with `wait`, waits for their lanes' flags;
  // returns the error for the rounds' threads, empty on success. After a
  // failure nothing of the launch is left on the device.
  std::string start_launch(Slot& slot, int bins, cudaError_t set, bool wait);
  // Adds an ended launch of `slot` to the statistics (and the launch log);
  // returns with `lock` (on mutex_, unlocked on entry) held.
  void record_launch(const Slot& slot, double seconds, const std::string& error,
                     std::unique_lock<std::mutex>& lock);
  // Launches slot.batch and waits; throws BackendError on failure.
  void launch(Slot& slot, int bins);
  void launch_part(Slot& slot, size_t first, size_t n, int bins);
  // With completion flags: wakes each lane's thread as its flag appears
  // (its ticket then leaves slot.tickets), then waits for the launch to
  // end; throws BackendError if it failed.
  void wait_lanes(Slot& slot);

  const int device_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // the launchers: rounds are waiting, or stop
  std::vector<cuda::TpLaneRound> waiting_;  // rounds for the next launch
  std::vector<Ticket*> waiting_tickets_;    // and their threads' tickets
  bool stop_ = false;
  Stats stats_;
  std::atomic<uint64_t> in_run_ns_{0};  // Stats::in_run_s, added without the lock
  std::atomic<uint64_t> until_launched_ns_{0}, until_flagged_ns_{0}, until_running_ns_{0};

  int blocks_ = 0;  // the cooperative lanes kernel's grid (all resident)
  int min_width_ = 1;  // rounds a launcher waits for (at most 20 ms), for measuring
  // Lanes a launch at most (GPUSPEECH_LANES_PART, for measuring: with
  // launches in flight it caps how many lanes share the device at once).
  int part_width_ = cuda::kMaxLanesPerLaunch;
  // Blocks of each lane's cluster (tp_lanes_cluster_round): 8, or what
  // GPUSPEECH_LANES_CLUSTER says (1-16), where the device allows; 0: the
  // cooperative lanes kernel (tp_lanes_round).
  int cluster_ = 0;
  int resident_ = 0;  // Stats::resident
  // The pipeline's launches use clusters of loaded_cluster_ blocks instead
  // when more than loaded_at_ lanes would be in flight with them
  // (GPUSPEECH_LANES_CLUSTER_LOADED, default 4, 0 for one size;
  // GPUSPEECH_LANES_LOADED_AT, default the resident clusters of
  // cluster_): a lane on 8 blocks ends sooner, but twice as many lanes on
  // 4 blocks run at once, which is the most the device gets done once its
  // 8-block clusters are all taken.
  int loaded_cluster_ = 0;
  size_t loaded_at_ = 0;
  int cluster_bins_ = 1;  // the largest histogram of the frames taken so far (under mutex_)
  // The cluster kernel's lanes flag their end and their threads go on
  // before the launch's slowest lane ends (GPUSPEECH_LANES_EARLY, default
  // 1; 0: every thread waits for its whole launch).
  bool early_ = false;
  // GPUSPEECH_LANES_PROFILE: the kernel's counters, read after each launch
  // (device time by phase for the cooperative kernel; lane time by phase,
  // summed over lanes, for the cluster kernel, whose slots' readings are
  // merged by maximum since the counters only grow).
  cuda_memory::DeviceArray<unsigned long long> profile_;
  std::FILE* launch_log_ = nullptr;  // GPUSPEECH_LANES_LOG
  // GPUSPEECH_LANES_TIMELINE=PATH (cluster kernel, for measuring): every
  // lane's span on the device (cuda::TpLaneSpan, device memory; at most
  // GPUSPEECH_LANES_TIMELINE_SPANS of them) and every launch's host time,
  // written to PATH.<device>.spans and PATH.<device>.launches when the
  // batcher ends (tests/bench/lanes_timeline.py reads them).
  std::string timeline_path_;
  cuda_memory::DeviceArray<cuda::TpLaneSpan> timeline_spans_;
  cuda_memory::DeviceArray<unsigned int> timeline_count_;
  std::mutex timeline_mutex_;
  std::vector<LaunchStamp> timeline_launches_;  // under timeline_mutex_
  std::vector<SeenStamp> timeline_seen_;        // under timeline_mutex_
  void write_timeline();
  // Launches in flight at once: 2 with the cluster kernel
  // (GPUSPEECH_LANES_IN_FLIGHT, 1-4); 1 with the cooperative one, whose
  // launch fills the device.
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::thread> threads_;
  // The pipeline: lanes in flight at most before it holds rounds back
  // (GPUSPEECH_LANES_ROOM; default four times the resident clusters), and
  // the rounds waiting, readable without the lock.
  bool pipeline_ = false;
  size_t room_ = 0;
  std::atomic<size_t> waiting_count_{0};
  std::atomic<size_t> lanes_in_flight_{0};  // launched, not yet flagged (every pipeline thread)
};

}  // namespace gpuspeech
