// Token passing on a CUDA device: the rules of token_passing.h run by the
// kernels of kernels/cuda/token_passing.cu, with the same best path as
// CpuSearcher on the same graph and scores.
//
// The graph is uploaded once. Per frame the host launches one CUDA graph:
// the emitting step, a batch of epsilon-closure passes, pruning (best cost
// by reduction, max-active cutoff from a histogram, compaction of the live
// list) and a copy of a small counter block; then it waits once; if the closure had not
// settled within the batch (or the frame's word records overflowed their
// staging buffer), it runs the frame again with more passes (a larger
// buffer), which the unchanged previous live list allows. The frame's word
// records then go to the host in one transfer that the next frame's wait
// covers. So: one host wait per frame, and no per-token round trip.
//
// With word-end rescoring (token_passing.h) a frame is split where the host
// rescores: each closure round is one captured CUDA graph (the emitting
// step or the host's offers, a batch of closure passes, the word-end step's
// events, optionally pruning, the counters) and one wait. The events (the
// tokens that reached a word-label arc this round: a few hundred) are
// written by the device straight into mapped host memory; the host rescores
// them and writes the offers into mapped memory the next round's graph
// reads. Pruning in a round's graph is gated on the device: it runs only if
// the round found no events (the frame's last round) and is complete. A
// round whose closure outlasts its pass batch is continued by a graph of
// more passes (exact), not rerun; the batch size per kind of round (emitting
// / offers) and whether its graph carries pruning follow the rounds seen so
// far. A typical frame: two graph launches and two waits.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/search/token_passing.h"

namespace gpuspeech {

namespace cuda {
struct TpCounters;  // kernels/cuda/token_passing.cuh
struct TpFrame;
}  // namespace cuda
class CudaSearchGraph;  // cuda_search_graph.h

class CudaSearcher : public Searcher {
 public:
  // Searches `graph` on device `device_id`: on `device_graph` when given
  // (CudaSearchGraph::upload of this very graph on this device, shared with
  // other searchers), else on its own upload. `batched`: the rounds run as
  // a lane of the device's batcher (cuda_round_batcher.h), shared with the
  // other batched searchers on the device; GPUSPEECH_CUDA_BATCH=1 or 0 in
  // the environment overrides it (tests). Throws BackendError when no
  // usable device answers or memory runs out, std::invalid_argument for a
  // bad graph or options, or a device graph of another graph or device.
  CudaSearcher(const SearchGraph& graph, const SearchOptions& options = {}, int device_id = 0,
               LmRescorer* rescorer = nullptr,
               std::shared_ptr<const CudaSearchGraph> device_graph = nullptr,
               GraphCheck check = GraphCheck::kCheck, bool batched = false);
  // The host side keeps a reference: a temporary graph would dangle.
  CudaSearcher(SearchGraph&&, const SearchOptions& = {}, int = 0, LmRescorer* = nullptr,
               std::shared_ptr<const CudaSearchGraph> = nullptr, GraphCheck = GraphCheck::kCheck,
               bool = false) = delete;
  // Whether the rounds run as a lane of the device's batcher.
  bool batched() const;
  // Whether word ends are rescored on the device, inside the rounds
  // (docs/search-lanes-plan.md, S8 step 5), rather than by the host's
  // rescorer between rounds: the default, which GPUSPEECH_CUDA_RESCORE=host
  // turns off. It needs the fused round kernel (or the batcher's cluster
  // kernel) and an LM of order 3 or less, else the host rescores.
  bool rescores_on_device() const;
  // The most frames a rescoring round chains behind its own (0: none):
  // by default 4 for a stream in launches of its own and 1 for a lane of
  // the batcher, GPUSPEECH_CUDA_CHAIN=N for N (at most
  // cuda::kMaxChainedFrames); 1 at most for the host's rescoring and the
  // cooperative lanes kernel. Chains of more than one frame end (prune)
  // each frame but the last in the same launch.
  int max_chained_frames() const;
  std::vector<std::string> history_words(int32_t history) const override;
  ~CudaSearcher() override;

