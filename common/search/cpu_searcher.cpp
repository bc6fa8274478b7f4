// The CPU reference of token passing; every step follows token_passing.h to
// the letter so that the device searchers can be checked against it.
#include "common/search/cpu_searcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/search/search_arithmetic.h"

namespace gpuspeech {

using search::add_cost;
using search::candidate_arc;
using search::candidate_cost;
using search::kNoCandidate;
using search::pack_candidate;
using search::usable_cost;

CpuSearcher::CpuSearcher(const SearchGraph& graph, const SearchOptions& options)
    : Searcher(graph, options) {
  const size_t n = static_cast<size_t>(graph_.num_states());
  best_.assign(n, kNoCandidate);
  source_.assign(n, -1);
  record_.assign(n, -1);
  prev_record_.assign(n, -1);
  stamp_.assign(n, 0);
  histogram_.assign(static_cast<size_t>(options_.histogram_bins), 0);
}

void CpuSearcher::reset() {
  // A frame interrupted by an exception may have left touched states set.
  for (int32_t d : touched_) best_[d] = kNoCandidate;
  touched_.clear();
  live_.clear();
  records_ = WordRecordStore(options_.max_word_records);
  stats_ = SearchStats{};
  stats_.record_capacity = records_.capacity();
  frames_ = 0;
  started_ = false;  // until the start token's closure is done
  frame_first_record_ = 0;

  const int32_t s = graph_.start_state;
  best_[s] = pack_candidate(0.0f, search::kNoArc);
  source_[s] = -1;
  record_[s] = -1;
  touched_.push_back(s);
  std::vector<Changed> changed{{s, 0.0f, -1}};
  epsilon_closure(changed, 0.0f, 0);
  prune();
  started_ = true;
}

void CpuSearcher::advance(const float* loglik, int64_t frames, int64_t columns) {
  check_advance(loglik, frames, columns);
  try {
    for (int64_t f = 0; f < frames; ++f) decode_frame(loglik + f * columns);
  } catch (...) {
    started_ = false;  // a frame cut short: the next utterance needs reset()
    throw;
  }
}

bool CpuSearcher::offer(int32_t d, float cost, uint32_t arc, int32_t source) {
  const uint64_t key = pack_candidate(cost, arc);
  uint64_t& slot = best_[d];
  if (slot == kNoCandidate) touched_.push_back(d);
  if (key >= slot) return false;
  slot = key;
  source_[d] = source;
  return true;
}

void CpuSearcher::decode_frame(const float* row) {
  collect_garbage_if_full();
  frame_first_record_ = static_cast<int32_t>(records_.size());
  const int32_t boundary = frames_ + 1;
  const float scale = options_.acoustic_scale;
  const int64_t* begin = graph_.arc_begin.data();
  const int32_t* ilabel = graph_.arc_ilabel.data();
  const int32_t* olabel = graph_.arc_olabel.data();
  const int32_t* dest = graph_.arc_dest.data();
  const float* arc_cost = graph_.arc_cost.data();

  // 1. Emitting step. A candidate more than `beam` above one already seen
  // is more than `beam` above the step's best: it would neither relax in
  // the closure nor survive pruning, and whatever else reaches its state
  // is kept as before, so skipping it changes nothing but the work.
  for (const SearchToken& tok : live_) prev_record_[tok.state] = tok.record;
  float bound = SearchGraph::kInfinity;
  float skip_above = SearchGraph::kInfinity;
  for (const SearchToken& tok : live_) {
    for (int64_t a = begin[tok.state]; a < begin[tok.state + 1]; ++a) {
      const int32_t il = ilabel[a];
      if (il == 0) continue;
      const float c = search::emitting_cost(tok.cost, arc_cost[a], scale, row[il - 1]);
      if (!usable_cost(c) || c > skip_above) continue;
      if (c < bound) {
        bound = c;
        skip_above = add_cost(bound, options_.beam);
      }
      offer(dest[a], c, static_cast<uint32_t>(a), tok.state);
    }
  }
  stats_.tokens_expanded += static_cast<int64_t>(live_.size());

  // The emitting step's winners, their records, and the best cost.
  std::vector<Changed> changed;
  changed.reserve(touched_.size());
  float best_emit = SearchGraph::kInfinity;
  for (int32_t d : touched_) {
    const uint64_t key = best_[d];
    const float c = candidate_cost(key);
    const uint32_t a = candidate_arc(key);
    int32_t rec = prev_record_[source_[d]];
    if (olabel[a] > 0) rec = records_.append(olabel[a] - 1, boundary, rec, c);
    record_[d] = rec;
    changed.push_back({d, c, rec});
    if (c < best_emit) best_emit = c;
  }

  // 2. and 3.
  if (!changed.empty()) epsilon_closure(changed, best_emit, boundary);
  prune();
  ++frames_;
  ++stats_.frames;
}

void CpuSearcher::epsilon_closure(std::vector<Changed>& changed, float best_emit,
                                  int32_t boundary) {
  const float limit_beam = add_cost(best_emit, options_.beam);
  const float limit_word_end = add_cost(best_emit, options_.word_end_beam);
  const int64_t* begin = graph_.arc_begin.data();
  const int32_t* ilabel = graph_.arc_ilabel.data();
  const int32_t* olabel = graph_.arc_olabel.data();
  const int32_t* dest = graph_.arc_dest.data();
  const float* arc_cost = graph_.arc_cost.data();
  std::vector<Changed> next;
  int passes = 0;
  while (!changed.empty()) {
    if (++passes > options_.max_epsilon_passes)
      throw std::runtime_error("search: epsilon closure did not settle after " +
                               std::to_string(options_.max_epsilon_passes) +
                               " passes at frame " + std::to_string(boundary) +
                               " (a negative-cost epsilon cycle in the graph?)");
    if (++pass_id_ == 0) {  // wrapped: forget every old stamp
      std::fill(stamp_.begin(), stamp_.end(), 0u);
      pass_id_ = 1;
    }
    next.clear();
    for (const Changed& e : changed) {
      const bool fresh = e.record >= frame_first_record_;
      if (!(e.cost <= (fresh ? limit_word_end : limit_beam))) continue;
      for (int64_t a = begin[e.state]; a < begin[e.state + 1]; ++a) {
        if (ilabel[a] != 0) continue;
        const float c = add_cost(e.cost, arc_cost[a]);
        if (!usable_cost(c)) continue;
        const int32_t d = dest[a];
        if (offer(d, c, static_cast<uint32_t>(a), e.state) && stamp_[d] != pass_id_) {
          stamp_[d] = pass_id_;
          next.push_back({d, 0.0f, -1});
        }
      }
    }
    // Records from the sources' values as of the previous pass, committed
    // only once all are known (a source may itself have changed now).
    for (Changed& n : next) {
      const uint64_t key = best_[n.state];
      n.cost = candidate_cost(key);
      const uint32_t a = candidate_arc(key);
      int32_t rec = record_[source_[n.state]];
      if (olabel[a] > 0) rec = records_.append(olabel[a] - 1, boundary, rec, n.cost);
      n.record = rec;
    }
    for (const Changed& n : next) record_[n.state] = n.record;
    changed.swap(next);
  }
  stats_.epsilon_passes += passes;
}

void CpuSearcher::prune() {
  live_.clear();
  if (touched_.empty()) return;
  float best = SearchGraph::kInfinity;
  for (int32_t d : touched_) best = std::min(best, candidate_cost(best_[d]));
  const float limit_beam = add_cost(best, options_.beam);
  const float limit_word_end = add_cost(best, options_.word_end_beam);
  const int bins = options_.histogram_bins;
  const float bin_scale = static_cast<float>(bins) / options_.beam;
  auto within_beam = [&](int32_t d, float c) {
    const bool fresh = record_[d] >= frame_first_record_;
    return c <= (fresh ? limit_word_end : limit_beam);
  };
  std::fill(histogram_.begin(), histogram_.end(), 0u);
  int64_t kept = 0;
  for (int32_t d : touched_) {
    const float c = candidate_cost(best_[d]);
    if (!within_beam(d, c)) continue;
    ++kept;
    ++histogram_[search::histogram_bin(c, best, bin_scale, bins)];
  }
  const int cut = max_active_cutoff_bin(histogram_, kept, options_.max_active);
  for (int32_t d : touched_) {
    const float c = candidate_cost(best_[d]);
    if (within_beam(d, c) && search::histogram_bin(c, best, bin_scale, bins) < cut)
      live_.push_back({d, c, record_[d]});
    best_[d] = kNoCandidate;
  }
  touched_.clear();
  stats_.max_live_tokens = std::max<int64_t>(stats_.max_live_tokens, live_.size());
}

void CpuSearcher::collect_garbage_if_full() {
  if (!records_.needs_collection()) return;
  std::vector<int32_t> roots(live_.size());
  for (size_t i = 0; i < live_.size(); ++i) roots[i] = live_[i].record;
  stats_.records_collected += records_.collect(roots.data(), roots.size());
  for (size_t i = 0; i < live_.size(); ++i) live_[i].record = roots[i];
  ++stats_.collections;
  stats_.record_capacity = records_.capacity();
}

}  // namespace gpuspeech
