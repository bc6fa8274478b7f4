// Uploading a search graph to a CUDA device (cuda_search_graph.h).
#include "common/search/cuda_search_graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/search/epsilon_arc_lists.h"

namespace gpuspeech {

using cuda_memory::check;

std::shared_ptr<const CudaSearchGraph> CudaSearchGraph::upload(const SearchGraph& graph,
                                                               int device_id) {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess)
    throw BackendError(std::string("cuda search: no CUDA device: ") + cudaGetErrorString(st));
  if (device_id < 0 || device_id >= count)
    throw BackendError("cuda search: device " + std::to_string(device_id) + " out of range (" +
                       std::to_string(count) + " devices)");
  check(cudaSetDevice(device_id), "cudaSetDevice");
  std::shared_ptr<CudaSearchGraph> g(new CudaSearchGraph());
  g->device_ = device_id;
  g->host_ = &graph;
  g->num_states_ = graph.num_states();
  g->num_arcs_ = static_cast<uint32_t>(graph.num_arcs());

  const cuda_memory::ScopedStream scoped;  // goes however the uploads end
  const cudaStream_t stream = scoped.get();
  auto sync = [&] { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); };

  // The kernels' packed records (TpGraph): per state its first arc, arc
  // count and flags; per arc its destination (with that state's flags),
  // cost and labels.
  const size_t n = static_cast<size_t>(graph.num_states());
  const size_t arcs = static_cast<size_t>(graph.num_arcs());
  if (n > cuda::kStateIndexMask)
    throw BackendError("cuda search: the graph has " + std::to_string(n) +
                       " states; the CUDA search takes at most " +
                       std::to_string(cuda::kStateIndexMask));
  std::vector<uint8_t> flags(n, 0);
  for (size_t s = 0; s < n; ++s) {
    const int64_t degree = graph.arc_begin[s + 1] - graph.arc_begin[s];
    if (degree > cuda::kHeavyDegree) ++g->heavy_states_;
    if (degree > static_cast<int64_t>(cuda::kStateIndexMask))
      throw BackendError("cuda search: state " + std::to_string(s) + " has " +
                         std::to_string(degree) + " arcs, more than the CUDA search takes");
    for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a)
      if (graph.arc_ilabel[a] == 0) {
        flags[s] |= cuda::kStateEpsilon;
        if (graph.arc_olabel[a] != 0) flags[s] |= cuda::kStateWordArc;
      }
  }
  {
    std::vector<uint2> states(std::max<size_t>(n, 1), uint2{0, 0});
    std::vector<cuda::TpArc> packed(std::max<size_t>(arcs, 1), cuda::TpArc{0, 0.0f, 0, 0});
    for (size_t s = 0; s < n; ++s) {
      const auto degree = static_cast<uint32_t>(graph.arc_begin[s + 1] - graph.arc_begin[s]);
      states[s] = uint2{static_cast<uint32_t>(graph.arc_begin[s]),
                        degree | static_cast<uint32_t>(flags[s]) << cuda::kStateFlagShift};
      for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a) {
        const auto d = static_cast<uint32_t>(graph.arc_dest[a]);
        packed[a] = cuda::TpArc{d | static_cast<uint32_t>(flags[d]) << cuda::kStateFlagShift,
                                graph.arc_cost[a], graph.arc_ilabel[a], graph.arc_olabel[a]};
      }
    }
    cuda_memory::upload(g->states_, states, stream);
    cuda_memory::upload(g->arcs_, packed, stream);
    sync();  // the host vectors go out of scope
  }
  {
    // The epsilon arcs' lists (TpGraph::eps_states, eps_arcs).
    EpsilonArcLists lists = epsilon_arc_lists(graph);
    std::vector<uint2> eps_states(n + 1, uint2{0, 0});
    for (size_t s = 0; s <= n; ++s) eps_states[s] = uint2{lists.first[s], s < n ? lists.plain[s] : 0u};
    std::vector<uint32_t>& eps_arcs = lists.arcs;
    if (eps_arcs.empty()) eps_arcs.push_back(0);  // a device array of at least one
    cuda_memory::upload(g->eps_states_, eps_states, stream);
    cuda_memory::upload(g->eps_arcs_, eps_arcs, stream);
    sync();
  }
  g->bytes_ = g->states_.size() * sizeof(uint2) + g->arcs_.size() * sizeof(cuda::TpArc) +
              g->eps_states_.size() * sizeof(uint2) + g->eps_arcs_.size() * sizeof(uint32_t);
  return g;
}

cuda::TpGraph CudaSearchGraph::view(int slots, bool rescoring) const {
  return cuda::TpGraph{states_.get(),     arcs_.get(), eps_states_.get(), eps_arcs_.get(),
                       slots,             rescoring ? 1 : 0, num_arcs_};
}

}  // namespace gpuspeech
