// The word-lattice best path (word_lattice.h).
#include "common/search/word_lattice.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/model/ngram_model.h"
#include "common/model/ngram_view.h"

namespace gpuspeech {

void LatticeOptions::validate() const {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("lattice options: " + what);
  };
  if (!(language_weight >= 0.0f) || !std::isfinite(language_weight))
    fail("language_weight must be >= 0 and finite, got " + std::to_string(language_weight));
  auto probability = [&](const char* name, float p) {
    if (!(p > 0.0f) || !std::isfinite(p))
      fail(std::string(name) + " must be a positive probability, got " + std::to_string(p));
  };
  probability("word_insertion_penalty", word_insertion_penalty);
  probability("silence_prob", silence_prob);
  probability("filler_prob", filler_prob);
  if (max_histories < 1 || max_histories > 4096)
    fail("max_histories must be in [1, 4096], got " + std::to_string(max_histories));
  if (max_records < 16) fail("max_records must be at least 16, got " + std::to_string(max_records));
}

namespace {

// A history of at most two LM words, packed: the count in the top two
// bits, then the older and the newer word's id + 1 in 31 bits each.
using HistoryKey = uint64_t;
constexpr uint64_t kWordMask = (uint64_t{1} << 31) - 1;

HistoryKey pack_history(const int* words, int n) {
  uint64_t k = static_cast<uint64_t>(n) << 62;
  if (n >= 1) k |= (static_cast<uint64_t>(words[0]) + 1) & kWordMask;
  if (n == 2) k |= ((static_cast<uint64_t>(words[1]) + 1) & kWordMask) << 31;
  return k;
}

int unpack_history(HistoryKey k, int* words) {
  const int n = static_cast<int>(k >> 62);
  if (n >= 1) words[0] = static_cast<int>(k & kWordMask) - 1;
  if (n == 2) words[1] = static_cast<int>((k >> 31) & kWordMask) - 1;
  return n;
}

struct Node {
  int32_t word, start, end;
  float acoustic;
  float end_tail;  // +inf unless an end
};

struct PathState {
  int32_t node;  // -1: the utterance start
  int32_t prev;  // state index, -1 at the start
  double cost;
  HistoryKey history;
};

// A hash table by open addressing and linear probing, grown at half full,
// for the pass's hot maps below. std::unordered_map's allocated node
// per entry made their lookups most of the pass's time. Traits give
// `static Key empty()` (a key no entry has) and `static uint64_t
// hash(const Key&)`; keys compare with ==.
template <class Key, class Value, class Traits>
class ProbingTable {
 public:
  // The value of `k`, or null.
  Value* find(const Key& k) {
    if (size_ == 0) return nullptr;
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i].value;
      if (slots_[i].key == Traits::empty()) return nullptr;
    }
  }
  // The value of `k`; *added when it is new (then Value{}).
  Value* find_or_add(const Key& k, bool* added) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = home(k);
    while (!(slots_[i].key == Traits::empty()) && !(slots_[i].key == k)) i = (i + 1) & mask_;
    *added = slots_[i].key == Traits::empty();
    if (*added) {
      slots_[i] = {k, Value{}};
      ++size_;
    }
    return &slots_[i].value;
  }
  template <class F>
  void for_each(F f) const {
    for (const Slot& slot : slots_)
      if (!(slot.key == Traits::empty())) f(slot.value);
  }
  void release() {
    std::vector<Slot>().swap(slots_);
    mask_ = 0;
    size_ = 0;
  }

 private:
  struct Slot {
    Key key;
    Value value;
  };
  size_t home(const Key& k) const {
    return static_cast<size_t>((Traits::hash(k) * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t n = old.empty() ? 16 : 2 * old.size();
    slots_.assign(n, Slot{Traits::empty(), Value{}});
    mask_ = n - 1;
    size_ = 0;
    bool added = false;
    for (const Slot& slot : old)
      if (!(slot.key == Traits::empty())) *find_or_add(slot.key, &added) = slot.value;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// No history has both top bits set (its word count is at most 2).
constexpr HistoryKey kNoHistory = ~HistoryKey{0};

// The paths arriving at one boundary, the best per history: history ->
// state id. Every path a node extends probes it.
struct HistoryTraits {
  static HistoryKey empty() { return kNoHistory; }
  static uint64_t hash(HistoryKey h) { return h; }
};
using ArrivalMap = ProbingTable<HistoryKey, int32_t, HistoryTraits>;

// The nodes made so far: (word, start, end) -> node index.
struct NodeKey {
  uint64_t word_start;  // the word's id in the high half, its start in the low
  int32_t end;
  bool operator==(const NodeKey& o) const { return word_start == o.word_start && end == o.end; }
};
struct NodeKeyTraits {
  static NodeKey empty() { return {~uint64_t{0}, 0}; }  // no word id is all ones
  static uint64_t hash(const NodeKey& k) {
    return k.word_start ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.end)) * 0xC2B2AE3D27D4EB4Full);
  }
};
using NodeIndex = ProbingTable<NodeKey, int32_t, NodeKeyTraits>;

