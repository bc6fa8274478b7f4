// Uploading a search graph to a CUDA device (cuda_search_graph.h).
#include "common/search/cuda_search_graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

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

  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  // The stream goes however the uploads end.
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() {
      if (cudaStreamDestroy(s) != cudaSuccess) cuda_memory::forget_error();
    }
  } guard{stream};
  auto sync = [&] { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); };

  cuda_memory::upload(g->arc_begin_, graph.arc_begin, stream);
  cuda_memory::upload(g->dest_, graph.arc_dest, stream);
  cuda_memory::upload(g->ilabel_, graph.arc_ilabel, stream);
  cuda_memory::upload(g->olabel_, graph.arc_olabel, stream);
  cuda_memory::upload(g->cost_, graph.arc_cost, stream);

  const size_t n = static_cast<size_t>(graph.num_states());
  for (size_t s = 0; s < n; ++s)
    if (graph.arc_begin[s + 1] - graph.arc_begin[s] > cuda::kHeavyDegree) ++g->heavy_states_;
  std::vector<uint8_t> flags(std::max<size_t>(n, 1), 0);
  for (size_t s = 0; s < n; ++s)
    for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a)
      if (graph.arc_ilabel[a] == 0) {
        flags[s] |= cuda::kStateEpsilon;
        if (graph.arc_olabel[a] != 0) flags[s] |= cuda::kStateWordArc;
      }
  cuda_memory::upload(g->state_flags_, flags, stream);
  sync();  // the host vectors go out of scope
  // Each arc's source state, when it takes under a quarter of the free
  // device memory; else the kernels binary-search the CSR offsets.
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const size_t arcs = static_cast<size_t>(graph.num_arcs());
  if (arcs * sizeof(int32_t) * 4 < free_bytes) {
    std::vector<int32_t> src(arcs);
    for (size_t s = 0; s < n; ++s)
      for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a)
        src[a] = static_cast<int32_t>(s);
    cuda_memory::upload(g->source_, src, stream);
    sync();
  }
  g->bytes_ = g->arc_begin_.size() * sizeof(int64_t) +
              (g->dest_.size() + g->ilabel_.size() + g->olabel_.size() + g->source_.size()) *
                  sizeof(int32_t) +
              g->cost_.size() * sizeof(float) + g->state_flags_.size();
  return g;
}

cuda::TpGraph CudaSearchGraph::view(int slots, bool rescoring) const {
  return cuda::TpGraph{arc_begin_.get(),
                       dest_.get(),
                       ilabel_.get(),
                       olabel_.get(),
                       cost_.get(),
                       source_.size() > 0 ? source_.get() : nullptr,
                       state_flags_.get(),
                       0,
                       slots,
                       rescoring ? 1 : 0,
                       num_arcs_};
}

}  // namespace gpuspeech
