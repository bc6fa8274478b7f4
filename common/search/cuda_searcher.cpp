// Host side of the CUDA searcher: device memory, the per-frame launch
// sequence, the one wait per frame, reruns, word-record transfer and
// garbage collection. See cuda_searcher.h and kernels/cuda/token_passing.cuh.
#include "common/search/cuda_searcher.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/backends/backend.h"
#include "common/backends/backend_registry.h"
#include "common/backends/cuda_stream_wait.h"
#include "common/search/lm_rescorer.h"
#include "common/search/search_arithmetic.h"
#include "common/search/cuda_lm_rescoring.h"
#include "common/search/cuda_memory.h"
#include "common/search/cuda_round_batcher.h"
#include "common/search/cuda_search_graph.h"
#include "common/seconds_since.h"
#include "kernels/cuda/token_passing.cuh"

namespace gpuspeech {
using cuda_memory::check;
using cuda_memory::DeviceArray;
using cuda_memory::MappedArray;
using cuda_memory::PinnedArray;
using cuda_memory::upload;
namespace {

static_assert(sizeof(cuda::TpToken) == sizeof(SearchToken), "token layouts differ");
static_assert(offsetof(cuda::TpToken, cost) == offsetof(SearchToken, cost), "token layouts differ");
static_assert(offsetof(cuda::TpToken, record) == offsetof(SearchToken, record),
              "token layouts differ");
static_assert(offsetof(cuda::TpToken, hist) == offsetof(SearchToken, history),
              "token layouts differ");

// Frames of host scores uploaded per block.
constexpr int64_t kScoreBlockFrames = 256;

// Closure passes queued per frame to begin with; then as many as the
// deepest closure so far needed (a frame that needs more runs again).
constexpr int kInitialPassesPerBatch = 2;
// Word records one frame may stage to begin with (each slot of staging).
constexpr size_t kInitialStagingRecords = size_t{1} << 14;
// Frames a rescoring round chains behind its own by default (when the
// caller has their scores; GPUSPEECH_CUDA_CHAIN=N sets N, 0 none, at most
// cuda::kMaxChainedFrames). A stream in launches of its own gains from
// four: a launch and a wait for every four frames instead of every one,
// +7-11 % for a stream alone and +6 % for 8 such streams (H200, en-us,
// LibriVox; docs/benchmarks.md, "Chains of several frames a launch").
// Batched streams stay at one: there the device is shared by hundreds of
// lanes and longer lanes gained nothing (level at 32 and 64 streams,
// -4.5 % at 256, -1.5 % at 512), though 8 batched streams gained 12 %.
constexpr int kDefaultChainedFramesAlone = 4;
constexpr int kDefaultChainedFramesBatched = 1;
// State-table entries a stream starts with: 2^16 entries hold frames that
// touch up to 32 768 states, at about 80 bytes an entry (token_passing.cuh);
// more where pruning keeps more tokens. A frame's emitting step and closure
// touch about four states per live token, and a table holds a frame that
// touches at most half of it, so 8 entries per token of max_active. On the
// en-us LibriVox search at max-active 30 000 the tables grew to 2^18
// entries, which this gives from the start: each doubling frees device
// memory (a wait for the whole device, behind every other stream's launch)
// and runs the frame again, and at 256 streams the doublings took half of
// the streams' search time (docs/benchmarks.md).
constexpr uint32_t kInitialTableEntries = uint32_t{1} << 16;
constexpr uint64_t kTableEntriesPerActiveToken = 8;
constexpr uint32_t kMaxInitialTableEntries = uint32_t{1} << 20;
constexpr uint32_t kMaxTableEntries = uint32_t{1} << 30;

// Rescoring rounds (run_frame_rescoring) run as CUDA graphs with a fixed
// number of closure passes; a round whose closure has not settled after
// them is continued by a graph of more passes (exact: the passes are a
// Jacobi iteration, and the changed list carries over). The batch size is
// chosen from the passes rounds have needed, by a cost model: a pass that
// finds nothing still costs its kernel nodes, a continuation costs a host
// wait and a launch. Estimates for an H100; only speed depends on them.
constexpr double kNodeMicros = 2.0;      // an idle kernel node in a graph
constexpr double kContinueMicros = 20.0;  // a host wait plus a graph launch
constexpr int kInitialRoundPasses = 4;   // even: see RoundPolicy
constexpr int kMaxRoundPasses = 64;      // largest batch (and histogram bin)
constexpr int kPolicyInterval = 64;      // settled rounds between re-choices
constexpr int kMaxCachedRoundGraphs = 32;
// With fused rounds (tp_round: one cooperative launch whose closure stops
// when the closure settles) a batch costs only the passes it runs, so it is
// made large enough that continuations are rare. Even (see RoundPolicy).
constexpr int kFusedClosurePasses = 64;
// LM histories a stream's device table starts with (word ends rescored on
// the device); it doubles when full, the frame run again. LibriVox's
// utterances outgrew 4 096 once a stream (256 frames run again at 256
// streams, 2026-11-29), so it starts at 16 384 (512 KiB a stream).
constexpr uint32_t kInitialLmHistories = 1u << 14;
// log2 of the word-end memo's entries (TpLm): a frame asks for a few
// hundred (history, word) pairs, most of them the last frame's, so 4 096
// entries (64 KiB a stream) rarely collide.
constexpr int kLmMemoBits = 12;

// Batch size and pruning choice for one kind of round (emitting rounds and
// offer rounds differ: the emitting step changes thousands of tokens, the
// offers a few hundred).
struct RoundPolicy {
  // Passes a settled round needed (changing passes + the one that found
  // nothing), bin kMaxRoundPasses for that many or more; decays by halves.
  std::vector<double> needs = std::vector<double>(kMaxRoundPasses + 1, 0.0);
  double rounds = 0.0;
  double last_rounds = 0.0;  // rounds that ended their frame (no events)
  int since_choice = 0;
  // Even, so that a continuation starts on the parity the batch ended on
  // (pass p reads changed[p % 2]).
  int passes = kInitialRoundPasses;
  // Whether the round's graph ends with (gated) pruning; if not, a frame
  // that ends with this kind of round runs a separate pruning graph.
  bool prune = false;

  void note(int needed, bool last, double pass_micros, double prune_micros) {
    needs[static_cast<size_t>(std::min(std::max(needed, 1), kMaxRoundPasses))] += 1.0;
    rounds += 1.0;
    if (last) last_rounds += 1.0;
    if (++since_choice < kPolicyInterval) return;
    since_choice = 0;
    double best_cost = 0.0;
    for (int p = 2; p <= kMaxRoundPasses; p += 2) {
      double cost = 0.0;
      for (int n = 1; n <= kMaxRoundPasses; ++n) {
        if (needs[n] == 0.0) continue;
        const int launches = (n + p - 1) / p;
        cost += needs[n] * (launches * p * pass_micros + (launches - 1) * kContinueMicros);
      }
      if (p == 2 || cost < best_cost) {
        best_cost = cost;
        passes = p;
      }
    }
    // In the graph: prune_micros every round; separate: a wait, a launch
    // and the same nodes, for the rounds that end their frame.
    prune = last_rounds * (kContinueMicros + prune_micros) > rounds * prune_micros;
    if (rounds > 4096.0) {  // follow the recent rounds
      for (double& c : needs) c *= 0.5;
      rounds *= 0.5;
      last_rounds *= 0.5;
    }
  }
};

struct CountersAndChain {
  cuda::TpCounters counters;
  cuda::TpChain chain;  // rescoring with chained frames
};
// tp_lanes_round writes the two back to back.
static_assert(offsetof(CountersAndChain, chain) == sizeof(cuda::TpCounters),
              "counters and chain are not back to back");

// Threads a live token gets in the emitting step (tp_set_emit_group), per
// device: decided once per process, by the first search made on the device
// before any of its kernels runs, and never changed after. The kernels read
// the width from constant memory; changed while another stream's kernel
// ran, it could reach that kernel's blocks at different times and give them
// different shares of the tokens.
//
// A batched first search takes 2, a stream in launches of its own 8 (the
// kernels' default). A token's emitting arcs are mostly its self-loop and
// the next state's, and with the device full of lanes a wider group's idle
// threads cost: on the H200, 2 against 8 gave +6.1 % at 8 batched streams,
// +5 % at 64, +4.8 % at 256 and +4.7 % at 384 (4: +2 %). A stream alone
// has the device to itself and is 5-7 % faster with 8 (docs/benchmarks.md,
// "Runs of minutes, words checked, and two threads a token in the emitting
// step"). GPUSPEECH_EMIT_GROUP=W (1-32, a power of two) sets W on every
// device, for measuring. The results do not depend on the width.
constexpr int kBatchedEmitGroup = 2;
constexpr int kAloneEmitGroup = 8;
void decide_emit_group(int device, bool batched) {
  static std::mutex mutex;
  static std::set<int> decided;
  std::lock_guard<std::mutex> lock(mutex);
  if (!decided.insert(device).second) return;
  int width = batched ? kBatchedEmitGroup : kAloneEmitGroup;
  if (const char* env = std::getenv("GPUSPEECH_EMIT_GROUP")) {
    const int w = std::atoi(env);
    if (w >= 1 && w <= 32 && (w & (w - 1)) == 0) width = w;
  }
  check(cuda::tp_set_emit_group(width), "tp_set_emit_group");
  // The copy is on the legacy stream, which the searches' non-blocking
  // streams do not wait for.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// The error of a frame whose epsilon closure did not settle within the
// search's pass limit (SearchOptions::max_epsilon_passes).
std::runtime_error closure_unsettled(int passes, int64_t frame) {
  return std::runtime_error("search: epsilon closure did not settle after " + std::to_string(passes) +
                            " passes at frame " + std::to_string(frame) +
                            " (a negative-cost epsilon cycle in the graph?)");
}
}  // namespace

struct CudaSearcher::Impl {
  int device = 0;
  std::string device_name;
  int sm_count = 1;
  cudaStream_t stream = nullptr;

