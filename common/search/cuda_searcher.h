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
// rescores: the emitting step and the first closure round run as above up
// to the word-end step, whose events (the tokens that reached a word-label
// arc this round: a few hundred bytes) come to the host; the host rescores
// them and sends back only the offers, and the next round runs; pruning
// follows the last round. One wait per round instead of one per frame.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/search/token_passing.h"

namespace gpuspeech {

class CudaSearcher : public Searcher {
 public:
  // Uploads the graph to device `device_id`. Throws BackendError when no
  // usable device answers or memory runs out, std::invalid_argument for a
  // bad graph or options.
  CudaSearcher(const SearchGraph& graph, const SearchOptions& options = {}, int device_id = 0,
               LmRescorer* rescorer = nullptr);
  // The host side keeps a reference: a temporary graph would dangle.
  CudaSearcher(SearchGraph&&, const SearchOptions& = {}, int = 0, LmRescorer* = nullptr) = delete;
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

 private:
  struct Impl;
  void run_frame(const float* device_row, int32_t boundary);
  // run_frame with word-end rescoring: rounds with host round trips.
  void run_frame_rescoring(const float* device_row, int32_t boundary);
  // The live tokens as the device holds them (virtual states).
  std::vector<SearchToken> fetch_device_live();
  // Queues one frame's operations (the start token's closure if `start`).
  void enqueue_frame(bool start);
  // enqueue_frame through the captured per-frame graph (captured first if
  // needed); the start frame is queued directly.
  void launch_frame(bool start);
  void collect_garbage_if_full();
  // Appends the records copied after the last frame to the store.
  void flush_records();
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuspeech
