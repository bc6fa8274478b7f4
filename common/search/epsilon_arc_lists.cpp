// See epsilon_arc_lists.h.
#include "common/search/epsilon_arc_lists.h"

namespace gpuspeech {

EpsilonArcLists epsilon_arc_lists(const SearchGraph& graph) {
  const size_t n = static_cast<size_t>(graph.num_states());
  EpsilonArcLists l;
  l.first.resize(n + 1);
  l.plain.resize(n);
  for (size_t s = 0; s < n; ++s) {
    l.first[s] = static_cast<uint32_t>(l.arcs.size());
    for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a)
      if (graph.arc_ilabel[a] == 0 && graph.arc_olabel[a] == 0) l.arcs.push_back(static_cast<uint32_t>(a));
    l.plain[s] = static_cast<uint32_t>(l.arcs.size()) - l.first[s];
    for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a)
      if (graph.arc_ilabel[a] == 0 && graph.arc_olabel[a] != 0) l.arcs.push_back(static_cast<uint32_t>(a));
  }
  l.first[n] = static_cast<uint32_t>(l.arcs.size());
  return l;
}

}  // namespace gpuspeech
