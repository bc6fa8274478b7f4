// The CPU reference of token passing; every step follows token_passing.h to
// the letter so that the device searchers can be checked against it.
#include "common/search/cpu_searcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/search/lm_rescorer.h"
#include "common/search/search_arithmetic.h"

namespace gpuspeech {

using search::add_cost;
using search::candidate_arc;
using search::candidate_cost;
using search::kNoCandidate;
using search::pack_candidate;
using search::usable_cost;

CpuSearcher::CpuSearcher(const SearchGraph& graph, const SearchOptions& options,
                         LmRescorer* rescorer)
    : Searcher(graph, options, rescorer) {
  const size_t n = static_cast<size_t>(graph_.num_states()) * static_cast<size_t>(slots_);
  best_.assign(n, kNoCandidate);
  source_.assign(n, -1);
  record_.assign(n, -1);
  prev_record_.assign(n, -1);
  stamp_.assign(n, 0);
  if (rescorer_ != nullptr) {
    history_.assign(n, 0);
    prev_history_.assign(n, 0);
    round_mark_.assign(n, 0);
  }
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
  reset_rescorer();

  // The start token: history 0 in its slot.
  int32_t s = graph_.start_state;
  if (rescorer_ != nullptr) {
    s = s * slots_ + static_cast<int32_t>(rescorer_->history_hash(LmRescorer::kStartHistory) %
                                          static_cast<uint32_t>(slots_));
    history_[s] = LmRescorer::kStartHistory;
  }
  best_[s] = pack_candidate(0.0f, search::kNoArc);
  source_[s] = -1;
  record_[s] = -1;
  touched_.push_back(s);
  std::vector<Changed> changed{{s, 0.0f, -1, 0}};
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
  const int32_t K = slots_;
  for (const SearchToken& tok : live_) prev_record_[tok.state] = tok.record;
  if (rescorer_ != nullptr)
    for (const SearchToken& tok : live_) prev_history_[tok.state] = tok.history;
  float bound = SearchGraph::kInfinity;
  float skip_above = SearchGraph::kInfinity;
  for (const SearchToken& tok : live_) {
    // Virtual state -> graph state and slot (K = 1: the same).
    const int32_t state = tok.state / K;
    const int32_t slot = tok.state - state * K;
    for (int64_t a = begin[state]; a < begin[state + 1]; ++a) {
      const int32_t il = ilabel[a];
      if (il == 0) continue;
      const float c = search::emitting_cost(tok.cost, arc_cost[a], scale, row[il - 1]);
      if (!usable_cost(c) || c > skip_above) continue;
      if (c < bound) {
        bound = c;
        skip_above = add_cost(bound, options_.beam);
      }
      offer(dest[a] * K + slot, c, static_cast<uint32_t>(a), tok.state);
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
    // (With a rescorer the graph has no word label on emitting arcs.)
    if (olabel[a] > 0) rec = records_.append(olabel[a] - 1, boundary, rec, c);
    record_[d] = rec;
    const int32_t hist = rescorer_ != nullptr ? prev_history_[source_[d]] : 0;
    if (rescorer_ != nullptr) history_[d] = hist;
    changed.push_back({d, c, rec, hist});
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
  int passes = 0;
  while (!changed.empty()) {
    if (rescorer_ != nullptr) {
      if (++round_id_ == 0) {  // wrapped: forget every old mark
        std::fill(round_mark_.begin(), round_mark_.end(), 0u);
        round_id_ = 1;
      }
      for (const Changed& c : changed) round_mark_[c.state] = round_id_;
    }
    passes += epsilon_passes(changed, best_emit, boundary, passes);
    if (rescorer_ == nullptr) break;
    word_end_step(best_emit, boundary, changed);
  }
  stats_.epsilon_passes += passes;
}

int CpuSearcher::epsilon_passes(std::vector<Changed>& changed, float best_emit,
                                int32_t boundary, int passes_before) {
  const float limit_beam = add_cost(best_emit, options_.beam);
  const float limit_word_end = add_cost(best_emit, options_.word_end_beam);
  const int32_t K = slots_;
  const bool rescoring = rescorer_ != nullptr;
  const int64_t* begin = graph_.arc_begin.data();
  const int32_t* ilabel = graph_.arc_ilabel.data();
  const int32_t* olabel = graph_.arc_olabel.data();
  const int32_t* dest = graph_.arc_dest.data();
  const float* arc_cost = graph_.arc_cost.data();
  std::vector<Changed> next;
  int passes = 0;
  while (!changed.empty()) {
    if (passes_before + ++passes > options_.max_epsilon_passes)
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
      const int32_t state = e.state / K;
      const int32_t slot = e.state - state * K;
      for (int64_t a = begin[state]; a < begin[state + 1]; ++a) {
        if (ilabel[a] != 0) continue;
        if (rescoring && olabel[a] != 0) continue;  // a word end: the word-end step's
        const float c = add_cost(e.cost, arc_cost[a]);
        if (!usable_cost(c)) continue;
        const int32_t d = dest[a] * K + slot;
        if (offer(d, c, static_cast<uint32_t>(a), e.state) && stamp_[d] != pass_id_) {
          stamp_[d] = pass_id_;
          next.push_back({d, 0.0f, -1, 0});
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
      if (rescoring) n.history = history_[source_[n.state]];
    }
    for (const Changed& n : next) {
      record_[n.state] = n.record;
      if (rescoring) {
        history_[n.state] = n.history;
        round_mark_[n.state] = round_id_;
      }
    }
    changed.swap(next);
  }
  return passes;
}

void CpuSearcher::word_end_step(float best_emit, int32_t boundary,
                                std::vector<Changed>& changed) {
  const float limit_beam = add_cost(best_emit, options_.beam);
  const float limit_word_end = add_cost(best_emit, options_.word_end_beam);
  const int32_t K = slots_;
  const int64_t* begin = graph_.arc_begin.data();
  const int32_t* ilabel = graph_.arc_ilabel.data();
  const int32_t* olabel = graph_.arc_olabel.data();
  const float* arc_cost = graph_.arc_cost.data();
  // Events from the tokens this round changed, with their settled values.
  events_.clear();
  for (int32_t v : touched_) {
    if (round_mark_[v] != round_id_) continue;
    const float cost = candidate_cost(best_[v]);
    const bool fresh = record_[v] >= frame_first_record_;
    if (!(cost <= (fresh ? limit_word_end : limit_beam))) continue;
    const int32_t state = v / K;
    for (int64_t a = begin[state]; a < begin[state + 1]; ++a) {
      if (ilabel[a] != 0 || olabel[a] == 0) continue;
      const float c = add_cost(cost, arc_cost[a]);
      if (!usable_cost(c)) continue;
      events_.push_back({v, static_cast<uint32_t>(a), c, record_[v], history_[v], olabel[a] - 1,
                         graph_.arc_dest[a]});
    }
  }
  changed.clear();
  if (events_.empty()) return;
  rescore_word_ends(events_, offers_);
  const uint32_t first_key = static_cast<uint32_t>(graph_.num_arcs());
  for (size_t i = 0; i < offers_.size(); ++i) {
    const WordEndOffer& o = offers_[i];
    if (usable_cost(o.cost)) offer(o.dest, o.cost, first_key + static_cast<uint32_t>(i), -1);
  }
  // Each event that holds its destination makes its record.
  for (size_t i = 0; i < offers_.size(); ++i) {
    const WordEndOffer& o = offers_[i];
    if (!usable_cost(o.cost) ||
        best_[o.dest] != pack_candidate(o.cost, first_key + static_cast<uint32_t>(i)))
      continue;
    const int32_t rec = records_.append(o.word, boundary, o.record, o.cost);
    record_[o.dest] = rec;
    history_[o.dest] = o.history;
    changed.push_back({o.dest, o.cost, rec, o.history});
  }
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
      live_.push_back({d, c, record_[d], rescorer_ != nullptr ? history_[d] : 0});
    best_[d] = kNoCandidate;
  }
  touched_.clear();
  stats_.max_live_tokens = std::max<int64_t>(stats_.max_live_tokens, live_.size());
}

std::vector<SearchToken> CpuSearcher::fetch_live() {
  std::vector<SearchToken> out = live_;
  if (slots_ > 1)
    for (SearchToken& t : out) t.state /= slots_;
  return out;
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
