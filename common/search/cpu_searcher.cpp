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
                         LmRescorer* rescorer, GraphCheck check)
    : Searcher(graph, options, rescorer, check) {
  histogram_.assign(static_cast<size_t>(options_.histogram_bins), 0);
  keep_acoustic_ = options_.lattice.enabled() && rescorer_ != nullptr;
}

void CpuSearcher::clear_frame() {
  index_.clear();
  best_.clear();
  source_.clear();
  record_.clear();
  history_.clear();
  acoustic_.clear();
  round_mark_.clear();
  stamp_.clear();
}

void CpuSearcher::reset() {
  // A frame interrupted by an exception may have left states behind.
  clear_frame();
  live_.clear();
  live_acoustic_.clear();
  lattice_given_up_ = false;
  records_ = WordRecordStore(options_.max_word_records);
  stats_ = SearchStats{};
  stats_.record_capacity = records_.capacity();
  frames_ = 0;
  started_ = false;  // until the start token's closure is done
  frame_first_record_ = 0;
  reset_rescorer();

  // The start token: history 0 in its slot.
  int32_t s = graph_.start_state;
  if (rescorer_ != nullptr)
    s = s * slots_ + static_cast<int32_t>(rescorer_->history_hash(LmRescorer::kStartHistory) %
                                          static_cast<uint32_t>(slots_));
  const int32_t i = offer(s, 0.0f, search::kNoArc, -1);
  record_[i] = -1;
  history_[i] = LmRescorer::kStartHistory;
  std::vector<Changed> changed{{i, 0.0f, -1, 0, 0.0f}};
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

int32_t CpuSearcher::offer(int32_t d, float cost, uint32_t arc, int32_t source) {
  const uint64_t key = pack_candidate(cost, arc);
  bool inserted = false;
  const int32_t i = index_.find_or_insert(d, &inserted);
  if (inserted) {
    best_.push_back(kNoCandidate);
    source_.push_back(-1);
    record_.push_back(-1);
    history_.push_back(0);
    acoustic_.push_back(0.0f);
    round_mark_.push_back(0);
    stamp_.push_back(0);
  }
  uint64_t& slot = best_[static_cast<size_t>(i)];
  if (key >= slot) return -1;
  slot = key;
  source_[static_cast<size_t>(i)] = source;
  return i;
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
  float bound = SearchGraph::kInfinity;
  float skip_above = SearchGraph::kInfinity;
  for (size_t t = 0; t < live_.size(); ++t) {
    const SearchToken& tok = live_[t];
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
      offer(dest[a] * K + slot, c, static_cast<uint32_t>(a), static_cast<int32_t>(t));
    }
  }
  stats_.tokens_expanded += static_cast<int64_t>(live_.size());

  // The emitting step's winners, their records, and the best cost.
  std::vector<Changed> changed;
  changed.reserve(static_cast<size_t>(index_.size()));
  float best_emit = SearchGraph::kInfinity;
  for (int32_t i = 0; i < index_.size(); ++i) {
    const uint64_t key = best_[i];
    const float c = candidate_cost(key);
    const uint32_t a = candidate_arc(key);
    const SearchToken& from = live_[static_cast<size_t>(source_[i])];
    // The acoustic part follows the winner (the same term emitting_cost
    // added to its cost).
    const float ac = keep_acoustic_ ? search::acoustic_after(live_acoustic_[static_cast<size_t>(source_[i])],
                                                             scale, row[ilabel[a] - 1])
                                    : 0.0f;
    acoustic_[i] = ac;
    int32_t rec = from.record;
    // (With a rescorer the graph has no word label on emitting arcs.)
    if (olabel[a] > 0) rec = records_.append(olabel[a] - 1, boundary, rec, c, ac);
    record_[i] = rec;
    const int32_t hist = rescorer_ != nullptr ? from.history : 0;
    history_[i] = hist;
    changed.push_back({i, c, rec, hist, ac});
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
      for (const Changed& c : changed) round_mark_[c.local] = round_id_;
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
      const int32_t v = index_.state_at(e.local);
      const int32_t state = v / K;
      const int32_t slot = v - state * K;
      for (int64_t a = begin[state]; a < begin[state + 1]; ++a) {
        if (ilabel[a] != 0) continue;
        if (rescoring && olabel[a] != 0) continue;  // a word end: the word-end step's
        const float c = add_cost(e.cost, arc_cost[a]);
        if (!usable_cost(c)) continue;
        const int32_t d = offer(dest[a] * K + slot, c, static_cast<uint32_t>(a), e.local);
        if (d >= 0 && stamp_[d] != pass_id_) {
          stamp_[d] = pass_id_;
          next.push_back({d, 0.0f, -1, 0, 0.0f});
        }
      }
    }
    // Records from the sources' values as of the previous pass, committed
    // only once all are known (a source may itself have changed now).
    for (Changed& n : next) {
      const uint64_t key = best_[n.local];
      n.cost = candidate_cost(key);
      const uint32_t a = candidate_arc(key);
      n.acoustic = acoustic_[source_[n.local]];
      int32_t rec = record_[source_[n.local]];
      if (olabel[a] > 0) rec = records_.append(olabel[a] - 1, boundary, rec, n.cost, n.acoustic);
      n.record = rec;
      if (rescoring) n.history = history_[source_[n.local]];
    }
    for (const Changed& n : next) {
      record_[n.local] = n.record;
      acoustic_[n.local] = n.acoustic;
      if (rescoring) {
        history_[n.local] = n.history;
        round_mark_[n.local] = round_id_;
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
  for (int32_t i = 0; i < index_.size(); ++i) {
    if (round_mark_[i] != round_id_) continue;
    const float cost = candidate_cost(best_[i]);
    const bool fresh = record_[i] >= frame_first_record_;
    if (!(cost <= (fresh ? limit_word_end : limit_beam))) continue;
    const int32_t v = index_.state_at(i);
    const int32_t state = v / K;
    for (int64_t a = begin[state]; a < begin[state + 1]; ++a) {
      if (ilabel[a] != 0 || olabel[a] == 0) continue;
      const float c = add_cost(cost, arc_cost[a]);
      if (!usable_cost(c)) continue;
      events_.push_back({v, static_cast<uint32_t>(a), c, record_[i], history_[i], olabel[a] - 1,
                         graph_.arc_dest[a], keep_acoustic_ ? acoustic_[i] : 0.0f});
    }
  }
  changed.clear();
  if (events_.empty()) return;
  rescore_word_ends(events_, offers_);
  const uint32_t first_key = static_cast<uint32_t>(graph_.num_arcs());
  // Only offers within the beam are made (search::offer_in_beam says why).
  for (size_t i = 0; i < offers_.size(); ++i) {
    const WordEndOffer& o = offers_[i];
    if (search::offer_in_beam(o.cost, best_emit, options_.beam))
      offer(o.dest, o.cost, first_key + static_cast<uint32_t>(i), -1);
  }
  // Each event that holds its destination makes its record.
  for (size_t i = 0; i < offers_.size(); ++i) {
    const WordEndOffer& o = offers_[i];
    if (!search::offer_in_beam(o.cost, best_emit, options_.beam)) continue;
    const int32_t d = index_.find(o.dest);  // offered above, so present
    if (best_[d] != pack_candidate(o.cost, first_key + static_cast<uint32_t>(i))) continue;
    const float ac = o.acoustic;
    const int32_t rec = records_.append(o.word, boundary, o.record, o.cost, ac);
    record_[d] = rec;
    history_[d] = o.history;
    acoustic_[d] = ac;
    changed.push_back({d, o.cost, rec, o.history, ac});
  }
}

void CpuSearcher::prune() {
  live_.clear();
  live_acoustic_.clear();
  const int32_t n = index_.size();
  if (n == 0) return;
  float best = SearchGraph::kInfinity;
  for (int32_t i = 0; i < n; ++i) best = std::min(best, candidate_cost(best_[i]));
  const float limit_beam = add_cost(best, options_.beam);
  const float limit_word_end = add_cost(best, options_.word_end_beam);
  const int bins = options_.histogram_bins;
  const float bin_scale = static_cast<float>(bins) / options_.beam;
  auto within_beam = [&](int32_t i, float c) {
    const bool fresh = record_[i] >= frame_first_record_;
    return c <= (fresh ? limit_word_end : limit_beam);
  };
  std::fill(histogram_.begin(), histogram_.end(), 0u);
  int64_t kept = 0;
  for (int32_t i = 0; i < n; ++i) {
    const float c = candidate_cost(best_[i]);
    if (!within_beam(i, c)) continue;
    ++kept;
    ++histogram_[search::histogram_bin(c, best, bin_scale, bins)];
  }
  const int cut = max_active_cutoff_bin(histogram_, kept, options_.max_active);
  for (int32_t i = 0; i < n; ++i) {
    const float c = candidate_cost(best_[i]);
    if (within_beam(i, c) && search::histogram_bin(c, best, bin_scale, bins) < cut) {
      live_.push_back({index_.state_at(i), c, record_[i], rescorer_ != nullptr ? history_[i] : 0});
      if (keep_acoustic_) live_acoustic_.push_back(acoustic_[i]);
    }
  }
  clear_frame();
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
  if (grow_records_for_lattice(keep_acoustic_)) return;
  std::vector<int32_t> roots(live_.size());
  for (size_t i = 0; i < live_.size(); ++i) roots[i] = live_[i].record;
  stats_.records_collected += records_.collect(roots.data(), roots.size());
  for (size_t i = 0; i < live_.size(); ++i) live_[i].record = roots[i];
  ++stats_.collections;
  stats_.record_capacity = records_.capacity();
}

}  // namespace gpuspeech
