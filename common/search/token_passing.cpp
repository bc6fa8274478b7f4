// The host half of token passing shared by the CPU and CUDA searchers: the
// options, the word-record store and its garbage collection, and every
// result built from the live tokens (see token_passing.h for the rules).
#include "common/search/token_passing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/engine/fiber_pool.h"
#include "common/search/lm_rescorer.h"
#include "common/search/radix_sort.h"
#include "common/search/search_arithmetic.h"
#include "common/search/word_end_offers.h"
#include "common/search/word_lattice.h"
#include "common/seconds_since.h"

namespace gpuspeech {

void SearchOptions::validate() const {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("search options: " + what);
  };
  if (!(beam > 0.0f) || !std::isfinite(beam))
    fail("beam must be positive and finite, got " + std::to_string(beam));
  if (!(word_end_beam > 0.0f) || word_end_beam > beam)
    fail("word_end_beam must be in (0, beam], got " + std::to_string(word_end_beam));
  if (max_active < 1) fail("max_active must be at least 1, got " + std::to_string(max_active));
  if (!(acoustic_scale > 0.0f) || !std::isfinite(acoustic_scale))
    fail("acoustic_scale must be positive and finite, got " + std::to_string(acoustic_scale));
  if (histogram_bins < 2 || histogram_bins > 65536)
    fail("histogram_bins must be in [2, 65536], got " + std::to_string(histogram_bins));
  if (max_word_records < 16 || max_word_records > (int64_t{1} << 30))
    fail("max_word_records must be in [16, 2^30], got " + std::to_string(max_word_records));
  if (max_epsilon_passes < 1)
    fail("max_epsilon_passes must be at least 1, got " + std::to_string(max_epsilon_passes));
  if (!(posterior_scale > 0.0f) || !std::isfinite(posterior_scale))
    fail("posterior_scale must be positive and finite, got " + std::to_string(posterior_scale));
  if (lm_histories < 1 || lm_histories > 64)
    fail("lm_histories must be in [1, 64], got " + std::to_string(lm_histories));
  lattice.validate();
}

// --- WordRecordStore --------------------------------------------------------

WordRecordStore::WordRecordStore(int64_t capacity) : capacity_(capacity) {}

int32_t WordRecordStore::append(int32_t word, int32_t frame, int32_t prev, float cost,
                                float acoustic) {
  if (records_.size() >= static_cast<size_t>(INT32_MAX))
    throw std::length_error("word record store: more than 2^31 records");
  WordRecord r;
  r.word = word;
  r.frame = frame;
  r.prev = prev;
  r.cost = cost;
  r.acoustic = acoustic;
  records_.push_back(r);
  return static_cast<int32_t>(records_.size() - 1);
}

int64_t WordRecordStore::collect(int32_t* roots, size_t num_roots) {
  const size_t n = records_.size();
  // Mark: walk each root's chain until it meets a record already marked
  // (chains share their beginnings, so each record is visited once).
  std::vector<int32_t> remap(n, -1);  // -1 = dead; marked = 0 for now
  for (size_t i = 0; i < num_roots; ++i)
    for (int32_t r = roots[i]; r >= 0 && remap[r] < 0; r = records_[r].prev) remap[r] = 0;
  // Compact in order: a record's predecessor has a lower index, so it is
  // already renumbered when the record moves.
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (remap[i] < 0) continue;
    WordRecord r = records_[i];
    if (r.prev >= 0) r.prev = remap[r.prev];
    remap[i] = static_cast<int32_t>(out);
    records_[out++] = r;
  }
  records_.resize(out);
  for (size_t i = 0; i < num_roots; ++i)
    if (roots[i] >= 0) roots[i] = remap[roots[i]];
  while (static_cast<int64_t>(out) * 2 > capacity_) capacity_ *= 2;
  return static_cast<int64_t>(n - out);
}

std::vector<int32_t> WordRecordStore::chain(int32_t last) const {
  std::vector<int32_t> out;
  for (int32_t r = last; r >= 0; r = records_[r].prev) out.push_back(r);
  std::reverse(out.begin(), out.end());
  return out;
}