  const char* name() const override { return "cuda"; }
  std::string device_name() const;
  void reset() override;
  // Host scores: uploaded in blocks, then searched.
  void advance(const float* loglik, int64_t frames, int64_t columns) override;
  // Scores already in this device's memory (a CUDA device pointer, e.g. the
  // scorer's output buffer), read in place. The caller makes sure the work
  // that wrote them has finished (e.g. Backend::synchronize()).
  void advance_device(const float* device_loglik, int64_t frames, int64_t columns);

 protected:
  std::vector<SearchToken> fetch_live() override;
  std::vector<float> live_acoustic() override;

 private:
  struct Impl;
  // How a rescoring round's graph begins.
  enum class RoundHead {
    kStart,     // frame begin + the start token (queued directly, not a graph)
    kEmit,      // frame begin + the emitting step (round 0)
    kOffer,     // the host's rescored offers (rounds 1, 2, ...)
    kContinue,  // more passes of a round whose closure has not settled
    kPrune,     // pruning alone (the last round's graph had none)
  };
  // One frame; `next_rows` are the scores of the `ahead` frames after it
  // that the caller has (rows Impl::row_stride floats apart; null if
  // none): a rescoring frame may then begin them on the device.
  void run_frame(const float* device_row, int32_t boundary, const float* next_rows, int64_t ahead);
  // run_frame with word-end rescoring: rounds with host round trips (one
  // frame chained at most).
  void run_frame_rescoring(const float* device_row, int32_t boundary, const float* next_rows,
                           int64_t ahead);
  // run_frame with word-end rescoring on the device: the frame's rounds
  // in one launch, its pruning with the next frames' rounds in the next
  // (up to Impl::chain_length of them, each but the last pruned there too:
  // the host then only finishes those).
  void run_frame_device_lm(const float* device_row, int32_t boundary, const float* next_rows,
                           int64_t ahead);
  float history_end_delta(int32_t history) const override;
  // The device history table's words on the host (for end deltas and
  // history_words), copied if a frame has run since the last copy.
  void refresh_history_words() const;
  // Queues a rescoring round: head, `passes` closure passes, the word-end
  // events, (gated) pruning if `prune`, then if `chain_passes` > 0 up to
  // `chain_frames` next frames, each emitting round with that many passes
  // (tp_round; host_frame[1 ..] holds their parameters), and the
  // counters' copy.
  void enqueue_round(RoundHead head, int passes, bool prune, int chain_passes, int chain_frames);
  // enqueue_round through a captured graph cached per (head, passes,
  // prune, chain_passes, chain_frames); the start round is queued directly.
  void launch_round(RoundHead head, int passes, bool prune, int chain_passes, int chain_frames);
  // The same round as a lane of the device's batcher (batched search):
  // queued with the other streams' rounds, returns when it has run, its
  // counters in host_counters. `collect`: the word-end events.
  void run_lane_round(RoundHead head, int passes, bool prune, bool collect, int chain_passes,
                      int chain_frames);
  // The live tokens as the device holds them (virtual states).
  std::vector<SearchToken> fetch_device_live();
  // Queues one frame's operations (the start token's closure if `start`).
  void enqueue_frame(bool start);
  // enqueue_frame through the captured per-frame graph (captured first if
  // needed); the start frame is queued directly.
  void launch_frame(bool start);
  // The frame's parameters in host_frame[0] (score row, frame index, list
  // parity, first record, staging slot), for run_frame*.
  cuda::TpFrame& begin_frame(const float* device_row, int32_t boundary);
  // After a frame's last wait: its records on their way to the host, the
  // live list and staging slot switched, the statistics.
  void finish_frame(const cuda::TpCounters& hc, uint32_t expanded, bool start);
  void collect_garbage_if_full();
  // Appends the records copied after the last frame to the store.
  void flush_records();
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuspeech
