// A search graph in one CUDA device's memory: the arcs as the token-passing
// kernels read them (kernels/cuda/token_passing.cuh, TpGraph), and the
// per-state flags derived from them. Immutable once uploaded, so every
// CudaSearcher on the same graph and device reads one copy (the recognizer
// keeps it with the shared resources, recognition_resources.h); a stream's
// own device memory is then its token state alone.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/search/cuda_memory.h"
#include "common/search/search_graph.h"
#include "kernels/cuda/token_passing.cuh"

namespace gpuspeech {

class CudaSearchGraph {
 public:
  // Uploads `graph` to device `device_id` and waits for the copies. Throws
  // BackendError when no such device answers or memory runs out.
  static std::shared_ptr<const CudaSearchGraph> upload(const SearchGraph& graph, int device_id);

  int device() const { return device_; }
  // The graph it was made from (its address: a searcher checks that it is
  // given the copy of its own graph).
  const SearchGraph* host_graph() const { return host_; }
  int32_t num_states() const { return num_states_; }
  uint32_t num_arcs() const { return num_arcs_; }
  // Any state with more than cuda::kHeavyDegree arcs.
  bool has_heavy() const { return heavy_states_ > 0; }
  size_t heavy_states() const { return heavy_states_; }
  // Device bytes held.
  size_t bytes() const { return bytes_; }
  // The kernels' view, for `slots` tokens per state (1 without word-end
  // rescoring) and whether word-label arcs wait for the word-end step.
  cuda::TpGraph view(int slots, bool rescoring) const;

 private:
  CudaSearchGraph() = default;

  int device_ = 0;
  const SearchGraph* host_ = nullptr;
  int32_t num_states_ = 0;
  uint32_t num_arcs_ = 0;
  size_t heavy_states_ = 0;
  size_t bytes_ = 0;
  // cuda::TpGraph's arrays: per state {first arc, arc count | flags}, per
  // arc its packed record.
  cuda_memory::DeviceArray<uint2> states_;
  cuda_memory::DeviceArray<cuda::TpArc> arcs_;
  // cuda::TpGraph's epsilon-arc lists: per state (and one past the last)
  // {first entry, plain epsilon arcs}, and the arcs' CSR indices.
  cuda_memory::DeviceArray<uint2> eps_states_;
  cuda_memory::DeviceArray<uint32_t> eps_arcs_;
};

}  // namespace gpuspeech