int32_t WordRecordStore::depth_of(int32_t r) {
  if (r < 0) return 0;
  if (records_[r].depth > 0) return records_[r].depth;
  // Up the chain to the first record whose depth is known (or past the
  // first record), then down again numbering: each record is numbered once.
  depth_path_.clear();
  int32_t q = r;
  while (q >= 0 && records_[q].depth == 0) {
    depth_path_.push_back(q);
    q = records_[q].prev;
  }
  int32_t d = q >= 0 ? records_[q].depth : 0;
  for (auto it = depth_path_.rbegin(); it != depth_path_.rend(); ++it) records_[*it].depth = ++d;
  return d;
}

int32_t WordRecordStore::common_ancestor(const std::vector<int32_t>& lasts) {
  if (lasts.empty()) return -1;
  int32_t a = lasts[0];
  for (size_t i = 1; i < lasts.size() && a >= 0; ++i) {
    int32_t b = lasts[i];
    if (b == a) continue;
    while (depth_of(b) > depth_of(a)) b = records_[b].prev;
    while (depth_of(a) > depth_of(b)) a = records_[a].prev;
    while (a != b) {
      a = records_[a].prev;
      b = records_[b].prev;
    }
  }
  return a;
}

// --- Hypothesis -------------------------------------------------------------

std::string Hypothesis::text() const {
  std::string s;
  for (const HypothesisWord& w : words) {
    if (!s.empty()) s += ' ';
    s += w.text;
  }
  return s;
}

// --- Searcher ---------------------------------------------------------------

void Searcher::check_graph(const SearchGraph& graph, bool rescoring) {
  graph.validate();
  if (graph.num_arcs() >= search::kMaxArcs)
    throw std::invalid_argument("search graph has " + std::to_string(graph.num_arcs()) +
                                " arcs; the search handles at most 2^32 - 1");
  if (graph.num_states() < 1) throw std::invalid_argument("search graph has no states");
  if (rescoring)
    for (int64_t a = 0; a < graph.num_arcs(); ++a)
      if (graph.arc_ilabel[a] != 0 && graph.arc_olabel[a] != 0)
        throw std::invalid_argument(
            "search graph has word labels on emitting arcs; word-end rescoring needs them on "
            "epsilon arcs (compile with word_labels_on_epsilon)");
}

Searcher::Searcher(const SearchGraph& graph, const SearchOptions& options, LmRescorer* rescorer,
                   GraphCheck check)
    : graph_(graph), options_(options), rescorer_(rescorer), records_(options.max_word_records) {
  options_.validate();
  if (check == GraphCheck::kCheck) check_graph(graph_, rescorer_ != nullptr);
  if (rescorer_ != nullptr) {
    slots_ = options_.lm_histories;
    if (static_cast<int64_t>(graph_.num_states()) * slots_ > INT32_MAX)
      throw std::invalid_argument("search graph has " + std::to_string(graph_.num_states()) +
                                  " states; with " + std::to_string(slots_) +
                                  " LM histories per state that is more than 2^31 tokens");
    if (options_.lattice.enabled() && rescorer_->full_lm().order() > 3)
      throw std::invalid_argument("search options: the lattice pass takes an LM of order 3 or "
                                  "less; " + rescorer_->full_lm().source() + " has order " +
                                  std::to_string(rescorer_->full_lm().order()));
  }
  stats_.record_capacity = records_.capacity();
}

Searcher::~Searcher() = default;

void Searcher::check_advance(const float* loglik, int64_t frames, int64_t columns) const {
  if (!started_) throw std::logic_error(std::string(name()) + " searcher: advance() before reset()");
  if (frames < 0) throw std::invalid_argument("advance: negative frame count");
  if (frames > 0 && loglik == nullptr) throw std::invalid_argument("advance: null scores");
  if (columns < graph_.num_senones)
    throw std::invalid_argument("advance: scores have " + std::to_string(columns) +
                                " columns but the graph uses " +
                                std::to_string(graph_.num_senones) + " senones");
  if (static_cast<int64_t>(frames_) + frames > INT32_MAX - 1)
    throw std::invalid_argument("advance: utterance longer than 2^31 frames");
}

