// Each state's epsilon arcs as a list of CSR arc indices, for the device
// search's closure and word-end collection (kernels/cuda/token_passing.cuh,
// TpGraph::eps_states / eps_arcs). Most arcs of a state that has epsilon
// arcs are emitting ones (on the en-us graph 69 % of the arcs such a
// state's closure would load; docs/search-lanes-plan.md, S6), which those
// phases would otherwise load only to pass over. The lists keep CSR
// indices, so a candidate's tie-break (its arc index) and every result
// stay as they are. Host code: no CUDA needed to build or test it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/search/search_graph.h"

namespace gpuspeech {

struct EpsilonArcLists {
  // Per state and one past the last: its first entry in `arcs`.
  std::vector<uint32_t> first;
  // Per state: how many of its epsilon arcs carry no word label. They come
  // first in its entries, its word-label epsilon arcs after them, each
  // kind in CSR order, up to first[s + 1].
  std::vector<uint32_t> plain;
  std::vector<uint32_t> arcs;  // CSR arc indices
};

EpsilonArcLists epsilon_arc_lists(const SearchGraph& graph);

}  // namespace gpuspeech