  // The graph on the device: shared with every searcher on the same graph
  // and device when the caller gave it, else this searcher's own upload.
  std::shared_ptr<const CudaSearchGraph> device_graph;
  bool has_heavy = false;       // any state with more than kHeavyDegree arcs

  // The state tables (token_passing.cuh): `table_entries` entries, a
  // power of two, doubled when a frame overflows them.
  uint32_t table_entries = 0;
  size_t heavy_bound = 1;  // heavy tokens a pass can list (heavy virtual states)
  DeviceArray<cuda::TpEntry> entries;  // the state table (TpEntry)
  DeviceArray<int32_t> touched;
  DeviceArray<uint32_t> histogram;
  DeviceArray<cuda::TpToken> changed[2], live[2], heavy;
  DeviceArray<cuda::TpWinner> winners;
  DeviceArray<cuda::TpRecord> staging;
  // The word-lattice pass only (TpState::winner_acoustic and its
  // siblings; empty otherwise): the acoustic part of each token's cost,
  // beside the lists that hold tokens, the winner log and the records.
  bool keep_acoustic = false;
  DeviceArray<float> live_acoustic[2], heavy_acoustic, winner_acoustic, staging_acoustic;
  MappedArray<float> lane_staging_acoustic;  // batched: beside lane_staging
  PinnedArray<float> host_acoustic;          // beside host_records
  // The counters and the chain's outcome side by side, so that one copy
  // brings both back.
  DeviceArray<CountersAndChain> counters;
  PinnedArray<CountersAndChain> host_counters;
  // Frames the last launch ran to their end beyond its own (chained and
  // pruned there): their final counters, in order, done_next the first
  // the host has not finished yet.
  cuda::TpCounters done_frames[cuda::kMaxChainedFrames];
  int done_count = 0;
  int done_next = 0;
  // Set when the last launch's last chained frame ran its rounds (not its
  // pruning): its counters and first round id, for when its turn comes.
  bool chained = false;
  cuda::TpCounters chained_counters{};
  uint32_t chained_round_id = 0;
  // Staging slots (TpState::staging): one per frame a launch may write
  // records for, 1 + chain_length; staging_slot is the next frame's.
  int staging_slots = 2;
  int staging_slot = 0;
  // Frames a round may chain (kDefaultChainedFrames, GPUSPEECH_CUDA_CHAIN;
  // 0 turns chaining off, for comparing in one build, docs/benchmarks.md).
  int chain_length = 1;
  // Floats from one frame's scores to the next's (run_frame's next_rows).
  int64_t row_stride = 0;
  PinnedArray<cuda::TpRecord> host_records;
  DeviceArray<float> scores;
  // Word-end rescoring only:
  DeviceArray<int32_t> word_ends;
  MappedArray<cuda::TpEvent> events;
  DeviceArray<cuda::TpEvent> event_stage;  // batched only: TpState::event_stage
  // Grows the event buffer and, for batched lanes, its device stage with it
  // (the kernel's copy-out assumes they hold the same count); with word
  // ends rescored on the device, the stage (which the rescoring reads) and
  // the offers it writes.
  void resize_events(size_t n) {
    events.resize(n);
    if (batcher || lm_on_device) event_stage.resize(n);
    if (lm_on_device) {
      lm_offers.resize(n);
      lm_unsorted.resize(n);
      lm_misses.resize(n);
      upload_lm();
    }
  }
  // Word-end rescoring on the device (docs/search-lanes-plan.md, S8 step
  // 5): both LMs (shared by every stream on the device), this stream's
  // history table, the offers, and the TpLm the kernels read them through.
  bool lm_on_device = false;
  std::shared_ptr<const CudaLmRescoring> lm_rescoring;
  std::unique_ptr<CudaLmHistoryTable> lm_table;
  DeviceArray<cuda::TpLm> lm;
  DeviceArray<cuda::TpOffer> lm_offers, lm_unsorted;
  DeviceArray<cuda::TpLmMiss> lm_misses;
  DeviceArray<unsigned long long> lm_memo_keys;  // TpLm's memo
  DeviceArray<uint2> lm_memo_values;
  DeviceArray<int32_t> lm_map;  // a grown table's renaming
  // The table's words on the host (refresh_history_words), and the host's
  // view of both LMs for lm_end_delta.
  bool lm_words_stale = true;
  std::vector<int32_t> lm_full_words, lm_pruned_words, lm_lengths;
  LmHistoryTable lm_host_table;
  LmRescoringView lm_host_view;
  int32_t lm_full_end = -1, lm_pruned_end = -1;
  // A TpLm changes only when the table or the offers move.
  void upload_lm() {
    cuda::TpLm v;
    v.view = lm_rescoring->view();
    v.table = lm_table->view();
    v.offers = lm_offers.get();
    v.unsorted = lm_unsorted.get();
    v.misses = lm_misses.get();
    v.memo_keys = lm_memo_keys.get();
    v.memo_values = lm_memo_values.get();
    v.memo_bits = kLmMemoBits;
    if (lm.size() == 0) lm.resize(1);
    check(cudaMemcpyAsync(lm.get(), &v, sizeof(v), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (lm)");
    sync();  // `v` is on this stack
  }
  // Forgets the memo's word ends (their history ids change with the table).
  void clear_lm_memo() {
    check(cudaMemsetAsync(lm_memo_keys.get(), 0xFF, lm_memo_keys.size() * sizeof(unsigned long long), stream),
          "cudaMemsetAsync (lm memo)");
    stream_pending = true;
  }
  MappedArray<cuda::TpOffer> offers;
  std::vector<WordEndEvent> event_list;  // host scratch, kept between frames
  std::vector<WordEndOffer> offer_list;
  uint32_t round_id = 0;  // the last round id handed out
  RoundPolicy emit_policy, offer_policy;
  // Captured round graphs by (head, passes, prune, chained passes, chained
  // frames); they bake in the buffers of `round_graphs_state` and are
  // dropped when one moves.
  std::map<std::tuple<int, int, bool, int, int>, cudaGraphExec_t> round_graphs;
  cuda::TpState round_graphs_state{};
  int slots = 1;
  bool rescoring = false;
  // The tables were replaced since the last attempt (nothing to clear).
  bool tables_fresh = false;
  uint32_t num_arcs = 0;

  int live_in = 0;
  uint32_t live_count = 0;
  // Records of the last frame on their way to host_records (copied after
  // the frame's wait, appended to the store at the next one).
  uint32_t pending_records = 0;
  // False from queuing that copy until a wait covers it.
  bool records_landed = true;
  // Time waiting for the device this utterance (SearchStats::device_wait_seconds).
  double wait_seconds = 0.0;
  // And in growing buffers and collecting garbage (SearchStats).
  double growth_seconds = 0.0;
  double collect_seconds = 0.0;
  // Adds the time until it ends to `*to`, and leaves the device waits in
  // between out of wait_seconds (they are part of that section).
  class Section {
   public:
    Section(Impl& m, double* to)
        : m_(m), to_(to), waited_(m.wait_seconds), t0_(std::chrono::steady_clock::now()) {}
    ~Section() {
      m_.wait_seconds = waited_;
      *to_ += seconds_since(t0_);
    }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

   private:
    Impl& m_;
    double* to_;
    double waited_;
    std::chrono::steady_clock::time_point t0_;
  };
  int passes_per_batch = kInitialPassesPerBatch;
  int passes_needed = 0;  // the most any frame has needed
  int blocks = 1;  // grid size of the list kernels
  // Grid size of the fused round kernel (tp_round); 0 = a kernel launch
  // per step and closure pass (no cooperative launch, or
  // GPUSPEECH_CUDA_CLOSURE=passes).
  int round_blocks = 0;
  // The batched search: this stream's rounds run as a lane of its
  // device's batcher (one launch for the rounds of every stream on the
  // device) instead of launches of its own. Its counters come back
  // through lane_out. The lane kernel ends its closure when it settles,
  // as the fused round kernel does.
  std::shared_ptr<CudaRoundBatcher> batcher;
  MappedArray<CountersAndChain> lane_out;
  // A lane's word records go straight to host memory (no copy or wait of
  // its own per frame: its only wait is the batcher's), in place of
  // `staging`.
  MappedArray<cuda::TpRecord> lane_staging;
  // Work queued on `stream` that a lane's next round may read (scores,
  // cleared tables): the round waits for it first.
  bool stream_pending = false;
  bool fused_rounds() const { return round_blocks > 0 || batcher != nullptr; }

  // The frame's parameters: written on the host, copied to the device by
  // the frame's first operation. 1 + kMaxChainedFrames: [1 ..] are the
  // next frames' when a round chains them (rescoring, fused rounds),
  // copied with [0] in one transfer.
  PinnedArray<cuda::TpFrame> host_frame;
  DeviceArray<cuda::TpFrame> frame;

  // The emitting frame's whole sequence as one CUDA graph (launching ~20
  // small kernels one by one costs more than the work of a small search).
  // Re-captured when what it bakes in changes: the pass count or buffers.
  cudaGraphExec_t frame_graph = nullptr;
  int graph_passes = 0;
  const void* graph_staging = nullptr;
  const void* graph_staging_acoustic = nullptr;
  size_t graph_staging_size = 0;
  const void* graph_table = nullptr;

  cuda::TpGraph graph() const { return device_graph->view(slots, rescoring); }
  cuda::TpState state() {
    cuda::TpState s;
    s.entries = entries.get();
    s.table_mask = table_entries - 1;
    s.table_shift = 32u - static_cast<uint32_t>(log2_entries());
    s.table_limit = table_entries / 2;
    s.touched = touched.get();
    s.changed[0] = changed[0].get();
    s.changed[1] = changed[1].get();
    s.heavy = heavy.get();
    s.live[0] = live[0].get();
    s.live[1] = live[1].get();
    s.changed_capacity = static_cast<uint32_t>(changed[0].size());
    s.heavy_capacity = static_cast<uint32_t>(heavy.size());
    s.live_capacity = static_cast<uint32_t>(live[0].size());
    s.winners = winners.get();
    s.winner_capacity = static_cast<uint32_t>(winners.size());
    s.staging = batcher ? lane_staging.device() : staging.get();
    s.staging_capacity = staging_slot_records();
    s.histogram = histogram.get();
    s.counters = &counters.get()->counters;
    s.rescoring = rescoring;
    s.events = rescoring ? events.device() : nullptr;
    s.event_stage = rescoring && (batcher || lm_on_device) ? event_stage.get() : nullptr;
    s.event_capacity = static_cast<uint32_t>(events.size());
    s.word_ends = rescoring ? word_ends.get() : nullptr;
    s.word_end_capacity = static_cast<uint32_t>(word_ends.size());
    s.offers = lm_on_device ? lm_offers.get() : rescoring ? offers.device() : nullptr;
    s.chain = rescoring ? &counters.get()->chain : nullptr;
    s.lm = lm_on_device ? lm.get() : nullptr;
    s.live_acoustic[0] = keep_acoustic ? live_acoustic[0].get() : nullptr;
    s.live_acoustic[1] = keep_acoustic ? live_acoustic[1].get() : nullptr;
    s.heavy_acoustic = keep_acoustic ? heavy_acoustic.get() : nullptr;
    s.winner_acoustic = keep_acoustic ? winner_acoustic.get() : nullptr;
    s.staging_acoustic = !keep_acoustic ? nullptr
                         : batcher    ? lane_staging_acoustic.device()
                                      : staging_acoustic.get();
    return s;
  }
  int log2_entries() const {
    int b = 0;
    while ((uint32_t{1} << b) < table_entries) ++b;
    return b;
  }
  // Fresh state tables of `count` entries (a power of two, at least 4),
  // empty; the previous frame's live list (live[live_in], live_count
  // tokens) is carried over, so that a frame can run again on them. The
  // captured graphs baked in the old buffers and are dropped.
  void allocate_tables(uint32_t count) {
    Section timed(*this, &growth_seconds);
    sync();
    drop_graph();
    drop_round_graphs();
    table_entries = count;
    const size_t n = count;
    entries.resize(n);
    touched.resize(n);
    // A frame that did not overflow touched at most half the table, so
    // its lists (of distinct entries each) hold at most that many, and it
    // keeps at most what it touched.
    changed[0].resize(n / 2);
    changed[1].resize(n / 2);
    heavy.resize(std::max<size_t>(1, std::min(n / 2, heavy_bound)));
    DeviceArray<cuda::TpToken> old_live = std::move(live[live_in]);
    live[0].resize(n / 2);
    live[1].resize(n / 2);
    // Improving offers: the emitting step's (at least one per entry it
    // touched, at most half the table, a few more where a lower offer came
    // later) in the whole log, a closure pass's in half of it; past that
    // the frame overflows and runs again with twice the tables.
    winners.resize(n);
    if (live_count > 0)
      check(cudaMemcpyAsync(live[live_in].get(), old_live.get(),
                            live_count * sizeof(cuda::TpToken), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (live tokens)");
    if (keep_acoustic) {  // the same for the arrays beside the lists
      DeviceArray<float> old_acoustic = std::move(live_acoustic[live_in]);
      live_acoustic[0].resize(n / 2);
      live_acoustic[1].resize(n / 2);
      heavy_acoustic.resize(heavy.size());
      winner_acoustic.resize(n);
      if (live_count > 0)
        check(cudaMemcpyAsync(live_acoustic[live_in].get(), old_acoustic.get(), live_count * sizeof(float),
                              cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync (live acoustic parts)");
      sync();  // before old_acoustic is freed
    }
    // Distinct entries of one round, so no more than a frame may touch:
    // the list never overflows where the table did not.
    if (rescoring) word_ends.resize(n / 2);
    // All free, no round mark (TpEntry).
    check(cudaMemsetAsync(entries.get(), 0xFF, n * sizeof(cuda::TpEntry), stream), "cudaMemsetAsync");
    sync();
    tables_fresh = true;
  }
  // Twice the state tables, for a frame that overflowed them.
  void grow_tables() {
    if (table_entries >= kMaxTableEntries)
      throw std::runtime_error("cuda search: a frame touched more than " +
                               std::to_string(kMaxTableEntries / 2) + " states");
    allocate_tables(table_entries * 2);
  }
  // Records one frame may stage: a slot of the buffer (staging's comment).
  uint32_t staging_slot_records() const {
    return static_cast<uint32_t>((batcher ? lane_staging.size() : staging.size()) /
                                 static_cast<size_t>(staging_slots));
  }
  // Where the frame `ahead` frames after the next one stages its records.
  uint32_t staging_base(int ahead = 0) const {
    return static_cast<uint32_t>((staging_slot + ahead) % staging_slots) * staging_slot_records();
  }
  // Room for at least twice `records` in each slot, the records on their
  // way to the host landed first (the old buffer is freed); the frame
  // being run again writes its slot of the new buffer.
  void grow_staging(uint32_t records) {
    Section timed(*this, &growth_seconds);
    sync();
    const size_t n = static_cast<size_t>(records) * 2 * static_cast<size_t>(staging_slots);
    resize_staging(n);
    host_frame.get()->staging_base = staging_base();
  }
  // The staging buffer (and its acoustic parts) at `n` records.
  void resize_staging(size_t n) {
    if (batcher)
      lane_staging.resize(n);
    else
      staging.resize(n);
    if (keep_acoustic && batcher) lane_staging_acoustic.resize(n);
    if (keep_acoustic && !batcher) staging_acoustic.resize(n);
  }
  // A fresh closure-round id, 1 .. kNoRound - 1 (round marks are reset
  // to kNoRound when ids would wrap: one 4-byte column of the entries).
  uint32_t take_round_id() { return take_round_ids(1); }
  // The first of `n` fresh ids (a frame whose word-end rounds run on the
  // device takes one for each round it may run).
  uint32_t take_round_ids(uint32_t n) {
    reserve_round_ids(n);
    const uint32_t first = round_id + 1;
    round_id += n;
    return first;
  }
  // Room for `n` more ids without a wrap, the marks reset first if not:
  // ids taken together then come from one run between two resets, so no
  // round runs with an id from before a reset after it.
  void reserve_round_ids(uint32_t n) {
    if (round_id > cuda::kNoRound - 1 - n) {
      check(cudaMemset2DAsync(&entries.get()->round_mark, sizeof(cuda::TpEntry), 0xFF, sizeof(uint32_t),
                              entries.size(), stream),
            "cudaMemset2DAsync (round marks)");
      stream_pending = true;
      round_id = 0;
    }
  }
  // The first `count` entries of the device array `from`, as T (the
  // device's token type has the host's layout), on the host once the
  // stream has run up to here.
  template <class T>
  std::vector<T> fetch(const void* from, size_t count, const char* what) {
    std::vector<T> out(count);
    if (count > 0) {
      check(cudaMemcpyAsync(out.data(), from, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
            what);
      sync();
    }
    return out;
  }
  void sync() {
    const auto t0 = std::chrono::steady_clock::now();
    check(wait_for_stream(stream), "cudaStreamSynchronize");
    wait_seconds += seconds_since(t0);
    records_landed = true;
    stream_pending = false;
  }
  // After a frame's or round's launch, before its counters are read. A
  // lane's round ran in the batcher's launch, which run() waited for, and
  // queued nothing on this stream, so unless something was queued here
  // since, there is nothing to wait for. (Those empty waits, a driver call
  // each, cost nothing measurable at 256 streams on an H100,
  // docs/benchmarks.md; they are left out all the same.)
  void wait_for_round() {
    if (batcher != nullptr && !stream_pending) return;
    sync();
  }
  void drop_graph() {
    if (frame_graph != nullptr) cudaGraphExecDestroy(frame_graph);
    frame_graph = nullptr;
  }
  void drop_round_graphs() {
    for (auto& entry : round_graphs) cudaGraphExecDestroy(entry.second);
    round_graphs.clear();
  }
  // Whether the round graphs were captured with the buffers of `s` (the
  // rest of TpState is fixed at construction).
  bool round_graphs_match(const cuda::TpState& s) const {
    const cuda::TpState& c = round_graphs_state;
    return c.staging == s.staging && c.staging_capacity == s.staging_capacity &&
           c.staging_acoustic == s.staging_acoustic && c.winner_acoustic == s.winner_acoustic &&
           c.heavy_acoustic == s.heavy_acoustic && c.live_acoustic[0] == s.live_acoustic[0] &&
           c.live_acoustic[1] == s.live_acoustic[1] &&
           c.events == s.events && c.event_stage == s.event_stage &&
           c.event_capacity == s.event_capacity &&
           c.offers == s.offers && c.entries == s.entries && c.lm == s.lm;
  }

  ~Impl() {
    drop_graph();
    drop_round_graphs();
    if (stream != nullptr) cudaStreamDestroy(stream);
    cuda_memory::forget_error();  // errors of cleanup are not the next launch's
  }
};

CudaSearcher::CudaSearcher(const SearchGraph& graph, const SearchOptions& options, int device_id,
                           LmRescorer* rescorer,
                           std::shared_ptr<const CudaSearchGraph> device_graph, GraphCheck graph_check,
                           bool batched)
    : Searcher(graph, options, rescorer, graph_check), impl_(std::make_unique<Impl>()) {
  // The device's event is the host's, field by field, padded to 32 bytes
  // (two 16-byte stores); the host copies the first sizeof(WordEndEvent).
  static_assert(sizeof(cuda::TpEvent) == 32, "two 16-byte stores an event");
  static_assert(sizeof(WordEndEvent) <= sizeof(cuda::TpEvent) &&
                    offsetof(cuda::TpEvent, arc) == offsetof(WordEndEvent, arc) &&
                    offsetof(cuda::TpEvent, cost) == offsetof(WordEndEvent, cost) &&
                    offsetof(cuda::TpEvent, record) == offsetof(WordEndEvent, record) &&
                    offsetof(cuda::TpEvent, hist) == offsetof(WordEndEvent, history) &&
                    offsetof(cuda::TpEvent, word) == offsetof(WordEndEvent, word) &&
                    offsetof(cuda::TpEvent, dest) == offsetof(WordEndEvent, dest) &&
                    offsetof(cuda::TpEvent, acoustic) == offsetof(WordEndEvent, acoustic),
                "TpEvent starts with Searcher::WordEndEvent's layout");
  static_assert(sizeof(cuda::TpOffer) == sizeof(WordEndOffer) &&
                    offsetof(cuda::TpOffer, cost) == offsetof(WordEndOffer, cost) &&
                    offsetof(cuda::TpOffer, word) == offsetof(WordEndOffer, word) &&
                    offsetof(cuda::TpOffer, record) == offsetof(WordEndOffer, record) &&
                    offsetof(cuda::TpOffer, hist) == offsetof(WordEndOffer, history) &&
                    offsetof(cuda::TpOffer, acoustic) == offsetof(WordEndOffer, acoustic),
                "offer layouts differ");
  Impl& m = *impl_;
  // The word-lattice pass: every token's acoustic part kept apart, as the
  // CPU searcher keeps it (docs/search.md, "The word-lattice pass").
  m.keep_acoustic = options_.lattice.enabled() && rescorer_ != nullptr;
  m.slots = slots_;
  m.rescoring = rescorer_ != nullptr;
  m.num_arcs = static_cast<uint32_t>(graph_.num_arcs());
  if (options_.histogram_bins > cuda::kMaxHistogramBins)
    throw std::invalid_argument("cuda search: histogram_bins " +
                                std::to_string(options_.histogram_bins) + " above the device's " +
                                std::to_string(cuda::kMaxHistogramBins));
  if (device_graph && (device_graph->host_graph() != &graph_ || device_graph->device() != device_id))
    throw std::invalid_argument("cuda search: the device graph given is not this graph on device " +
                                std::to_string(device_id));
  m.device_graph = device_graph ? std::move(device_graph) : CudaSearchGraph::upload(graph_, device_id);
  m.device = device_id;
  check(cudaSetDevice(device_id), "cudaSetDevice");
  apply_cuda_wait_policy(device_id);
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, device_id), "cudaGetDeviceProperties");
  m.device_name = prop.name;
  m.sm_count = std::max(1, prop.multiProcessorCount);
  check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t n = static_cast<size_t>(graph_.num_states());
  const size_t heavy_states = m.device_graph->heavy_states();
  m.has_heavy = heavy_states > 0;
  m.heavy_bound = heavy_states * static_cast<size_t>(m.slots);
  m.histogram.resize(static_cast<size_t>(options_.histogram_bins));
  if (m.rescoring) {
    m.events.resize(4096);
    m.offers.resize(4096);
    // Nearly every offer round ends its frame (the rescored word ends
    // rarely reach another word end in the same frame).
    m.offer_policy.prune = true;
  }
  // Records a staging slot holds (TpState::staging; a slot per frame in
  // flight, allocated once the chain's length is known, below); a frame
  // makes hundreds, and one that makes more runs again with more room.
  size_t slot_records = std::min<size_t>(std::max<size_t>(n, 1024), kInitialStagingRecords);
  // The state tables start at what pruning lets a frame touch and double
  // when a frame overflows them (each doubling costs that frame a second
  // run), so a stream holds what its search reaches, not the graph: at most
  // the number of virtual states rounded up to a power of two.
  const size_t virtual_states = n * static_cast<size_t>(m.slots);
  const uint64_t wanted =
      options_.max_active > 0
          ? std::clamp<uint64_t>(static_cast<uint64_t>(options_.max_active) *
                                     kTableEntriesPerActiveToken,
                                 kInitialTableEntries, kMaxInitialTableEntries)
          : kInitialTableEntries;
  uint32_t entries = 4;
  while (entries < wanted && entries < 2 * virtual_states) entries *= 2;
  // GPUSPEECH_CUDA_TINY_BUFFERS=1 (tests): staging, event and table
  // buffers so small that frames overflow them and run again, which the
  // buffers' usual sizes make rare.
  if (const char* tiny = std::getenv("GPUSPEECH_CUDA_TINY_BUFFERS");
      tiny != nullptr && std::string(tiny) == "1") {
    slot_records = 4;
    if (m.rescoring) m.events.resize(2);
    entries = 4;
  }
  m.counters.resize(1);
  m.host_counters.resize(1);
  m.frame.resize(1 + cuda::kMaxChainedFrames);
  m.host_frame.resize(1 + cuda::kMaxChainedFrames);
  for (int i = 0; i <= cuda::kMaxChainedFrames; ++i) m.host_frame.get()[i] = cuda::TpFrame{};
  // Grid-stride list kernels: a few blocks per SM cover lists of any
  // length; blocks with nothing to do exit at once.
  m.blocks = 4 * m.sm_count;
  // A round's head, closure and event collection as one cooperative kernel
  // (tp_round) when the device allows it, with one block per SM: its
  // grid-wide barriers cost less the fewer blocks take part, and the lists
  // (hundreds to a few thousand tokens) keep 132 blocks busy. For the
  // closure alone, on the H100 LibriVox search: 0.54 s with one block per
  // SM, 0.56-0.62 s with four, 0.56-0.68 s with a kernel launch per pass
  // (docs/benchmarks.md). GPUSPEECH_CUDA_CLOSURE=passes keeps a launch per
  // step and pass, for comparing the two in one build.
  int cooperative = 0;
  check(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device_id),
        "cudaDeviceGetAttribute");
  const char* closure_env = std::getenv("GPUSPEECH_CUDA_CLOSURE");
  const bool passes_wanted = closure_env != nullptr && std::string(closure_env) == "passes";
  if (cooperative != 0 && !passes_wanted)
    m.round_blocks = cuda::tp_round_blocks(m.sm_count, /*max_per_sm=*/1, options_.histogram_bins);
  // GPUSPEECH_CUDA_ROUND_BLOCKS=N: N blocks for the cooperative round
  // kernel instead (at most as many as can be resident at once), for
  // measuring the barrier-cost / parallelism trade-off (docs/benchmarks.md).
  if (const char* blocks_env = std::getenv("GPUSPEECH_CUDA_ROUND_BLOCKS");
      blocks_env != nullptr && m.round_blocks > 0) {
    const int wanted = std::atoi(blocks_env);
    const int resident =
        cuda::tp_round_blocks(m.sm_count, /*max_per_sm=*/64, options_.histogram_bins);
    if (wanted > 0) m.round_blocks = std::min(wanted, resident);
  }
  // Rounds as lanes of the device's batcher (cuda_round_batcher.h);
  // GPUSPEECH_CUDA_BATCH=1 or 0 decides instead (tests run every CUDA
  // search test both ways).
  if (const char* batch_env = std::getenv("GPUSPEECH_CUDA_BATCH"))
    batched = std::string(batch_env) == "1";
  decide_emit_group(device_id, batched);
  // Frames a rescoring round chains (clamped below, once the kind of its
  // rounds is known).
  m.chain_length = batched ? kDefaultChainedFramesBatched : kDefaultChainedFramesAlone;
  if (const char* chain_env = std::getenv("GPUSPEECH_CUDA_CHAIN"))
    m.chain_length = std::clamp(std::atoi(chain_env), 0, cuda::kMaxChainedFrames);
  if (batched) {
    m.batcher = CudaRoundBatcher::for_device(device_id);
    m.lane_out.resize(1);
    if (m.rescoring) m.event_stage.resize(m.events.size());
  }
  // Word ends rescored on the device: with the fused round kernel or the
  // batcher's cluster kernel, which run a round through round_run and its
  // word-end loop (the cooperative lanes kernel has none), and an LM whose
  // histories the device table holds. By default, where it was measured
  // faster than the host's rescoring (+6.6 % at 256 batched streams, +8.2 %
  // at 512, with 40 % less host CPU; +11 % for a stream alone:
  // docs/benchmarks.md, "N-gram lookups by hash");
  // GPUSPEECH_CUDA_RESCORE=host turns it off.
  const char* rescore_env = std::getenv("GPUSPEECH_CUDA_RESCORE");
  const bool rescore_on_device = rescore_env == nullptr || std::string(rescore_env) != "host";
  if (m.rescoring && rescore_on_device && m.fused_rounds() && (!m.batcher || m.batcher->cluster() > 0) &&
      rescorer_->history_length() <= kLmHistoryMaxWords) {
    m.lm_on_device = true;
    m.lm_rescoring = CudaLmRescoring::shared(*rescorer_, &graph_, device_id);
    // GPUSPEECH_CUDA_TINY_BUFFERS=1: a table that fills and grows (tests).
    const char* tiny = std::getenv("GPUSPEECH_CUDA_TINY_BUFFERS");
    const bool tiny_table = tiny != nullptr && std::string(tiny) == "1";
    m.lm_table = std::make_unique<CudaLmHistoryTable>(*m.lm_rescoring, tiny_table ? 4u : kInitialLmHistories);
    m.event_stage.resize(m.events.size());
    m.lm_offers.resize(m.events.size());
    m.lm_unsorted.resize(m.events.size());
    m.lm_misses.resize(m.events.size());
    m.lm_memo_keys.resize(size_t{1} << kLmMemoBits);
    m.lm_memo_values.resize(size_t{1} << kLmMemoBits);
    m.clear_lm_memo();
    m.upload_lm();
    LmRescoringView& v = m.lm_host_view;
    v.full = rescorer_->full_lm().view();
    v.pruned = rescorer_->pruned_lm().view();
    v.full_of_graph = rescorer_->full_of_graph().data();
    v.pruned_of_graph = rescorer_->pruned_of_graph().data();
    v.words = rescorer_->history_length();
    v.language_weight = rescorer_->language_weight();
    m.lm_full_end = rescorer_->full_lm().word_id("</s>");
    m.lm_pruned_end = rescorer_->pruned_lm().word_id("</s>");
  }
  if (m.fused_rounds())
    m.passes_per_batch = std::min(kFusedClosurePasses, options_.max_epsilon_passes);
  // Only rescoring rounds chain frames; the host's rescoring and the
  // cooperative lanes kernel (TpLaneRound) one at most.
  if (!m.rescoring || !m.fused_rounds())
    m.chain_length = 0;
  else if (!m.lm_on_device || (m.batcher && m.batcher->cluster() == 0))
    m.chain_length = std::min(m.chain_length, 1);
  // A staging slot for each frame a launch may leave records for (the
  // chain's and the next frame's), in mapped memory when batched.
  m.staging_slots = 1 + std::max(1, m.chain_length);
  m.resize_staging(static_cast<size_t>(m.staging_slots) * slot_records);
  // Room for a frame's records from the start, so that no frame short of
  // outgrowing the staging buffer waits for a pinned allocation
  // (finish_frame grows it, once the records it holds are flushed).
  m.host_records.resize(m.staging_slot_records());
  if (m.keep_acoustic) m.host_acoustic.resize(m.staging_slot_records());
  check(cudaMemsetAsync(m.counters.get(), 0, sizeof(CountersAndChain), m.stream),
        "cudaMemsetAsync");
  m.allocate_tables(entries);
}

CudaSearcher::~CudaSearcher() = default;

std::string CudaSearcher::device_name() const { return impl_->device_name; }

bool CudaSearcher::batched() const { return impl_->batcher != nullptr; }

bool CudaSearcher::rescores_on_device() const { return impl_->lm_on_device; }

int CudaSearcher::max_chained_frames() const { return impl_->chain_length; }

void CudaSearcher::refresh_history_words() const {
  Impl& m = *impl_;
  if (!m.lm_words_stale) return;
  m.lm_table->copy_words(m.stream, m.lm_full_words, m.lm_pruned_words, m.lm_lengths, m.lm_host_table);
  m.lm_words_stale = false;
}

float CudaSearcher::history_end_delta(int32_t history) const {
  const Impl& m = *impl_;
  if (!m.lm_on_device) return Searcher::history_end_delta(history);
  refresh_history_words();
  if (history < 0 || static_cast<uint32_t>(history) >= m.lm_host_table.capacity)
    throw std::out_of_range("cuda search: unknown LM history " + std::to_string(history));
  return lm_end_delta(m.lm_host_view, m.lm_host_table, history, m.lm_full_end, m.lm_pruned_end);
}

std::vector<std::string> CudaSearcher::history_words(int32_t history) const {
  const Impl& m = *impl_;
  if (!m.lm_on_device) return Searcher::history_words(history);
  refresh_history_words();
  if (history < 0 || static_cast<uint32_t>(history) >= m.lm_host_table.capacity)
    throw std::out_of_range("cuda search: unknown LM history " + std::to_string(history));
  std::vector<std::string> out;
  const int n = m.lm_host_table.lengths[history];
  for (int i = 0; i < n; ++i)
    out.push_back(rescorer_->full_lm().word(m.lm_host_table.full_words[history * kLmHistoryMaxWords + i]));
  return out;
}

void CudaSearcher::reset() {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  // A frame cut short by an error may have left entries behind.
  // (Round marks too: kNoRound is no round's id, so a free entry's mark
  // never matches.)
  check(cudaMemsetAsync(m.entries.get(), 0xFF, m.entries.size() * sizeof(cuda::TpEntry), m.stream),
        "cudaMemsetAsync");
  records_ = WordRecordStore(options_.max_word_records);
  lattice_given_up_ = false;
  stats_ = SearchStats{};
  stats_.record_capacity = records_.capacity();
  m.wait_seconds = 0.0;
  m.growth_seconds = 0.0;
  m.collect_seconds = 0.0;
  frames_ = 0;
  started_ = false;  // until the start token's closure is done
  m.sync();  // no copy into host_records may still be running
  m.pending_records = 0;
  m.done_count = 0;
  m.done_next = 0;
  m.chained = false;
  m.staging_slot = 0;
  m.live_in = 1;  // the start frame writes live[0]
  m.live_count = 0;
  reset_rescorer();
  int32_t start = graph_.start_state;
  if (rescorer_ != nullptr)
    start = start * slots_ + static_cast<int32_t>(rescorer_->history_hash(LmRescorer::kStartHistory) %
                                                  static_cast<uint32_t>(slots_));
  m.host_frame.get()->start_state = start;
  m.host_frame.get()->start_history = 0;
  if (m.lm_on_device) {  // an empty table but for the start history
    m.lm_table->reset(m.stream);
    m.clear_lm_memo();
    m.stream_pending = true;
    m.lm_words_stale = true;
    m.host_frame.get()->start_history = m.lm_table->start();
  }
  run_frame(nullptr, 0, nullptr, 0);
  started_ = true;
}

void CudaSearcher::advance(const float* loglik, int64_t frames, int64_t columns) {
  check_advance(loglik, frames, columns);
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const size_t block = static_cast<size_t>(std::min(frames, kScoreBlockFrames) * columns);
  if (m.scores.size() < block) m.scores.resize(block);
  try {
    for (int64_t f0 = 0; f0 < frames; f0 += kScoreBlockFrames) {
      const int64_t n = std::min(kScoreBlockFrames, frames - f0);
      check(cudaMemcpyAsync(m.scores.get(), loglik + f0 * columns,
                            static_cast<size_t>(n * columns) * sizeof(float),
                            cudaMemcpyHostToDevice, m.stream),
            "cudaMemcpyAsync (scores)");
      m.stream_pending = true;
      m.row_stride = columns;
      for (int64_t f = 0; f < n; ++f) {
        collect_garbage_if_full();
        run_frame(m.scores.get() + f * columns, frames_ + 1,
                  f + 1 < n ? m.scores.get() + (f + 1) * columns : nullptr, n - f - 1);
      }
    }
  } catch (...) {
    started_ = false;  // a frame cut short: the next utterance needs reset()
    throw;
  }
}

void CudaSearcher::advance_device(const float* device_loglik, int64_t frames, int64_t columns) {
  check_advance(device_loglik, frames, columns);
  check(cudaSetDevice(impl_->device), "cudaSetDevice");
  impl_->row_stride = columns;
  try {
    for (int64_t f = 0; f < frames; ++f) {
      collect_garbage_if_full();
      run_frame(device_loglik + f * columns, frames_ + 1,
                f + 1 < frames ? device_loglik + (f + 1) * columns : nullptr, frames - f - 1);
    }
  } catch (...) {
    started_ = false;
    throw;
  }
}

void CudaSearcher::enqueue_frame(bool start) {
  Impl& m = *impl_;
  const cuda::TpGraph g = m.graph();
  const cuda::TpState s = m.state();
  cuda::TpFrame* f = m.frame.get();
  check(cudaMemcpyAsync(m.frame.get(), m.host_frame.get(), sizeof(cuda::TpFrame),
                        cudaMemcpyHostToDevice, m.stream),
        "cudaMemcpyAsync (frame)");
  check(cuda::tp_frame_begin(s, f, m.stream), "tp_frame_begin");
  if (start) check(cuda::tp_start(s, f, m.stream), "tp_start");
  if (m.fused_rounds()) {
    cuda::TpRoundParams p;
    p.head = start ? cuda::kRoundHeadNone : cuda::kRoundHeadEmit;
    p.max_passes = m.passes_per_batch;
    p.heavy = m.has_heavy;
    check(cuda::tp_round(g, s, f, p, m.round_blocks, options_.histogram_bins, m.stream),
          "tp_round");
  } else {
    if (!start) check(cuda::tp_emit(g, s, f, m.blocks, m.has_heavy, m.stream), "tp_emit");
    for (int p = 0; p < m.passes_per_batch; ++p)
      check(cuda::tp_epsilon_pass(g, s, f, p, m.blocks, m.has_heavy, m.stream), "tp_epsilon_pass");
  }
  check(cuda::tp_prune(s, f, options_.histogram_bins, m.blocks, m.stream), "tp_prune");
  check(cudaMemcpyAsync(m.host_counters.get(), m.counters.get(), sizeof(cuda::TpCounters),
                        cudaMemcpyDeviceToHost, m.stream),
        "cudaMemcpyAsync (counters)");
}

void CudaSearcher::launch_frame(bool start) {
  Impl& m = *impl_;
  ++stats_.rounds;
  if (m.batcher) {  // pruning gated as in a rescoring round (run_frame clears a rerun's entries)
    run_lane_round(start ? RoundHead::kStart : RoundHead::kEmit, m.passes_per_batch, true, false, 0, 0);
    return;
  }
  m.tables_fresh = false;
  if (start) {  // once per utterance: no graph
    enqueue_frame(true);
    return;
  }
  if (m.frame_graph == nullptr || m.graph_passes != m.passes_per_batch ||
      m.graph_staging != m.staging.get() || m.graph_staging_size != m.staging.size() ||
      m.graph_staging_acoustic != m.staging_acoustic.get() ||
      m.graph_table != m.entries.get()) {
    m.drop_graph();
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
    try {
      enqueue_frame(false);
    } catch (...) {
      cudaStreamEndCapture(m.stream, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      cuda_memory::forget_error();  // the capture's own errors; the first is thrown
      throw;
    }
    check(cudaStreamEndCapture(m.stream, &graph), "cudaStreamEndCapture");
    const cudaError_t st = cudaGraphInstantiate(&m.frame_graph, graph, 0);
    cudaGraphDestroy(graph);
    check(st, "cudaGraphInstantiate");
    m.graph_passes = m.passes_per_batch;
    m.graph_staging = m.staging.get();
    m.graph_staging_acoustic = m.staging_acoustic.get();
    m.graph_staging_size = m.staging.size();
    m.graph_table = m.entries.get();
  }
  check(cudaGraphLaunch(m.frame_graph, m.stream), "cudaGraphLaunch");
}

void CudaSearcher::run_frame(const float* device_row, int32_t boundary, const float* next_rows,
                             int64_t ahead) {
  if (rescorer_ != nullptr) {
    if (impl_->lm_on_device)
      run_frame_device_lm(device_row, boundary, next_rows, ahead);
    else
      run_frame_rescoring(device_row, boundary, next_rows, ahead);
    return;
  }
  Impl& m = *impl_;
  const uint32_t expanded = m.live_count;
  const bool start = device_row == nullptr;
  begin_frame(device_row, boundary);

  cuda::TpCounters hc{};
  for (;;) {
    launch_frame(start);
    m.wait_for_round();
    hc = m.host_counters.get()->counters;
    // A lane's pruning is gated: an attempt that runs again left its
    // entries in the table (new tables have none).
    const bool rerun = hc.overflow != 0 || hc.records > m.staging_slot_records() || hc.last_changed != 0;
    if (rerun && m.batcher && hc.overflow == 0) {
      check(cuda::tp_clear_touched(m.state(), m.blocks, m.stream), "tp_clear_touched");
      m.sync();
    }
    if (hc.overflow != 0) {  // the state table overflowed: rerun with twice the room
      m.grow_tables();
      ++stats_.frames_rerun;
      continue;
    }
    if (hc.records > m.staging_slot_records()) {  // records overflowed: rerun with room
      m.grow_staging(hc.records);
      ++stats_.frames_rerun;
      continue;
    }
    if (hc.last_changed != 0) {  // closure unsettled: rerun with more passes
      if (m.passes_per_batch >= options_.max_epsilon_passes)
        throw closure_unsettled(options_.max_epsilon_passes, boundary);
      m.passes_per_batch = std::min(m.passes_per_batch * 2, options_.max_epsilon_passes);
      continue;
    }
    break;
  }
  // Passes that changed something, plus the one that found nothing to do.
  m.passes_needed = std::max<int>(m.passes_needed, static_cast<int>(hc.passes) + 1);
  if (!m.fused_rounds())
    m.passes_per_batch = std::min(std::max(m.passes_needed, kInitialPassesPerBatch),
                                  options_.max_epsilon_passes);

  finish_frame(hc, expanded, start);
}

cuda::TpFrame& CudaSearcher::begin_frame(const float* device_row, int32_t boundary) {
  Impl& m = *impl_;
  cuda::TpFrame& f = *m.host_frame.get();
  f.loglik = device_row;
  f.acoustic_scale = options_.acoustic_scale;
  f.beam = options_.beam;
  f.word_end_beam = options_.word_end_beam;
  f.bins = options_.histogram_bins;
  f.bin_scale = static_cast<float>(options_.histogram_bins) / options_.beam;
  f.max_active = options_.max_active;
  f.boundary = boundary;
  // For a chained frame this is what its chaining round computed too: the
  // previous frame's first record plus its records.
  f.first_record = static_cast<int32_t>(records_.size() + m.pending_records);
  f.live_in = m.live_in;
  f.staging_base = m.staging_base();
  return f;
}

void CudaSearcher::finish_frame(const cuda::TpCounters& hc, uint32_t expanded, bool start) {
  Impl& m = *impl_;
  // The previous frame's records have arrived (the waits covered their
  // copy); this frame's follow in one transfer, covered by the next
  // frame's waits and appended at the next flush. The next frame writes
  // the other half of the staging buffer.
  flush_records();
  if (m.host_records.size() < hc.records) {
    Impl::Section timed(m, &m.growth_seconds);
    m.host_records.resize(static_cast<size_t>(hc.records) * 2);
    if (m.keep_acoustic) m.host_acoustic.resize(static_cast<size_t>(hc.records) * 2);
  }
  if (hc.records > 0 && m.batcher) {  // already in host memory, and final
    std::memcpy(static_cast<void*>(m.host_records.get()), m.lane_staging.host() + m.staging_base(),
                hc.records * sizeof(cuda::TpRecord));
    if (m.keep_acoustic)
      std::memcpy(m.host_acoustic.get(), m.lane_staging_acoustic.host() + m.staging_base(),
                  hc.records * sizeof(float));
    m.pending_records = hc.records;
  } else if (hc.records > 0) {
    check(cudaMemcpyAsync(m.host_records.get(), m.staging.get() + m.staging_base(),
                          hc.records * sizeof(cuda::TpRecord), cudaMemcpyDeviceToHost, m.stream),
          "cudaMemcpyAsync (records)");
    if (m.keep_acoustic)
      check(cudaMemcpyAsync(m.host_acoustic.get(), m.staging_acoustic.get() + m.staging_base(),
                            hc.records * sizeof(float), cudaMemcpyDeviceToHost, m.stream),
            "cudaMemcpyAsync (record acoustic parts)");
    m.pending_records = hc.records;
    m.records_landed = false;
  }
  m.staging_slot = (m.staging_slot + 1) % m.staging_slots;
  m.live_in = 1 - m.live_in;
  m.live_count = hc.live[m.live_in];
  if (!start) {
    ++frames_;
    ++stats_.frames;
    stats_.tokens_expanded += expanded;
  }
  stats_.epsilon_passes += hc.passes + (hc.touched > 0 ? 1 : 0);
  stats_.device_wait_seconds = m.wait_seconds;
  stats_.buffer_growth_seconds = m.growth_seconds;
  stats_.garbage_collection_seconds = m.collect_seconds;
  stats_.max_live_tokens = std::max<int64_t>(stats_.max_live_tokens, m.live_count);
}

void CudaSearcher::enqueue_round(RoundHead head, int passes, bool prune, int chain_passes,
                                 int chain_frames) {
  Impl& m = *impl_;
  const cuda::TpGraph g = m.graph();
  const cuda::TpState s = m.state();
  cuda::TpFrame* f = m.frame.get();
  const bool chain = chain_passes > 0;  // fused rounds only
  bool pruned_in_round = false;
  // Pruning alone is a round of no passes when it chains the next frame
  // (word ends rescored on the device: the frame's rounds ran in the
  // launch before).
  if (head != RoundHead::kPrune || (chain && m.fused_rounds())) {
    // The frame's parameters (and the next frames', if chained).
    const size_t frames = chain ? 1 + static_cast<size_t>(chain_frames) : 1;
    check(cudaMemcpyAsync(m.frame.get(), m.host_frame.get(), frames * sizeof(cuda::TpFrame),
                          cudaMemcpyHostToDevice, m.stream),
          "cudaMemcpyAsync (frame)");
    if (head == RoundHead::kStart || head == RoundHead::kEmit)
      check(cuda::tp_frame_begin(s, f, m.stream), "tp_frame_begin");
    if (head == RoundHead::kStart) check(cuda::tp_start(s, f, m.stream), "tp_start");
    if (m.fused_rounds()) {
      cuda::TpRoundParams p;
      p.head = head == RoundHead::kEmit    ? cuda::kRoundHeadEmit
               : head == RoundHead::kOffer ? cuda::kRoundHeadOffers
                                           : cuda::kRoundHeadNone;
      p.max_passes = head == RoundHead::kPrune ? 0 : passes;
      p.heavy = m.has_heavy;
      p.collect = head != RoundHead::kPrune;
      p.prune = prune;
      p.chain_passes = chain_passes;
      p.chain_frames = chain ? chain_frames : 1;
      p.next = chain ? m.frame.get() + 1 : nullptr;
      if (m.lm_on_device) {
        p.word_end_rounds = options_.max_epsilon_passes;
        p.pass_limit = options_.max_epsilon_passes;
      }
      check(cuda::tp_round(g, s, f, p, m.round_blocks, options_.histogram_bins, m.stream),
            "tp_round");
      pruned_in_round = prune;
    } else {
      if (chain) throw std::logic_error("cuda search: chained frames need fused rounds");
      if (head == RoundHead::kEmit)
        check(cuda::tp_emit(g, s, f, m.blocks, m.has_heavy, m.stream), "tp_emit");
      if (head == RoundHead::kOffer)
        check(cuda::tp_offer_events(g, s, f, m.blocks, m.stream), "tp_offer_events");
      for (int p = 0; p < passes; ++p)
        check(cuda::tp_epsilon_pass(g, s, f, p, m.blocks, m.has_heavy, m.stream),
              "tp_epsilon_pass");
      check(cuda::tp_collect_events(g, s, f, m.blocks, m.stream), "tp_collect_events");
    }
  }
  if (prune && !pruned_in_round)
    check(cuda::tp_prune(s, f, options_.histogram_bins, m.blocks, m.stream, /*gated=*/true),
          "tp_prune");
  // The counters (and the chain's outcome, right behind them).
  check(cudaMemcpyAsync(m.host_counters.get(), m.counters.get(),
                        chain ? sizeof(CountersAndChain) : sizeof(cuda::TpCounters),
                        cudaMemcpyDeviceToHost, m.stream),
        "cudaMemcpyAsync (counters)");
}

void CudaSearcher::run_lane_round(RoundHead head, int passes, bool prune, bool collect,
                                  int chain_passes, int chain_frames) {
  Impl& m = *impl_;
  m.tables_fresh = false;
  if (m.stream_pending) m.sync();  // what the round reads from this stream
  const bool chain = chain_passes > 0;
  cuda::TpLaneRound r{};
  r.graph = m.graph();
  r.state = m.state();
  r.frame = m.frame.get();
  if (head != RoundHead::kPrune || chain) {
    r.num_frames = chain ? 1 + static_cast<uint32_t>(chain_frames) : 1;
    for (uint32_t i = 0; i < r.num_frames; ++i) r.frames[i] = m.host_frame.get()[i];
  }
  r.begin_frame = head == RoundHead::kStart || head == RoundHead::kEmit;
  r.start = head == RoundHead::kStart;
  r.run_round = 1;
  cuda::TpRoundParams& p = r.params;
  p.head = head == RoundHead::kEmit    ? cuda::kRoundHeadEmit
           : head == RoundHead::kOffer ? cuda::kRoundHeadOffers
                                       : cuda::kRoundHeadNone;
  p.max_passes = head == RoundHead::kPrune ? 0 : passes;
  p.heavy = m.has_heavy;
  p.collect = collect && head != RoundHead::kPrune;
  p.prune = prune;
  p.chain_passes = chain_passes;
  p.chain_frames = chain ? chain_frames : 1;
  p.next = chain ? m.frame.get() + 1 : nullptr;
  if (m.lm_on_device) {
    p.word_end_rounds = options_.max_epsilon_passes;
    p.pass_limit = options_.max_epsilon_passes;
  }
  r.out = m.lane_out.device();
  const auto t0 = std::chrono::steady_clock::now();
  m.batcher->run(r);
  m.wait_seconds += seconds_since(t0);
  std::memcpy(static_cast<void*>(m.host_counters.get()), m.lane_out.host(),
              sizeof(CountersAndChain));
}

void CudaSearcher::launch_round(RoundHead head, int passes, bool prune, int chain_passes,
                                int chain_frames) {
  Impl& m = *impl_;
  if (chain_passes == 0) chain_frames = 0;  // one graph per round shape
  ++stats_.rounds;
  if (head == RoundHead::kPrune && chain_frames == 0) ++stats_.prune_only_rounds;
  if (m.batcher) {
    run_lane_round(head, passes, prune, true, chain_passes, chain_frames);
    return;
  }
  m.tables_fresh = false;
  if (head == RoundHead::kStart) {  // once per utterance: no graph
    enqueue_round(head, passes, prune, chain_passes, chain_frames);
    return;
  }
  const cuda::TpState s = m.state();
  if (!m.round_graphs_match(s) || m.round_graphs.size() >= kMaxCachedRoundGraphs) {
    m.drop_round_graphs();
    m.round_graphs_state = s;
  }
  const auto key = std::make_tuple(static_cast<int>(head), passes, prune, chain_passes, chain_frames);
  auto it = m.round_graphs.find(key);
  if (it == m.round_graphs.end()) {
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
    try {
      enqueue_round(head, passes, prune, chain_passes, chain_frames);
    } catch (...) {
      cudaStreamEndCapture(m.stream, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      cuda_memory::forget_error();  // the capture's own errors; the first is thrown
      throw;
    }
    check(cudaStreamEndCapture(m.stream, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t st = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(st, "cudaGraphInstantiate");
    it = m.round_graphs.emplace(key, exec).first;
  }
  check(cudaGraphLaunch(it->second, m.stream), "cudaGraphLaunch");
}

void CudaSearcher::run_frame_rescoring(const float* device_row, int32_t boundary,
                                       const float* next_rows, int64_t ahead) {
  Impl& m = *impl_;
  const uint32_t expanded = m.live_count;
  const bool start = device_row == nullptr;
  // This frame's emitting round may have run already, chained to the end
  // of the previous frame's last round (below): its counters are at hand.
  bool resumed = m.chained;
  m.chained = false;
  cuda::TpFrame& f = begin_frame(device_row, boundary);
  const double pass_micros = (m.has_heavy ? 3 : 2) * kNodeMicros;
  const double prune_micros = 4 * kNodeMicros;
  const int max_passes = options_.max_epsilon_passes;
  // Closure passes a round queues when `run` of the frame's have run: about
  // as many as are left (an even number, at least two, for the parity of
  // continuations).
  auto round_passes = [&](int wanted, int run) {
    int passes = std::max(2, std::min(wanted, max_passes - run));
    return passes + (passes & 1);
  };
  // The next frame's emitting round is queued behind an offer round whose
  // graph prunes (it runs on the device only if that round ends this
  // frame: nearly every offer round does), saving a host round trip per
  // frame. Needs the next frame's scores and the fused round kernel.
  const bool can_chain =
      next_rows != nullptr && ahead > 0 && m.fused_rounds() && m.chain_length > 0 && !start;
  const int chain_passes = round_passes(kFusedClosurePasses, 0);

  // Each round is one graph launch and one wait: the round's head (the
  // emitting step, or the host's offers), its closure passes, the word-end
  // events (written straight into mapped host memory), pruning if the
  // policy put it there (it runs only if the round turns out to be the
  // frame's last), and the counters. A typical frame: round 0 with events,
  // round 1 without, pruned in round 1's graph and followed there by the
  // next frame's round 0: one wait.
  std::vector<WordEndEvent>& events = m.event_list;
  std::vector<WordEndOffer>& offers = m.offer_list;
  cuda::TpCounters hc{};
  bool pruned = false;
  bool chained_next = false;
  for (;;) {  // attempts: a frame that outgrew a buffer runs again
    f.round_id = resumed ? m.chained_round_id : m.take_round_id();
    f.num_offers = 0;
    RoundHead head = start ? RoundHead::kStart : RoundHead::kEmit;
    RoundPolicy* policy = &m.emit_policy;
    uint32_t passes_before = 0;
    int rounds = 0;
    bool again = false;
    // The frame's closure passes, counted as the CPU searcher counts them
    // (those that had tokens to relax), may number max_epsilon_passes in
    // all; one pass beyond the limit runs only where the CPU searcher would
    // have failed before it. So a frame that needs more fails at the same
    // frame with the same message as on the CPU.
    int passes_run = 0;
    for (;;) {
      const int passes =
          round_passes(m.fused_rounds() ? kFusedClosurePasses : policy->passes, passes_run);
      bool round_pruned = policy->prune;  // whether the round's graph prunes (gated)
      if (resumed) {  // the chained emitting round: no pruning in its graph
        hc = m.chained_counters;
        round_pruned = false;
        resumed = false;
      } else {
        const bool chain = can_chain && head == RoundHead::kOffer && round_pruned;
        if (chain) {
          cuda::TpFrame& next = m.host_frame.get()[1];
          next = f;
          next.loglik = next_rows;
          next.boundary = boundary + 1;
          next.first_record = 0;  // the device's: f.first_record + this frame's records
          next.live_in = 1 - f.live_in;
          next.round_id = m.take_round_id();
          next.num_offers = 0;
          next.staging_base = m.staging_base(1);
          next.record_limit = static_cast<int32_t>(
              std::min<int64_t>(records_.capacity(), std::numeric_limits<int32_t>::max()));
        }
        launch_round(head, passes, round_pruned, chain ? chain_passes : 0, 1);
        m.wait_for_round();
        hc = m.host_counters.get()->counters;
        if (chain && m.host_counters.get()->chain.go != 0) {
          // This round ended the frame (its pruning ran) and the next
          // frame's emitting round ran after it: the frame's own counters
          // are the chain's copy.
          m.chained = true;
          m.chained_counters = hc;
          m.chained_round_id = m.host_frame.get()[1].round_id;
          hc = m.host_counters.get()->chain.prev[0];
          chained_next = true;
        }
      }
      passes_run = static_cast<int>(hc.passes_run);
      if (hc.overflow != 0) {  // the state table overflowed
        m.grow_tables();
        ++stats_.frames_rerun;
        again = true;
        break;
      }
      if (hc.records > m.staging_slot_records()) {  // records overflowed
        m.grow_staging(hc.records);
        ++stats_.frames_rerun;
        again = true;
        break;
      }
      if (passes_run > max_passes || (hc.last_changed != 0 && passes_run >= max_passes))
        throw closure_unsettled(max_passes, boundary);
      if (hc.last_changed != 0) {  // closure unsettled: more passes, same round
        head = RoundHead::kContinue;
        continue;
      }
      if (hc.events > m.events.size()) {  // events overflowed
        Impl::Section timed(m, &m.growth_seconds);
        m.resize_events(static_cast<size_t>(hc.events) * 2);
        ++stats_.frames_rerun;
        again = true;
        break;
      }
      if (!start)
        policy->note(static_cast<int>(hc.passes - passes_before) + 1, hc.events == 0,
                     pass_micros, prune_micros);
      passes_before = hc.passes;
      if (hc.events == 0) {
        pruned = round_pruned;  // the gate let it run: same counters, same test
        break;
      }
      if (++rounds > options_.max_epsilon_passes)
        throw std::runtime_error("search: word-end rounds did not settle after " +
                                 std::to_string(options_.max_epsilon_passes) + " at frame " +
                                 std::to_string(boundary));
      // The host half: events in, rescored offers out, both in mapped
      // memory (the wait above made the device's writes visible).
      events.resize(hc.events);
      for (uint32_t i = 0; i < hc.events; ++i)
        std::memcpy(static_cast<void*>(&events[i]), &m.events.host()[i], sizeof(WordEndEvent));
      rescore_word_ends(events, offers);
      if (m.offers.size() < offers.size()) {
        Impl::Section timed(m, &m.growth_seconds);
        m.offers.resize(offers.size() * 2);
      }
      std::memcpy(static_cast<void*>(m.offers.host()), offers.data(),
                  offers.size() * sizeof(cuda::TpOffer));
      f.round_id = m.take_round_id();
      f.num_offers = static_cast<uint32_t>(offers.size());
      head = RoundHead::kOffer;
      policy = &m.offer_policy;
    }
    if (!again) break;
    // Undo the abandoned attempt's candidates (new tables have none); the
    // previous frame's live list is untouched, so the rerun is exact (a
    // chained frame's too: the chain began only after its previous frame
    // was complete).
    if (!m.tables_fresh) {
      check(cuda::tp_clear_touched(m.state(), m.blocks, m.stream), "tp_clear_touched");
      m.stream_pending = true;
    }
  }
  if (!pruned) {  // the last round's graph had no pruning
    launch_round(RoundHead::kPrune, 0, true, 0, 0);
    m.wait_for_round();
    hc = m.host_counters.get()->counters;
  }

  if (chained_next) ++stats_.chained_frames;
  finish_frame(hc, expanded, start);
}

void CudaSearcher::run_frame_device_lm(const float* device_row, int32_t boundary,
                                       const float* next_rows, int64_t ahead) {
  Impl& m = *impl_;
  const uint32_t expanded = m.live_count;
  const bool start = device_row == nullptr;
  if (m.done_next < m.done_count) {
    // The last launch ran this frame to its end (chained and pruned
    // there): its records are staged and its counters final.
    const cuda::TpCounters& done = m.done_frames[m.done_next++];
    // A closure that settled one pass past the limit is pruned on the
    // device like any other: the error is the host's to raise, at this
    // frame, as for a frame of its own launch (the device held back every
    // other condition that fails a frame, and the chain stopped there).
    const int limit = options_.max_epsilon_passes;
    if (static_cast<int>(done.passes_run) > limit)
      throw closure_unsettled(limit, boundary);
    begin_frame(device_row, boundary);
    stats_.word_end_events += done.word_end_events;
    stats_.rescore_rounds += done.word_end_rounds;
    m.lm_words_stale = true;
    finish_frame(done, expanded, start);
    return;
  }
  // This frame's rounds may have run already, chained behind the previous
  // frame's pruning (below): their counters are at hand, unpruned.
  bool resumed = m.chained;
  m.chained = false;
  cuda::TpFrame& f = begin_frame(device_row, boundary);
  const int limit = options_.max_epsilon_passes;
  // The device's loop takes round ids f.round_id + 1 .. + limit.
  const uint32_t ids = static_cast<uint32_t>(limit) + 1;
  // A round's closure runs until it settles, up to the frame's whole
  // budget (an even count, at least two: the host loop's rule).
  const int passes = std::max(2, limit) + (std::max(2, limit) & 1);
  // Frames a pruning round may chain: as many as have scores, up to the
  // chain's length.
  const int chain_frames =
      next_rows == nullptr || start ? 0 : static_cast<int>(std::min<int64_t>(ahead, m.chain_length));
  // The next frames' parameters for a round that chains them: scores a row
  // apart, list parities alternating, each its own round ids and staging
  // slot (the device fills in first_record as each one begins).
  auto prepare_next = [&]() {
    m.reserve_round_ids(static_cast<uint32_t>(chain_frames) * ids);  // ids from one run
    for (int k = 1; k <= chain_frames; ++k) {
      const cuda::TpFrame& prev = m.host_frame.get()[k - 1];
      cuda::TpFrame& next = m.host_frame.get()[k];
      next = f;
      next.loglik = next_rows + static_cast<int64_t>(k - 1) * m.row_stride;
      next.boundary = boundary + k;
      next.first_record = 0;
      next.live_in = 1 - prev.live_in;
      next.round_id = m.take_round_ids(ids);
      next.num_offers = 0;
      next.staging_base = m.staging_base(k);
      next.record_limit = static_cast<int32_t>(
          std::min<int64_t>(records_.capacity(), std::numeric_limits<int32_t>::max()));
    }
  };
  // Runs a round that prunes (gated) and may chain the next frames; the
  // frame's own counters come back (the chain's copy when it chained).
  // Chained frames that the launch also pruned wait in done_frames; the
  // last one begun waits in chained_counters for its pruning.
  auto run_pruning_round = [&](RoundHead head, int round_passes) -> cuda::TpCounters {
    if (chain_frames > 0) prepare_next();
    launch_round(head, round_passes, /*prune=*/true, chain_frames > 0 ? passes : 0, chain_frames);
    m.wait_for_round();
    const CountersAndChain& out = *m.host_counters.get();
    cuda::TpCounters c = out.counters;
    const int go = chain_frames > 0 ? static_cast<int>(std::min<uint32_t>(out.chain.go, chain_frames)) : 0;
    if (go > 0) {
      m.chained = true;
      m.chained_counters = c;
      m.chained_round_id = m.host_frame.get()[go].round_id;
      c = out.chain.prev[0];
      for (int k = 1; k < go; ++k) m.done_frames[k - 1] = out.chain.prev[k];
      m.done_count = go - 1;
      m.done_next = 0;
      stats_.chained_frames += go;
      stats_.chained_frames_ended += go - 1;
    }
    return c;
  };
  cuda::TpCounters hc{};
  for (;;) {  // attempts: a frame that outgrew a buffer runs again
    bool rounds_only = false;  // the chained rounds ran; pruning has not
    if (resumed) {
      resumed = false;
      hc = m.chained_counters;
      f.round_id = m.chained_round_id;
      f.num_offers = 0;
      rounds_only = true;
    } else {
      m.reserve_round_ids((1 + static_cast<uint32_t>(chain_frames)) * ids);  // with chained frames'
      f.round_id = m.take_round_ids(ids);
      f.num_offers = 0;
      hc = run_pruning_round(start ? RoundHead::kStart : RoundHead::kEmit, passes);
    }
    const int passes_run = static_cast<int>(hc.passes_run);
    bool again = true;
    if (hc.overflow != 0) {  // the state table overflowed
      m.grow_tables();
    } else if (hc.records > m.staging_slot_records()) {  // records overflowed
      m.grow_staging(hc.records);
    } else if (passes_run > limit || (hc.last_changed != 0 && passes_run >= limit)) {
      throw closure_unsettled(limit, boundary);
    } else if (hc.last_changed != 0) {  // cannot happen: a round's passes are the budget
      throw std::logic_error("cuda search: a closure round stopped unsettled within its budget");
    } else if (hc.events > m.events.size()) {  // events overflowed
      Impl::Section timed(m, &m.growth_seconds);
      m.resize_events(static_cast<size_t>(hc.events) * 2);
    } else if (hc.history_full != 0) {  // the LM history table is full
      Impl::Section timed(m, &m.growth_seconds);
      m.lm_table->grow(m.stream, m.lm_map);
      m.clear_lm_memo();
      m.upload_lm();
      // The previous frame's tokens, which the frame runs again from, by
      // their new ids.
      check(cuda::tp_remap_histories(m.live[m.live_in].get(), m.live_count, m.lm_map.get(), m.stream),
            "tp_remap_histories");
      m.sync();
      m.lm_words_stale = true;
    } else if (hc.events != 0) {  // the device's loop stopped with events left
      if (hc.word_end_rounds > static_cast<uint32_t>(limit))
        throw std::runtime_error("search: word-end rounds did not settle after " + std::to_string(limit) +
                                 " at frame " + std::to_string(boundary));
      throw std::length_error("search: too many word-end events in one frame (" + std::to_string(hc.events) +
                              ")");
    } else {
      again = false;
    }
    if (!again) {
      // The frame's rounds are done. Chained ones still need their pruning,
      // which may chain the next frame in turn.
      if (rounds_only) hc = run_pruning_round(RoundHead::kPrune, 0);
      break;
    }
    ++stats_.frames_rerun;
    // Undo the abandoned attempt's candidates (new tables have none); the
    // previous frame's live list is untouched, so the rerun is exact.
    if (!m.tables_fresh) {
      check(cuda::tp_clear_touched(m.state(), m.blocks, m.stream), "tp_clear_touched");
      m.stream_pending = true;
    }
  }
  stats_.word_end_events += hc.word_end_events;
  stats_.rescore_rounds += hc.word_end_rounds;
  m.lm_words_stale = true;
  finish_frame(hc, expanded, start);
}

void CudaSearcher::flush_records() {
  Impl& m = *impl_;
  if (m.pending_records == 0) return;
  if (!m.records_landed) m.sync();
  // In index order: a record's predecessor always has a lower index, as
  // the store requires.
  const cuda::TpRecord* r = m.host_records.get();
  const float* ac = m.keep_acoustic ? m.host_acoustic.get() : nullptr;
  for (uint32_t i = 0; i < m.pending_records; ++i)
    records_.append(r[i].word, r[i].frame, r[i].prev, r[i].cost, ac != nullptr ? ac[i] : 0.0f);
  m.pending_records = 0;
}

std::vector<SearchToken> CudaSearcher::fetch_live() {
  std::vector<SearchToken> out = fetch_device_live();
  if (slots_ > 1)
    for (SearchToken& t : out) t.state /= slots_;
  return out;
}

std::vector<SearchToken> CudaSearcher::fetch_device_live() {
  Impl& m = *impl_;
  flush_records();
  return m.fetch<SearchToken>(m.live[m.live_in].get(), m.live_count, "cudaMemcpyAsync (live tokens)");
}

std::vector<float> CudaSearcher::live_acoustic() {
  Impl& m = *impl_;
  if (!m.keep_acoustic) return {};
  return m.fetch<float>(m.live_acoustic[m.live_in].get(), m.live_count,
                 "cudaMemcpyAsync (live acoustic parts)");
}

void CudaSearcher::collect_garbage_if_full() {
  Impl& m = *impl_;
  if (records_.size() + m.pending_records < records_.capacity()) return;
  Impl::Section timed(m, &m.collect_seconds);
  // With the lattice pass the records on their way count: the store must
  // take them before it is sized.
  if (m.keep_acoustic && !lattice_given_up_) flush_records();
  if (grow_records_for_lattice(m.keep_acoustic)) return;
  std::vector<SearchToken> live = fetch_device_live();
  std::vector<int32_t> roots(live.size());
  for (size_t i = 0; i < live.size(); ++i) roots[i] = live[i].record;
  stats_.records_collected += records_.collect(roots.data(), roots.size());
  for (size_t i = 0; i < live.size(); ++i) live[i].record = roots[i];
  if (!live.empty()) {
    check(cudaMemcpyAsync(m.live[m.live_in].get(), live.data(), live.size() * sizeof(SearchToken),
                          cudaMemcpyHostToDevice, m.stream),
          "cudaMemcpyAsync (collected tokens)");
    m.sync();
  }
  ++stats_.collections;
  stats_.record_capacity = records_.capacity();
}

}  // namespace gpuspeech