int Searcher::max_active_cutoff_bin(const std::vector<uint32_t>& histogram, int64_t kept,
                                    int max_active) {
  const int bins = static_cast<int>(histogram.size());
  if (kept <= max_active) return bins;
  int64_t cum = 0;
  for (int k = 0; k < bins; ++k) {
    cum += histogram[k];
    if (cum > max_active) return std::max(k, 1);
  }
  return bins;
}

float Searcher::final_total(const SearchToken& t) const {
  float c = search::add_cost(t.cost, graph_.final_cost[t.state]);
  if (rescorer_ != nullptr && search::usable_cost(c))
    c = search::add_cost(c, history_end_delta(t.history));
  return c;
}

float Searcher::history_end_delta(int32_t history) const { return rescorer_->end_delta(history); }

std::vector<std::string> Searcher::history_words(int32_t history) const {
  if (rescorer_ == nullptr) return {};
  return rescorer_->history_words(history);
}

bool Searcher::grow_records_for_lattice(bool keeping) {
  if (!keeping || lattice_given_up_) return false;
  if (records_.size() < options_.lattice.max_records) {
    records_.grow(std::min<int64_t>(2 * records_.capacity(), options_.lattice.max_records));
    stats_.record_capacity = records_.capacity();
    return true;
  }
  lattice_given_up_ = true;
  return false;
}

void Searcher::reset_rescorer() {
  if (rescorer_ != nullptr) rescorer_->reset();
}

void Searcher::rescore_word_ends(std::vector<WordEndEvent>& events,
                                 std::vector<WordEndOffer>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_seconds();
  // (source, arc) order. The batched CUDA lanes hand most rounds' events
  // over in that order already (place_events in token_passing.cu), and
  // a check is a fraction of a sort; otherwise sorting 16-byte (key,
  // index) pairs moves less than sorting the events themselves.
  const size_t n = events.size();
  bool in_order = true;
  uint64_t prev_key = 0;
  for (size_t i = 0; i < n && in_order; ++i) {
    const uint64_t key = word_end_event_key(events[i].source, events[i].arc);
    in_order = i == 0 || prev_key < key;
    prev_key = key;
  }
  if (!in_order) {
    sort_scratch_.resize(n);
    for (size_t i = 0; i < n; ++i)
      sort_scratch_[i] = {word_end_event_key(events[i].source, events[i].arc),
                          static_cast<uint32_t>(i)};
    radix_sort_by_key(sort_scratch_, sort_scratch_spare_);
    ++stats_.rescore_rounds_sorted;
  }
  out.resize(n);
  if (static_cast<uint64_t>(graph_.num_arcs()) + n >= search::kNoArc)
    throw std::length_error("search: too many word-end events in one frame (" +
                            std::to_string(n) + ")");
  const uint32_t K = static_cast<uint32_t>(slots_);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t from = in_order ? static_cast<uint32_t>(i) : sort_scratch_[i].second;
    const WordEndEvent& e = events[from];
    const LmRescorer::WordEnd we = rescorer_->word_end(e.history, e.word);
    WordEndOffer& o = out[i];
    o.dest = e.dest * slots_ + static_cast<int32_t>(we.history_hash % K);
    o.cost = search::add_cost(e.cost, we.delta);
    o.word = e.word;
    o.record = e.record;
    o.history = we.history;
    o.acoustic = e.acoustic;
  }
  stats_.word_end_events += static_cast<int64_t>(events.size());
  if (!events.empty()) ++stats_.rescore_rounds;
  stats_.rescore_seconds += seconds_since(t0);
  stats_.rescore_cpu_seconds += thread_cpu_seconds() - c0;
}