// Each history's LM contexts, looked up once a pass.
using ContextTable = ProbingTable<HistoryKey, NgramContext, HistoryTraits>;

}  // namespace

LatticePath lattice_best_path(const WordRecordStore& records, const std::vector<LatticeEnd>& ends,
                              const NgramModel& lm, const std::vector<int>& full_of_graph,
                              const std::vector<std::string>& graph_words,
                              const std::vector<uint8_t>& word_is_filler,
                              const LatticeOptions& options) {
  if (lm.order() > 3)
    throw std::invalid_argument("lattice: the LM's order is " + std::to_string(lm.order()) +
                                "; the lattice pass takes order 3 or less");
  const int keep = lm.order() - 1;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr double kInfCost = std::numeric_limits<double>::infinity();
  LatticePath out;

  // Nodes: records with the same (word, start, end), lowest acoustic cost.
  std::vector<Node> nodes;
  std::vector<int32_t> node_of_record(static_cast<size_t>(records.size()), -1);
  NodeIndex index;
  int32_t last_boundary = 0;
  for (int32_t r = 0; r < records.size(); ++r) {
    const WordRecord& rec = records[r];
    const int32_t start = rec.prev >= 0 ? records[rec.prev].frame : 0;
    if (rec.frame <= start) continue;  // no frame of its own: nothing to score
    const float acoustic = rec.acoustic - (rec.prev >= 0 ? records[rec.prev].acoustic : 0.0f);
    const NodeKey key{(static_cast<uint64_t>(static_cast<uint32_t>(rec.word)) << 32) |
                          static_cast<uint32_t>(start),
                      rec.frame};
    bool inserted = false;
    int32_t* index_of = index.find_or_add(key, &inserted);
    if (inserted) {
      *index_of = static_cast<int32_t>(nodes.size());
      nodes.push_back({rec.word, start, rec.frame, acoustic, kInf});
    } else {
      Node& n = nodes[static_cast<size_t>(*index_of)];
      n.acoustic = std::min(n.acoustic, acoustic);
    }
    node_of_record[static_cast<size_t>(r)] = *index_of;
    last_boundary = std::max(last_boundary, rec.frame);
  }
  out.nodes = static_cast<int64_t>(nodes.size());
  bool any_end = false;
  for (const LatticeEnd& e : ends) {
    if (e.record < 0 || e.record >= records.size()) continue;
    const int32_t n = node_of_record[static_cast<size_t>(e.record)];
    if (n < 0 || !std::isfinite(e.tail_acoustic)) continue;
    Node& node = nodes[static_cast<size_t>(n)];
    node.end_tail = std::min(node.end_tail, e.tail_acoustic);
    any_end = true;
  }
  if (!any_end) return out;
  const size_t boundaries = static_cast<size_t>(last_boundary) + 1;

  // The nodes by start, and by word within a start: the programme below
  // then computes a word's language cost after each arriving history once
  // for all its end frames. Then by end, which makes the order (and so
  // which of two paths of equal cost wins) independent of the order the
  // records came in: the device's searcher numbers a frame's records in
  // arrival order, and must give the CPU's words.
  std::vector<int32_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const Node& x = nodes[static_cast<size_t>(a)];
    const Node& y = nodes[static_cast<size_t>(b)];
    return std::tie(x.start, x.word, x.end) < std::tie(y.start, y.word, y.end);
  });
  // Of them, those from which an end can be reached, walked from the last
  // start back: the nodes that start where a node ends start later, so
  // they are decided first.
  std::vector<uint8_t> reaches_end_from(boundaries, 0);
  std::vector<int32_t> used;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = nodes[static_cast<size_t>(*it)];
    if (std::isfinite(node.end_tail) || reaches_end_from[node.end]) {
      reaches_end_from[node.start] = 1;
      used.push_back(*it);
    }
  }
  std::reverse(used.begin(), used.end());
  out.nodes_used = static_cast<int64_t>(used.size());

  // Language costs.
  const double lw = options.language_weight;
  const double word_cost = -std::log(static_cast<double>(options.word_insertion_penalty));
  const double silence_cost = -std::log(static_cast<double>(options.silence_prob));
  const double filler_cost = -std::log(static_cast<double>(options.filler_prob));
  const int sentence_start = lm.word_id("<s>");
  const int sentence_end = lm.word_id("</s>");
  // Each history's back-off contexts are looked up once (ngram_view.h),
  // leaving one or two searches of the trie per word: the score is then
  // NgramModel::score_ln's to the bit. (A memo of the costs per history
  // and word, tried before this, was slower: most pairs come once.)
  const NgramView view = lm.view();
  const double ln10 = std::log(10.0);
  ContextTable contexts;
  auto lm_cost = [&](HistoryKey h, int word) {
    bool added = false;
    NgramContext* ctx = contexts.find_or_add(h, &added);
    if (added) {
      int words[2], recent[2];
      const int n = unpack_history(h, words);
      for (int i = 0; i < n; ++i) recent[i] = words[n - 1 - i];
      *ctx = ngram_context(view, recent, n);
    }
    return -lw * (static_cast<double>(ngram_score_log10(view, *ctx, word)) * ln10);
  };
  // The cost of `word` that needs no LM: a filler's, or a word's insertion
  // penalty; *lm_word gets the word's id in the LM, -1 for a filler.
  auto fixed_cost = [&](int32_t word, int* lm_word) {
    const size_t i = static_cast<size_t>(word);
    *lm_word = i < full_of_graph.size() ? full_of_graph[i] : -1;
    if ((i < word_is_filler.size() && word_is_filler[i]) || *lm_word < 0) {
      *lm_word = -1;
      return i < graph_words.size() && graph_words[i] == "<sil>" ? silence_cost : filler_cost;
    }
    return word_cost;
  };
  // The language cost of `word` after `h`, and the history after it.
  auto language = [&](HistoryKey h, int32_t word, HistoryKey* next) {
    int full = -1;
    const double fixed = fixed_cost(word, &full);
    if (full < 0) {
      *next = h;
      return fixed;
    }
    int words[3];
    int n = unpack_history(h, words);
    words[n++] = full;
    const int from = std::max(0, n - keep);
    *next = pack_history(words + from, n - from);
    return lm_cost(h, full) + fixed;
  };
  auto end_cost = [&](HistoryKey h) {
    return sentence_end == NgramModel::kNoWord ? 0.0 : lm_cost(h, sentence_end);
  };
  // A lower bound on any word's language cost: the LM's part is never
  // negative (a probability is at most 1), the rest is a fixed cost.
  const double least_language = std::min({0.0, word_cost, silence_cost, filler_cost});

  // A lower bound on the cost from each boundary to an end: the nodes'
  // acoustic costs and fixed costs, the LM's parts taken as 0. With an
  // upper bound on the best total, a path whose cost plus the bound from
  // where it arrives is above it cannot be the best, nor lead to it.
  std::vector<double> to_end(boundaries, kInfCost);
  for (auto it = used.rbegin(); it != used.rend(); ++it) {
    const Node& node = nodes[static_cast<size_t>(*it)];
    int full = -1;
    const double after = std::min(
        std::isfinite(node.end_tail) ? static_cast<double>(node.end_tail) : kInfCost,
        to_end[static_cast<size_t>(node.end)]);
    double& from_start = to_end[static_cast<size_t>(node.start)];
    from_start = std::min(from_start, node.acoustic + fixed_cost(node.word, &full) + after);
  }
  // The upper bound: the cheapest of the ends' record chains, each a path
  // of the lattice (the search's own result is one of them).
  const HistoryKey start_history =
      keep > 0 && sentence_start != NgramModel::kNoWord ? pack_history(&sentence_start, 1)
                                                        : pack_history(nullptr, 0);
  double upper = kInfCost;
  std::vector<int32_t> chain;
  for (const LatticeEnd& e : ends) {
    if (e.record < 0 || e.record >= records.size() || !std::isfinite(e.tail_acoustic)) continue;
    chain.clear();
    bool whole = true;
    for (int32_t r = e.record; r >= 0 && whole; r = records[r].prev) {
      whole = node_of_record[static_cast<size_t>(r)] >= 0;
      chain.push_back(node_of_record[static_cast<size_t>(r)]);
    }
    if (!whole) continue;
    double cost = 0.0;
    HistoryKey h = start_history;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& node = nodes[static_cast<size_t>(*it)];
      HistoryKey next = 0;
      cost += node.acoustic + language(h, node.word, &next);
      h = next;
    }
    upper = std::min(upper, cost + e.tail_acoustic + end_cost(h));
  }

  // The dynamic programme: arrivals per boundary, best per history.
  //
  // Per boundary, the first costs of up to max_histories of the histories
  // arriving there, as a max-heap: once full, its top bounds from above
  // the max_histories-th cheapest history's cost there (histories only
  // get cheaper). A path of a new history costing more than that bound
  // can never be among the max_histories paths the boundary expands (a
  // later, cheaper path of the same history is taken when it comes), so
  // it is not kept: most histories arriving at a boundary are such (on
  // LibriVox, hundreds arrive and 32 are expanded). The result is the
  // same as keeping them (state ids shift, their order does not).
  //
  // Nor is a path kept that cannot end at `limit` or less (its cost plus
  // to_end above it). The paths that can are the same with or without
  // that rule, and so are the max_histories cheapest of them at a
  // boundary (they are the cheapest there in either case). So the
  // programme finds what it would find with no limit whenever that costs
  // `limit` or less, and otherwise nothing at `limit` or less.
  const size_t max_histories = static_cast<size_t>(options.max_histories);
  std::vector<PathState> states;
  std::vector<ArrivalMap> arrivals;
  std::vector<std::vector<double>> first_costs;
  std::vector<std::pair<double, int32_t>> here;  // (cost, state) arriving at a boundary
  // Per arriving path, the language cost of the word at hand and the
  // history after it, looked up when first needed (kNotYet before).
  std::vector<std::pair<double, HistoryKey>> after;
  constexpr double kNotYet = -std::numeric_limits<double>::infinity();
  double best_total = kInfCost;
  int32_t best_state = -1;
  auto programme = [&](double limit) {
    states.clear();
    best_total = kInfCost;
    best_state = -1;
    arrivals.assign(boundaries, ArrivalMap());
    first_costs.assign(boundaries, {});
    states.push_back({-1, -1, 0.0, start_history});
    bool added = false;
    *arrivals[0].find_or_add(start_history, &added) = 0;
    for (size_t u = 0; u < used.size();) {
      const int32_t b = nodes[static_cast<size_t>(used[u])].start;
      size_t u_end = u;
      while (u_end < used.size() && nodes[static_cast<size_t>(used[u_end])].start == b) ++u_end;
      here.clear();
      arrivals[static_cast<size_t>(b)].for_each(
          [&](int32_t s) { here.emplace_back(states[static_cast<size_t>(s)].cost, s); });
      // The cheapest max_histories, ties by state index (a fixed order).
      if (here.size() > max_histories) {
        std::nth_element(here.begin(), here.begin() + options.max_histories, here.end());
        here.resize(max_histories);
      }
      std::sort(here.begin(), here.end());
      int32_t word = -1;
      for (; u < u_end; ++u) {
        const int32_t m = used[u];
        const Node& node = nodes[static_cast<size_t>(m)];
        if (node.word != word) {
          word = node.word;
          after.assign(here.size(), {kNotYet, HistoryKey{0}});
        }
        auto& next_arrivals = arrivals[static_cast<size_t>(node.end)];
        const bool is_end = std::isfinite(node.end_tail);
        const double onward = to_end[static_cast<size_t>(node.end)];
        // The first costs of the histories kept at the node's end (a max-heap).
        std::vector<double>& bound = first_costs[static_cast<size_t>(node.end)];
        // Whether a path of this cost cannot arrive at the node's end: not
        // among the max_histories kept there, or not to end within the limit.
        auto cannot_arrive = [&](double cost) {
          return (bound.size() >= max_histories && cost > bound.front()) || cost + onward > limit;
        };
        for (size_t k = 0; k < here.size(); ++k) {
          const auto [cost, s] = here[k];
          // The paths come cheapest first and the bound only falls: once a
          // path's cost before its language part cannot arrive (nor, at an
          // end, beat the best total within the limit), so are the rest's,
          // whatever their language costs (never below least_language):
          // no more lookups for this node.
          const double floor = cost + node.acoustic + least_language;
          if (cannot_arrive(floor) &&
              (!is_end || floor + node.end_tail > std::min(best_total, limit)))
            break;
          if (after[k].first == kNotYet)
            after[k].first = language(states[static_cast<size_t>(s)].history, word, &after[k].second);
          const HistoryKey next = after[k].second;
          const double c = cost + node.acoustic + after[k].first;
          const double total = is_end ? c + node.end_tail + end_cost(next) : kInfCost;
          // Above a full heap's top, the path cannot be among the
          // boundary's max_histories expanded ones whatever its history,
          // new or held: that many histories there cost at most the top
          // already. So the arrivals are not even looked up (most paths
          // are such).
          const bool past_bound = cannot_arrive(c);
          int32_t* held = past_bound ? nullptr : next_arrivals.find(next);
          const bool better_arrival =
              !past_bound && (held == nullptr || c < states[static_cast<size_t>(*held)].cost);
          const bool better_end = total < best_total && total <= limit;
          if (!better_arrival && !better_end) continue;
          const int32_t id = static_cast<int32_t>(states.size());
          states.push_back({m, s, c, next});
          if (better_arrival && held != nullptr) {
            *held = id;
          } else if (better_arrival) {  // a new history there: its first cost joins the bound
            *next_arrivals.find_or_add(next, &added) = id;
            bound.push_back(c);
            std::push_heap(bound.begin(), bound.end());
            if (bound.size() > max_histories) {
              std::pop_heap(bound.begin(), bound.end());
              bound.pop_back();
            }
          }
          if (better_end) {
            best_total = total;
            best_state = id;
          }
        }
      }
      arrivals[static_cast<size_t>(b)].release();
    }
  };
  // Within the upper bound first: most paths cannot end there. The limit
  // has a little slack, as the programme may sum a path's parts in another
  // grouping than the bound did. If the history bound dropped every path
  // that cheap (the search's own among them), again with no limit.
  programme(upper + 1e-6 * std::max(1.0, std::fabs(upper)));
  if (best_state < 0) programme(kInfCost);
  if (best_state < 0) return out;

  out.found = true;
  out.cost = best_total;
  for (int32_t s = best_state; s >= 0 && states[static_cast<size_t>(s)].node >= 0;
       s = states[static_cast<size_t>(s)].prev) {
    const Node& node = nodes[static_cast<size_t>(states[static_cast<size_t>(s)].node)];
    out.words.push_back({node.word, node.start, node.end, node.acoustic});
  }
  std::reverse(out.words.begin(), out.words.end());
  return out;
}

}  // namespace gpuspeech