int Searcher::best_token(const std::vector<SearchToken>& live, float* total,
                         bool* final_state) const {
  // Lowest (cost + final cost, state) among final states, else lowest
  // (cost, state): the same order on every searcher.
  bool any_final = false;
  for (const SearchToken& t : live)
    if (search::usable_cost(final_total(t))) any_final = true;
  int best = -1;
  uint64_t best_key = search::kNoCandidate;
  for (size_t i = 0; i < live.size(); ++i) {
    const float c = any_final ? final_total(live[i]) : live[i].cost;
    if (!search::usable_cost(c)) continue;
    const uint64_t key = search::pack_candidate(c, static_cast<uint32_t>(live[i].state));
    if (key < best_key) {
      best_key = key;
      best = static_cast<int>(i);
    }
  }
  *final_state = any_final;
  *total = best >= 0 ? search::candidate_cost(best_key) : SearchGraph::kInfinity;
  return best;
}

bool Searcher::is_filler_word(int32_t word) const {
  return word >= 0 && static_cast<size_t>(word) < graph_.word_is_filler.size() &&
         graph_.word_is_filler[word] != 0;
}

std::vector<HypothesisWord> Searcher::words_of(int32_t record, int32_t* num_records) const {
  std::vector<HypothesisWord> out;
  const std::vector<int32_t> chain = records_.chain(record);
  *num_records = static_cast<int32_t>(chain.size());
  int32_t start = 0;
  for (int32_t r : chain) {
    const WordRecord& rec = records_[r];
    // A word ends on the frame before the boundary its label was passed at.
    const int32_t end = rec.frame - 1;
    if (!is_filler_word(rec.word)) {
      HypothesisWord w;
      w.word = rec.word;
      w.text = static_cast<size_t>(rec.word) < graph_.words.size()
                   ? graph_.words[rec.word]
                   : "<word " + std::to_string(rec.word) + ">";
      w.start_frame = start;
      w.end_frame = std::max(end, start - 1);
      w.cost = rec.cost;
      out.push_back(std::move(w));
    }
    start = std::max(start, rec.frame);
  }
  return out;
}

void Searcher::set_filler_senones(const std::vector<uint8_t>& is_filler_senone) {
  set_state_kinds(state_kinds(graph_, is_filler_senone));
}

void Searcher::set_state_kinds(std::shared_ptr<const std::vector<uint8_t>> kinds) {
  if (!kinds || kinds->size() != static_cast<size_t>(graph_.num_states()))
    throw std::invalid_argument("set_state_kinds: " + std::to_string(kinds ? kinds->size() : 0) +
                                " entries for a graph of " +
                                std::to_string(graph_.num_states()) + " states");
  state_kind_ = std::move(kinds);
}

std::shared_ptr<const std::vector<uint8_t>> Searcher::state_kinds(
    const SearchGraph& graph, const std::vector<uint8_t>& is_filler_senone) {
  if (static_cast<int64_t>(is_filler_senone.size()) < graph.num_senones)
    throw std::invalid_argument("set_filler_senones: " + std::to_string(is_filler_senone.size()) +
                                " entries for a graph of " + std::to_string(graph.num_senones) +
                                " senones");
  // What a token in a state is inside: the kind of the senone on the
  // emitting arcs into the state (after the compiler's self-loop step all of
  // them emit one HMM state); a state entered only by epsilon arcs without
  // a word label inherits its sources' kind. A state entered both ways, or
  // from both kinds, stays unknown (read as "inside a word": a word is
  // never taken for silence). States behind a word label need no kind: a
  // token there passed the label at this very boundary.
  constexpr uint8_t kUnset = 0, kWord = 1, kFiller = 2, kMixed = 3;
  // Per state, its kind in the low two bits and kEmittingIn when an emitting
  // arc enters it: one byte a state, so that the walk over every arc below
  // (19.4 M on the en-us graph, into 7.4 M states in no order) touches one
  // place per arc.
  constexpr uint8_t kKindBits = 3, kEmittingIn = 4;
  const int32_t n = graph.num_states();
  std::vector<uint8_t> state(n, kUnset);
  auto merge = [](uint8_t a, uint8_t b) { return a == kUnset || a == b ? b : kMixed; };
  // The epsilon arcs without a word label, in graph order: the passes below
  // walk only these (438 k of the en-us graph's 19.4 M arcs), in the order a
  // walk of every arc would meet them, so each pass changes what it would.
  std::vector<std::pair<int32_t, int32_t>> epsilon_arcs;
  for (int32_t s = 0; s < n; ++s)
    for (int64_t a = graph.arc_begin[s]; a < graph.arc_begin[s + 1]; ++a) {
      const int32_t il = graph.arc_ilabel[a];
      const int32_t d = graph.arc_dest[a];
      if (il == 0) {
        if (graph.arc_olabel[a] == 0) epsilon_arcs.emplace_back(s, d);
        continue;
      }
      if (il < 0) continue;
      const uint8_t k = merge(state[d] & kKindBits, is_filler_senone[il - 1] ? kFiller : kWord);
      state[d] = static_cast<uint8_t>(k | kEmittingIn);
    }
  // Epsilon chains are short; a bounded number of passes reaches them all
  // (merge only moves up unset -> kind -> mixed, so this terminates).
  for (int pass = 0; pass < 16; ++pass) {
    bool changed = false;
    for (const auto& [s, d] : epsilon_arcs) {
      const uint8_t from = state[s] & kKindBits;
      if (from == kUnset || (state[d] & kEmittingIn)) continue;
      const uint8_t k = merge(state[d], from);
      if (k != state[d]) {
        state[d] = k;
        changed = true;
      }
    }
    if (!changed) break;
  }
  auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n), kUnknownState);
  for (int32_t s = 0; s < n; ++s) {
    const uint8_t k = state[s] & kKindBits;
    (*out)[s] = k == kWord ? kWordState : k == kFiller ? kFillerState : kUnknownState;
  }
  return out;
}

int32_t Searcher::trailing_silence(const SearchToken& t) const {
  // The segment in progress (since the token's last record) is a filler or
  // the silence after a word if the token's state says so; the records
  // before it back to the last non-filler word are fillers by definition.
  const int32_t segment_start = t.record >= 0 ? records_[t.record].frame : 0;
  if (segment_start < frames_ && state_kind_ &&
      (t.state < 0 || static_cast<size_t>(t.state) >= state_kind_->size() ||
       (*state_kind_)[t.state] != kFillerState))
    return 0;  // inside a word
  int32_t r = t.record;
  while (r >= 0 && is_filler_word(records_[r].word)) r = records_[r].prev;
  const int32_t word_end = r >= 0 ? records_[r].frame : 0;
  return std::max(0, frames_ - word_end);
}

Searcher::SequencePosteriors Searcher::sequence_posteriors(const std::vector<SearchToken>& live,
                                                           bool with_final_costs) const {
  SequencePosteriors sp;
  // Tokens with the same record have the same words: the best per record
  // first (live tokens far outnumber records), then per word sequence.
  struct Best {
    uint64_t key;
    int token;
  };
  std::unordered_map<int32_t, Best> by_record;
  by_record.reserve(live.size() / 4 + 16);
  for (size_t i = 0; i < live.size(); ++i) {
    const SearchToken& t = live[i];
    const float total = with_final_costs ? final_total(t) : t.cost;
    if (!search::usable_cost(total)) continue;
    const uint64_t key = search::pack_candidate(total, static_cast<uint32_t>(t.state));
    auto ins = by_record.emplace(t.record, Best{key, static_cast<int>(i)});
    if (!ins.second && key < ins.first->second.key) ins.first->second = Best{key, static_cast<int>(i)};
  }
  std::map<std::vector<int32_t>, std::pair<Best, int32_t>> by_words;  // -> (best, record)
  for (const auto& kv : by_record) {
    std::vector<int32_t> seq;
    for (int32_t r = kv.first; r >= 0; r = records_[r].prev)
      if (!is_filler_word(records_[r].word)) seq.push_back(records_[r].word);
    auto it = by_words.find(seq);
    // (key, record): a deterministic winner whatever order the tokens came in.
    if (it == by_words.end())
      by_words.emplace(std::move(seq), std::make_pair(kv.second, kv.first));
    else if (kv.second.key < it->second.first.key ||
             (kv.second.key == it->second.first.key && kv.first < it->second.second))
      it->second = std::make_pair(kv.second, kv.first);
  }
  sp.entries.reserve(by_words.size());
  for (auto& kv : by_words) {
    SequencePosteriors::Entry e;
    e.key = kv.second.first.key;
    e.token = kv.second.first.token;
    e.sequence = kv.first;
    int32_t nrec = 0;
    e.words = words_of(kv.second.second, &nrec);
    e.posterior = 0.0;
    sp.entries.push_back(std::move(e));
  }
  // Best first; equal keys (only with LM-history slots) in word order.
  std::stable_sort(sp.entries.begin(), sp.entries.end(),
                   [](const SequencePosteriors::Entry& a, const SequencePosteriors::Entry& b) {
                     return a.key < b.key;
                   });
  if (sp.entries.empty()) return sp;
  const double best_total = search::candidate_cost(sp.entries[0].key);
  for (SequencePosteriors::Entry& e : sp.entries) {
    const double d = search::candidate_cost(e.key) - best_total;
    e.posterior = std::exp(-static_cast<double>(options_.posterior_scale) * d);
    sp.sum += e.posterior;
  }
  return sp;
}

void Searcher::set_confidences(Hypothesis& h, const SequencePosteriors& sp) const {
  if (sp.entries.empty() || !(sp.sum > 0.0)) return;
  std::vector<int32_t> seq;
  for (auto it = h.words.rbegin(); it != h.words.rend(); ++it) seq.push_back(it->word);
  for (const SequencePosteriors::Entry& e : sp.entries)
    if (e.sequence == seq) {
      h.confidence = static_cast<float>(std::min(1.0, e.posterior / sp.sum));
      break;
    }
  // Word confidence: posterior mass of the sequences that have the same
  // word over an overlapping span.
  for (HypothesisWord& w : h.words) {
    double mass = 0.0;
    for (const SequencePosteriors::Entry& e : sp.entries)
      for (const HypothesisWord& o : e.words)
        if (o.word == w.word && o.start_frame <= w.end_frame && w.start_frame <= o.end_frame) {
          mass += e.posterior;
          break;
        }
    w.confidence = static_cast<float>(std::min(1.0, mass / sp.sum));
  }
}

Hypothesis Searcher::best() {
  Hypothesis h;
  h.frames = frames_;
  if (!started_) return h;
  const std::vector<SearchToken> live = fetch_live();
  float total = 0.0f;
  bool fin = false;
  const int b = best_token(live, &total, &fin);
  if (b < 0) return h;
  int32_t n = 0;
  h.words = words_of(live[b].record, &n);
  h.cost = total;
  h.final_state = fin;
  h.trailing_silence_frames = trailing_silence(live[b]);
  if (lattice_active() && lattice_result_) lattice_words(live, fin, &h.words);
  set_confidences(h, sequence_posteriors(live, fin));
  return h;
}

void Searcher::lattice_words(const std::vector<SearchToken>& live, bool final_only,
                             std::vector<HypothesisWord>* words) {
  const std::vector<float> acoustic = live_acoustic();
  if (acoustic.size() != live.size()) return;  // not kept: the Viterbi path stands
  // The utterance may end in any token best() could have picked from.
  std::vector<LatticeEnd> ends;
  for (size_t i = 0; i < live.size(); ++i) {
    const SearchToken& t = live[i];
    if (t.record < 0 || (final_only && !search::usable_cost(final_total(t)))) continue;
    ends.push_back({t.record, acoustic[i] - records_[t.record].acoustic});
  }
  // Off the fiber, if on one: the pass takes tens of milliseconds, which
  // would hold up the other streams of the fiber's worker thread.
  LatticePath path;
  run_off_fiber([&] {
    const auto t0 = std::chrono::steady_clock::now();
    path = lattice_best_path(records_, ends, rescorer_->full_lm(), rescorer_->full_of_graph(),
                             graph_.words, graph_.word_is_filler, options_.lattice);
    stats_.lattice_seconds = seconds_since(t0);
  });
  stats_.lattice_nodes = path.nodes;
  stats_.lattice_nodes_used = path.nodes_used;
  if (!path.found) return;
  words->clear();
  double cost = 0.0;
  for (const LatticeWord& lw : path.words) {
    cost += lw.acoustic;
    if (is_filler_word(lw.word)) continue;
    HypothesisWord w;
    w.word = lw.word;
    w.text = static_cast<size_t>(lw.word) < graph_.words.size()
                 ? graph_.words[lw.word]
                 : "<word " + std::to_string(lw.word) + ">";
    w.start_frame = lw.start;
    w.end_frame = lw.end - 1;
    w.cost = static_cast<float>(cost);
    words->push_back(std::move(w));
  }
}

Hypothesis Searcher::partial() {
  Hypothesis h;
  h.frames = frames_;
  if (!started_) return h;
  const std::vector<SearchToken> live = fetch_live();
  // Partial results follow the best path so far, final or not.
  int best_any = -1;
  for (size_t i = 0; i < live.size(); ++i) {
    if (!search::usable_cost(live[i].cost)) continue;
    if (best_any < 0) {
      best_any = static_cast<int>(i);
      continue;
    }
    const uint64_t ki = search::pack_candidate(live[i].cost, static_cast<uint32_t>(live[i].state));
    const uint64_t kb =
        search::pack_candidate(live[best_any].cost, static_cast<uint32_t>(live[best_any].state));
    if (ki < kb) best_any = static_cast<int>(i);
  }
  if (best_any < 0) return h;
  int32_t n = 0;
  h.words = words_of(live[best_any].record, &n);
  h.cost = live[best_any].cost;
  h.final_state = false;
  h.trailing_silence_frames = trailing_silence(live[best_any]);
  std::vector<int32_t> lasts;
  lasts.reserve(live.size());
  for (const SearchToken& t : live) lasts.push_back(t.record);
  std::sort(lasts.begin(), lasts.end());
  lasts.erase(std::unique(lasts.begin(), lasts.end()), lasts.end());
  const int32_t shared = records_.common_ancestor(lasts);
  int32_t shared_records = 0;
  const std::vector<HypothesisWord> stable = words_of(shared, &shared_records);
  h.stable_words = static_cast<int32_t>(stable.size());
  set_confidences(h, sequence_posteriors(live, false));
  return h;
}

std::vector<int32_t> Searcher::active_senones() {
  std::vector<int32_t> out;
  if (!started_) return out;
  for (const SearchToken& t : fetch_live())
    for (int64_t a = graph_.arc_begin[t.state]; a < graph_.arc_begin[t.state + 1]; ++a)
      if (graph_.arc_ilabel[a] > 0) out.push_back(graph_.arc_ilabel[a] - 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Hypothesis> Searcher::nbest(int n) {
  std::vector<Hypothesis> out;
  if (!started_ || n < 1) return out;
  const std::vector<SearchToken> live = fetch_live();
  // Candidate totals: final states only if any token is in one.
  bool any_final = false;
  for (const SearchToken& t : live)
    if (search::usable_cost(final_total(t))) any_final = true;
  // Posteriors over all distinct sequences (not only the n returned).
  const SequencePosteriors sp = sequence_posteriors(live, any_final);
  const size_t keep = std::min(sp.entries.size(), static_cast<size_t>(n));
  for (size_t i = 0; i < keep; ++i) {
    Hypothesis h;
    h.frames = frames_;
    h.words = sp.entries[i].words;
    h.cost = static_cast<float>(search::candidate_cost(sp.entries[i].key));
    h.final_state = any_final;
    h.trailing_silence_frames = trailing_silence(live[sp.entries[i].token]);
    set_confidences(h, sp);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace gpuspeech
