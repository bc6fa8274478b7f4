// CUDA kernels of token passing. See token_passing.cuh for the device state
// and common/search/token_passing.h for the rules; every float operation
// goes through common/search/search_arithmetic.h so that the results are the
// CPU reference's bit for bit.
//
// Work distribution: a group of threads per token over its arcs (kGroup, or
// c_emit_group in the emitting step: most states have a handful), except
// tokens with more than kHeavyDegree arcs (word-end fan-out into a language
// model), which go to a heavy list that a second kernel expands with a
// whole block per token.
//
// Ways to run a round: the single-stream kernels (one stream's items over
// the grid, the cooperative round kernel among them), and the two lanes
// kernels of the batched search (the last sections): the cooperative one
// walks the items of many streams, "lanes", over one grid; the cluster one
// gives each lane a cluster of blocks that runs the single-stream round.
#include "kernels/cuda/token_passing.cuh"

#include <algorithm>
#include <atomic>

#include <cooperative_groups.h>

#include "common/search/search_arithmetic.h"
#include "common/search/word_end_offers.h"

namespace cg = cooperative_groups;

namespace gpuspeech {
namespace cuda {
namespace {

using search::add_cost;
using search::candidate_arc;
using search::candidate_cost;
using search::cost_key;
using search::key_cost;
using search::kNoArc;
using search::kNoCandidate;
using search::pack_candidate;
using search::usable_cost;

constexpr int kThreads = 256;
// Threads that share one token's arcs: most states have a handful of arcs
// (self-loop, next state, a few cross-word ones), so a whole warp per token
// would leave most threads idle.
constexpr int kGroup = 8;
// Groups per block: blockDim.x / kGroup (the lanes kernel's blocks may be
// larger than kThreads).
__device__ __forceinline__ uint32_t groups_per_block() { return blockDim.x / kGroup; }
// Threads per token in the emitting step of every kernel on the device:
// kGroup unless tp_set_emit_group changed it. CudaSearcher sets it once per
// process and device: two when the first search there is batched (with the
// device full of lanes, the idle threads of a wider group cost);
// GPUSPEECH_EMIT_GROUP anything else. Results do not depend on it.
__constant__ int c_emit_group = kGroup;

// The blocks that share one stream's work in a phase of the single-stream
// kernels, and this block's rank among them (the whole grid).
struct Team {
  uint32_t rank;
  uint32_t size;
};

__device__ __forceinline__ Team grid_team() { return Team{blockIdx.x, gridDim.x}; }

// The threads of this warp that are here now and name the same `target`
// (in the lanes kernel a warp's items may belong to different streams,
// whose counters differ); the lowest is their leader.
__device__ __forceinline__ unsigned same_target_peers(const void* target) {
  return __match_any_sync(__activemask(), reinterpret_cast<unsigned long long>(target));
}
__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }

// A slot in a list whose length is *counter: the threads of a warp that
// append to it together take consecutive slots with one atomic (tens of
// thousands of appends a frame to one counter would otherwise serialise).
__device__ __forceinline__ uint32_t append_slot(uint32_t* counter) {
  const unsigned peers = same_target_peers(counter);
  const unsigned rank = __popc(peers & ((1u << lane_id()) - 1u));
  uint32_t base = 0;
  if (rank == 0) base = atomicAdd(counter, static_cast<uint32_t>(__popc(peers)));
  return __shfl_sync(peers, base, __ffs(peers) - 1) + rank;
}

// The minimum / sum of v over the threads here with the same target, then
// one atomic per target (lanes kernel: any thread, any time).
__device__ __forceinline__ void min_into(uint32_t* target, uint32_t v) {
  const unsigned peers = same_target_peers(target);
  const uint32_t m = __reduce_min_sync(peers, v);
  if (lane_id() == static_cast<unsigned>(__ffs(peers) - 1) && m != 0xFFFFFFFFu) atomicMin(target, m);
}
__device__ __forceinline__ void add_into(uint32_t* target, uint32_t v) {
  const unsigned peers = same_target_peers(target);
  const uint32_t sum = __reduce_add_sync(peers, v);
  if (lane_id() == static_cast<unsigned>(__ffs(peers) - 1) && sum != 0) atomicAdd(target, sum);
}

// Minimum over the warp, then one atomicMin per warp. Every lane of the
// warp must call it (lanes with nothing to offer pass 0xFFFFFFFF).
__device__ __forceinline__ void warp_min_into(uint32_t* target, uint32_t v) {
  for (int off = 16; off > 0; off >>= 1) {
    const uint32_t o = __shfl_xor_sync(0xffffffffu, v, off);
    v = o < v ? o : v;
  }
  if ((threadIdx.x & 31) == 0 && v != 0xFFFFFFFFu) atomicMin(target, v);
}

// Arc a, unpacked. Graph reads go through the read-only cache: the graph
// never changes while kernels run.
struct Arc {
  int32_t dest;
  uint8_t dest_flags;  // kStateEpsilon | kStateWordArc of dest
  float cost;
  int32_t ilabel;
  int32_t olabel;
};
__device__ __forceinline__ Arc load_arc(const TpGraph& g, uint32_t a) {
  const int4 v = __ldg(reinterpret_cast<const int4*>(g.arcs) + a);
  const uint32_t d = static_cast<uint32_t>(v.x);
  return Arc{static_cast<int32_t>(d & kStateIndexMask),
             static_cast<uint8_t>(d >> kStateFlagShift), __int_as_float(v.y), v.z, v.w};
}

// A graph state's arcs [begin, end) and flags.
struct StateArcs {
  uint32_t begin;
  uint32_t end;
  uint8_t flags;
  __device__ uint32_t degree() const { return end - begin; }
};
__device__ __forceinline__ StateArcs state_arcs(const TpGraph& g, int32_t state) {
  const uint2 d = __ldg(g.states + state);
  return StateArcs{d.x, d.x + (d.y & kStateIndexMask), static_cast<uint8_t>(d.y >> kStateFlagShift)};
}
// A graph state's epsilon arcs, as entries [begin, end) of g.eps_arcs: all
// of them, or (rescoring: word-label arcs wait for the word-end step) the
// plain ones only, or the word-label ones only.
enum class EpsKind { kAll, kPlain, kWord };
__device__ __forceinline__ StateArcs eps_arcs_of(const TpGraph& g, int32_t state, EpsKind kind) {
  const uint2 d = __ldg(g.eps_states + state);
  const uint32_t next = __ldg(&g.eps_states[state + 1].x);
  switch (kind) {
    case EpsKind::kPlain: return StateArcs{d.x, d.x + d.y, 0};
    case EpsKind::kWord: return StateArcs{d.x + d.y, next, 0};
    default: return StateArcs{d.x, next, 0};
  }
}
__device__ __forceinline__ uint8_t state_flags(const TpGraph& g, int32_t state) {
  return static_cast<uint8_t>(__ldg(&g.states[state].y) >> kStateFlagShift);
}

// Where virtual state v's probe sequence begins (Fibonacci hashing: the
// top bits of v times 2^32 / phi spread neighbouring states apart).
__device__ __forceinline__ uint32_t table_home(uint32_t shift, int32_t v) {
  return (static_cast<uint32_t>(v) * 0x9E3779B1u) >> shift;
}

// v's entry in `entries` (mask + 1 of them, linear probing), claimed if v
// has none; -1 if the table is full. Keys only go from free to taken between
// barriers, so a stale read of a free key is corrected by the CAS.
__device__ __forceinline__ int32_t find_or_insert(TpEntry* entries, uint32_t mask, uint32_t shift,
                                                  int32_t v) {
  uint32_t h = table_home(shift, v);
  for (uint32_t probe = 0; probe <= mask; ++probe, h = (h + 1) & mask) {
    int32_t k = entries[h].key;
    if (k == v) return static_cast<int32_t>(h);
    if (k == kEmptyKey) {
      k = atomicCAS(&entries[h].key, kEmptyKey, v);
      if (k == kEmptyKey || k == v) return static_cast<int32_t>(h);
    }
  }
  return -1;
}

// v's entry in `entries`, or -1 if it has none (no insertion runs meanwhile).
__device__ __forceinline__ int32_t find_entry(const TpEntry* entries, uint32_t mask, uint32_t shift,
                                              int32_t v) {
  uint32_t h = table_home(shift, v);
  for (uint32_t probe = 0; probe <= mask; ++probe, h = (h + 1) & mask) {
    const int32_t k = entries[h].key;
    if (k == v) return static_cast<int32_t>(h);
    if (k == kEmptyKey) return -1;
  }
  return -1;
}

__device__ __forceinline__ void note_overflow(const TpState& s) {
  atomicOr(&s.counters->overflow, 1u);
}

// A slot at the end of `list` (changed_capacity or heavy_capacity tokens,
// `capacity`), or null past its end: the token is lost and an overflow
// counted, as for the table (the lists hold what a frame within
// table_limit can put there).
__device__ __forceinline__ TpToken* list_slot(const TpState& s, TpToken* list, uint32_t* counter,
                                              uint32_t capacity) {
  const uint32_t i = append_slot(counter);
  if (i < capacity) return list + i;
  note_overflow(s);
  return nullptr;
}

// Whether the token state keeps acoustic parts (the word-lattice pass:
// TpState::winner_acoustic and its siblings are set).
__device__ __forceinline__ bool keeps_acoustic(const TpState& s) { return s.winner_acoustic != nullptr; }

// Offers candidate `key` to virtual state v. Returns v's entry if its value
// dropped, else -1; the thread that first fills an entry's candidate adds
// the entry to the touched list. A full table loses the offer and counts
// an overflow (the frame runs again with a larger table).
__device__ __forceinline__ int32_t offer(const TpState& s, int32_t v, uint64_t key) {
  const int32_t e = find_or_insert(s.entries, s.table_mask, s.table_shift, v);
  if (e < 0) {
    note_overflow(s);
    return -1;
  }
  const unsigned long long old = atomicMin(&s.entries[e].best, static_cast<unsigned long long>(key));
  if (old == kNoCandidate) {
    // At most one append per entry, so the list never outgrows the table.
    const uint32_t t = append_slot(&s.counters->touched);
    s.touched[t] = e;
    if (t >= s.table_limit) note_overflow(s);
  }
  return key < old ? e : -1;
}

// Appends a word record; returns its global index. Past the staging
// capacity the record is counted but not written: the host sees the
// overflow and runs the frame again with a larger buffer.
__device__ __forceinline__ int32_t stage_record(const TpState& s, const TpFrame& f,
                                                int32_t word, int32_t prev, float cost,
                                                float acoustic) {
  const uint32_t i = append_slot(&s.counters->records);
  if (i < s.staging_capacity) {
    TpRecord r;
    r.word = word;
    r.frame = f.boundary;
    r.prev = prev;
    r.cost = cost;
    s.staging[f.staging_base + i] = r;
    if (s.staging_acoustic != nullptr) s.staging_acoustic[f.staging_base + i] = acoustic;
  }
  return f.first_record + static_cast<int32_t>(i);
}

// A new closure round (the host's offers) begins: its collection starts
// from no events and an empty word-end list.
__device__ __forceinline__ void begin_round_collection(TpCounters* c) {
  c->events = 0;
  c->word_ends = 0;
}

// A frame's counters at its start; live[f.live_in] (the previous frame's
// list) is kept.
__device__ __forceinline__ void reset_counters(TpCounters* c, const TpFrame& f) {
  c->touched = 0;
  c->changed[0] = 0;
  c->changed[1] = 0;
  c->heavy = 0;
  c->live[1 - f.live_in] = 0;
  c->records = 0;
  c->winners = 0;
  c->relax_winners[0] = 0;
  c->relax_winners[1] = 0;
  c->best_emit_key = 0xFFFFFFFFu;
  c->emit_bound_key = 0xFFFFFFFFu;
  c->best_key = 0xFFFFFFFFu;
  c->kept = 0;
  c->cut_bin = f.bins;
  c->passes = 0;
  c->passes_run = 0;
  c->last_changed = 0;
  begin_round_collection(c);
  c->overflow = 0;
  c->word_end_rounds = 0;
  c->word_end_events = 0;
  c->history_full = 0;
}

// Winner e (at a state with these flags) changed in this round. Its round
// mark says so; a word-end state joins the round's word-end list the first
// time the round changes it (the exchange keeps one entry even if two
// phases' threads raced, which the barriers already rule out).
__device__ __forceinline__ void mark_changed(const TpState& s, const TpFrame& f, int32_t e,
                                             uint8_t flags) {
  if ((flags & kStateWordArc) == 0) {
    s.entries[e].round_mark = f.round_id;
    return;
  }
  if (atomicExch(&s.entries[e].round_mark, f.round_id) == f.round_id) return;
  const uint32_t slot = atomicAdd(&s.counters->word_ends, 1u);
  if (slot < s.word_end_capacity) s.word_ends[slot] = e;
}

__global__ void frame_begin_kernel(TpState s, const TpFrame* __restrict__ fp) {
  const TpFrame f = *fp;
  if (blockIdx.x == 0 && threadIdx.x == 0) reset_counters(s.counters, f);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < f.bins; i += gridDim.x * blockDim.x)
    s.histogram[i] = 0;
}

// The start token (the table is empty: its entry is its home slot).
__device__ __forceinline__ void start_token(const TpState& s, const TpFrame& f) {
  const int32_t e = find_or_insert(s.entries, s.table_mask, s.table_shift, f.start_state);
  s.entries[e].best = pack_candidate(0.0f, kNoArc);
  s.entries[e].record = -1;
  if (keeps_acoustic(s)) s.entries[e].acoustic = 0.0f;
  if (s.rescoring) {
    s.entries[e].hist = f.start_history;
    // The graph is not at hand here: the start token joins the word-end
    // list whatever its state (the collection skips states without a
    // word arc).
    s.entries[e].round_mark = f.round_id;
    s.word_ends[0] = e;
    s.counters->word_ends = 1;
  }
  s.touched[0] = e;
  TpToken t;
  t.state = e;
  t.cost = 0.0f;
  t.record = -1;
  t.hist = s.rescoring ? f.start_history : 0;
  s.changed[0][0] = t;
  s.counters->touched = 1;
  s.counters->changed[0] = 1;
  s.counters->best_emit_key = cost_key(0.0f);
  s.counters->best_key = cost_key(0.0f);
}

__global__ void start_kernel(TpState s, const TpFrame* __restrict__ fp) { start_token(s, *fp); }

// Emitting arcs of one token, the threads of its group striding over them.
// Virtual state -> graph state (slots = 1 without rescoring: the same).
__device__ __forceinline__ int32_t graph_state(const TpGraph& g, int32_t v) {
  return g.slots == 1 ? v : v / g.slots;
}

// The winner logs (TpWinner): the emitting step's takes the whole buffer;
// closure pass p's takes half p % 2 (the emitting step's log is read
// before pass 0 writes). Each has its own counter.
struct WinnerLog {
  TpWinner* base;
  uint32_t* count;
  uint32_t capacity;
  float* acoustic;  // beside base (TpState::winner_acoustic), or null
};
__device__ __forceinline__ WinnerLog emit_log(const TpState& s) {
  return WinnerLog{s.winners, &s.counters->winners, s.winner_capacity, s.winner_acoustic};
}
__device__ __forceinline__ WinnerLog relax_log(const TpState& s, int parity) {
  const uint32_t half = s.winner_capacity / 2;
  return WinnerLog{s.winners + parity * half, &s.counters->relax_winners[parity], half,
                   s.winner_acoustic != nullptr ? s.winner_acoustic + parity * half : nullptr};
}
// The logged offers to resolve (past the log's capacity the frame
// overflowed and runs again).
__device__ __forceinline__ uint32_t log_items(const WinnerLog& w) { return min(*w.count, w.capacity); }

// The offer of arc a from token `tok` lowered entry e's value: it may be
// e's winner, which takes the source token's record and history, and the
// candidate's acoustic part `acoustic` (lattice pass).
__device__ __forceinline__ void log_winner(const TpState& s, const WinnerLog& w, int32_t e, uint32_t a,
                                           const TpToken& tok, float acoustic) {
  const uint32_t i = append_slot(w.count);
  if (i < w.capacity) {
    *reinterpret_cast<int4*>(w.base + i) = make_int4(e, static_cast<int32_t>(a), tok.record, tok.hist);
    if (w.acoustic != nullptr) w.acoustic[i] = acoustic;
  } else {  // the frame runs again with larger tables (and logs)
    note_overflow(s);
  }
}

// Entry e's winner (at a state with these flags), committed: its record
// and, with rescoring, its history and round mark. Returns it as a token.
// Both kinds of winner come here: a logged offer's and the host's.
__device__ __forceinline__ TpToken commit_winner(const TpState& s, const TpFrame& f, int32_t e,
                                                 float cost, int32_t rec, int32_t hist,
                                                 float acoustic, uint8_t flags) {
  s.entries[e].record = rec;
  if (keeps_acoustic(s)) s.entries[e].acoustic = acoustic;
  TpToken t{e, cost, rec, 0};
  if (s.rescoring) {
    t.hist = hist;
    s.entries[e].hist = hist;
    mark_changed(s, f, e, flags);
  }
  return t;
}

// Logged offer i: if it is its entry's winner, the entry's record and
// history, its round mark, and its token (returned in *t, its state's
// flags in *flags); false for an offer that a lower one superseded.
__device__ __forceinline__ bool resolve_winner(const TpGraph& g, const TpState& s, const TpFrame& f,
                                               const WinnerLog& w, uint32_t i, TpToken* t,
                                               uint8_t* flags) {
  const int4 v = *reinterpret_cast<const int4*>(w.base + i);
  const int32_t e = v.x;
  const uint64_t key = s.entries[e].best;
  const uint32_t a = candidate_arc(key);
  if (a != static_cast<uint32_t>(v.y)) return false;
  const float c = candidate_cost(key);
  const Arc arc = load_arc(g, a);
  const float ac = w.acoustic != nullptr ? w.acoustic[i] : 0.0f;
  int32_t rec = v.z;
  if (arc.olabel > 0) rec = stage_record(s, f, arc.olabel - 1, rec, c, ac);
  *t = commit_winner(s, f, e, c, rec, v.w, ac, arc.dest_flags);
  *flags = arc.dest_flags;
  return true;
}

__device__ __forceinline__ void emit_arcs(const TpGraph& g, const TpState& s, const TpFrame& f,
                                          const TpToken& tok, float tok_acoustic, const StateArcs& r,
                                          uint32_t first, uint32_t step) {
  const int32_t state = graph_state(g, tok.state);
  const int32_t slot = tok.state - state * g.slots;
  // The CPU searcher's skip: a candidate more than `beam` above one
  // already offered in this step is more than `beam` above the step's best,
  // so it neither relaxes in the closure (word_end_beam <= beam) nor
  // survives pruning, and it is not offered. The lowest offered candidate
  // so far is the lane's emit_bound_key; which one a thread has seen
  // depends on timing, but any offered candidate makes the rule exact.
  uint32_t bound = *reinterpret_cast<const volatile uint32_t*>(&s.counters->emit_bound_key);
  float skip_above = bound == 0xFFFFFFFFu ? __int_as_float(0x7f800000) : add_cost(key_cost(bound), f.beam);
  for (uint32_t a = r.begin + first; a < r.end; a += step) {
    const Arc arc = load_arc(g, a);
    if (arc.ilabel == 0) continue;
    const float loglik = f.loglik[arc.ilabel - 1];
    const float c = search::emitting_cost(tok.cost, arc.cost, f.acoustic_scale, loglik);
    if (!usable_cost(c) || c > skip_above) continue;
    const uint32_t k = cost_key(c);
    if (k < bound) {
      bound = min(k, atomicMin(&s.counters->emit_bound_key, k));
      skip_above = add_cost(key_cost(bound), f.beam);
    }
    const int32_t e = offer(s, arc.dest * g.slots + slot, pack_candidate(c, a));
    if (e >= 0)
      log_winner(s, emit_log(s), e, a, tok,
                 keeps_acoustic(s) ? search::acoustic_after(tok_acoustic, f.acoustic_scale, loglik) : 0.0f);
  }
}
// Heavy token h of the emitting step, its arcs from `first` by `step`.
__device__ __forceinline__ void emit_heavy_arcs(const TpGraph& g, const TpState& s, const TpFrame& f,
                                                uint32_t h, uint32_t first, uint32_t step) {
  const TpToken tok = s.heavy[h];
  const float ac = keeps_acoustic(s) ? s.heavy_acoustic[h] : 0.0f;
  emit_arcs(g, s, f, tok, ac, state_arcs(g, graph_state(g, tok.state)), first, step);
}

// The phases below are written per item (a token, a touched entry, an
// offer): the single-stream kernels loop over one stream's items, the
// lanes kernel over the items of every lane of a launch (the last
// section), so both run the same rules.

// Emitting step, live token i, by the c_emit_group threads of a group (`sub`:
// this thread's rank in the group).
__device__ __forceinline__ void emit_item(const TpGraph& g, const TpState& s, const TpFrame& f,
                                          uint32_t i, int sub, int width) {
  const TpToken tok = s.live[f.live_in][i];
  const float ac = keeps_acoustic(s) ? s.live_acoustic[f.live_in][i] : 0.0f;
  const StateArcs r = state_arcs(g, graph_state(g, tok.state));
  if (r.degree() > kHeavyDegree) {
    if (sub == 0) {
      TpToken* slot = list_slot(s, s.heavy, &s.counters->heavy, s.heavy_capacity);
      if (slot != nullptr) {
        *slot = tok;
        if (keeps_acoustic(s)) s.heavy_acoustic[slot - s.heavy] = ac;
      }
    }
    return;
  }
  emit_arcs(g, s, f, tok, ac, r, sub, width);
}

__device__ __forceinline__ void emit_phase(const Team& t, const TpGraph& g, const TpState& s, const TpFrame& f) {
  const uint32_t n = s.counters->live[f.live_in];
  const uint32_t width = c_emit_group;
  const uint32_t groups = blockDim.x / width;
  for (uint32_t i = t.rank * groups + threadIdx.x / width; i < n; i += t.size * groups)
    emit_item(g, s, f, i, static_cast<int>(threadIdx.x % width), static_cast<int>(width));
}

// One block per heavy token, its threads striding over the arcs.
__device__ __forceinline__ void emit_heavy_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                 const TpFrame& f) {
  const uint32_t n = min(s.counters->heavy, s.heavy_capacity);
  for (uint32_t h = t.rank; h < n; h += t.size) emit_heavy_arcs(g, s, f, h, threadIdx.x, blockDim.x);
}

// The emitting step's winners: records, changed[0], the best cost.
// Logged offer i (TpWinner): if it is its entry's winner, the entry's
// record, history and place in changed[0]; returns the winner's cost key
// (0xFFFFFFFF for an offer that a lower one superseded), the caller keeps
// the minimum.
__device__ __forceinline__ uint32_t emit_resolve_item(const TpGraph& g, const TpState& s,
                                                      const TpFrame& f, uint32_t i) {
  TpToken t;
  uint8_t flags = 0;
  if (!resolve_winner(g, s, f, emit_log(s), i, &t, &flags)) return 0xFFFFFFFFu;
  // Only tokens with epsilon arcs to relax start the closure (their
  // records are final already).
  if (flags & kStateEpsilon) {
    TpToken* slot = list_slot(s, s.changed[0], &s.counters->changed[0], s.changed_capacity);
    if (slot != nullptr) *slot = t;
  }
  return cost_key(t.cost);
}

__device__ __forceinline__ void emit_resolve_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                   const TpFrame& f) {
  const uint32_t n = log_items(emit_log(s));
  uint32_t best = 0xFFFFFFFFu;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const uint32_t k = emit_resolve_item(g, s, f, i);
    best = k < best ? k : best;
  }
  warp_min_into(&s.counters->best_emit_key, best);
  if (t.rank == 0 && threadIdx.x == 0) s.counters->heavy = 0;
}

__global__ void emit_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  emit_phase(grid_team(), g, s, *fp);
}
__global__ void emit_heavy_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  emit_heavy_phase(grid_team(), g, s, *fp);
}
__global__ void emit_resolve_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  emit_resolve_phase(grid_team(), g, s, *fp);
}

// Epsilon arcs r of one token of closure pass p (its entry's slot given:
// the caller has loaded the entry already); an offer that lowers its
// destination's value goes to the pass's winner log (half p % 2).
__device__ __forceinline__ void relax_arcs(const TpGraph& g, const TpState& s, const TpToken& tok,
                                           const StateArcs& r, int32_t slot, int in, uint32_t first,
                                           uint32_t step) {
  // The source's part as of the previous pass: its entry was committed
  // there and is not committed again before this pass's resolve phase.
  const float ac = keeps_acoustic(s) ? s.entries[tok.state].acoustic : 0.0f;
  for (uint32_t i = r.begin + first; i < r.end; i += step) {
    const uint32_t a = __ldg(g.eps_arcs + i);
    const Arc arc = load_arc(g, a);
    const float c = add_cost(tok.cost, arc.cost);
    if (!usable_cost(c)) continue;
    const int32_t e = offer(s, arc.dest * g.slots + slot, pack_candidate(c, a));
    if (e >= 0) log_winner(s, relax_log(s, in), e, a, tok, ac);
  }
}

// The closure's epsilon arcs of a state: word-label arcs are the word-end
// step's when rescoring.
__device__ __forceinline__ StateArcs closure_arcs(const TpGraph& g, int32_t state) {
  return eps_arcs_of(g, state, g.rescoring ? EpsKind::kPlain : EpsKind::kAll);
}

// The same for a token alone (the heavy phase: its entry is loaded here).
__device__ __forceinline__ void relax_arcs(const TpGraph& g, const TpState& s, const TpToken& tok,
                                           int in, uint32_t first, uint32_t step) {
  const int32_t v = s.entries[tok.state].key;  // a changed token holds its entry
  const int32_t state = graph_state(g, v);
  relax_arcs(g, s, tok, closure_arcs(g, state), v - state * g.slots, in, first, step);
}

// Closure pass `pass`, changed token i (of changed[pass % 2]), by a group.
__device__ __forceinline__ void relax_item(const TpGraph& g, const TpState& s, const TpFrame& f,
                                           int pass, uint32_t i, int sub) {
  const int in = pass & 1;
  const TpToken tok = s.changed[in][i];
  const int32_t v = s.entries[tok.state].key;  // a changed token holds its entry
  const int32_t state = graph_state(g, v);
  if ((state_flags(g, state) & kStateEpsilon) == 0) return;
  const float best_emit = key_cost(s.counters->best_emit_key);
  const bool fresh = tok.record >= f.first_record;
  if (!(tok.cost <= add_cost(best_emit, fresh ? f.word_end_beam : f.beam))) return;
  // Heavy by the arcs it relaxes (at most its degree, so the graph's heavy
  // states still cover it).
  const StateArcs r = closure_arcs(g, state);
  if (r.degree() > kHeavyDegree) {
    if (sub == 0) {
      TpToken* slot = list_slot(s, s.heavy, &s.counters->heavy, s.heavy_capacity);
      if (slot != nullptr) *slot = tok;
    }
    return;
  }
  relax_arcs(g, s, tok, r, v - state * g.slots, in, sub, kGroup);
}

__device__ __forceinline__ void relax_phase(const Team& t, const TpGraph& g, const TpState& s, const TpFrame& f,
                                            int pass) {
  const uint32_t n = min(s.counters->changed[pass & 1], s.changed_capacity);
  for (uint32_t i = t.rank * groups_per_block() + threadIdx.x / kGroup; i < n;
       i += t.size * groups_per_block())
    relax_item(g, s, f, pass, i, threadIdx.x % kGroup);
}

__device__ __forceinline__ void relax_heavy_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                  const TpFrame& f, int pass) {
  const int in = pass & 1;
  const uint32_t n = min(s.counters->heavy, s.heavy_capacity);
  for (uint32_t h = t.rank; h < n; h += t.size)
    relax_arcs(g, s, s.heavy[h], in, threadIdx.x, blockDim.x);
}

// Logged offer i of closure pass `pass`: if it is its entry's winner, the
// entry's record and history (its source's as of the previous pass: the
// log carries them), and its token joins changed[1 - pass % 2] for the
// next pass. Returns the winner's cost key (0xFFFFFFFF for a superseded
// offer), for the frame's best.
__device__ __forceinline__ uint32_t relax_resolve_item(const TpGraph& g, const TpState& s,
                                                       const TpFrame& f, int pass, uint32_t i) {
  const int in = pass & 1;
  TpToken t;
  uint8_t flags = 0;
  if (!resolve_winner(g, s, f, relax_log(s, in), i, &t, &flags)) return 0xFFFFFFFFu;
  TpToken* slot = list_slot(s, s.changed[1 - in], &s.counters->changed[1 - in], s.changed_capacity);
  if (slot != nullptr) *slot = t;
  return cost_key(t.cost);
}
__device__ __forceinline__ uint32_t relax_resolve_items(const TpState& s, int pass) {
  return log_items(relax_log(s, pass & 1));
}

// A pass's counters, by one thread beside its winners (same phase: it
// touches nothing they read). The pass changed something exactly when
// its log holds an offer (every entry whose value dropped has its winner
// there).
__device__ __forceinline__ void relax_resolve_lane(const TpState& s, int pass) {
  const int in = pass & 1;
  const uint32_t n = s.counters->relax_winners[in];
  if (s.counters->changed[in] > 0) s.counters->passes_run += 1;
  s.counters->changed[in] = 0;            // consumed; this phase's winners fill the other
  s.counters->relax_winners[1 - in] = 0;  // the next pass's log
  s.counters->heavy = 0;
  s.counters->last_changed = n;
  if (n > 0) s.counters->passes += 1;
}

__device__ __forceinline__ void relax_resolve_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                    const TpFrame& f, int pass) {
  const uint32_t n = relax_resolve_items(s, pass);
  uint32_t best = 0xFFFFFFFFu;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const uint32_t k = relax_resolve_item(g, s, f, pass, i);
    best = k < best ? k : best;
  }
  warp_min_into(&s.counters->best_key, best);
  if (t.rank == 0 && threadIdx.x == 0) relax_resolve_lane(s, pass);
}

__global__ void relax_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp, int pass) {
  relax_phase(grid_team(), g, s, *fp, pass);
}
__global__ void relax_heavy_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp, int pass) {
  relax_heavy_phase(grid_team(), g, s, *fp, pass);
}
__global__ void relax_resolve_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp, int pass) {
  relax_resolve_phase(grid_team(), g, s, *fp, pass);
}

// Rescoring: a round's CUDA graph ends with pruning, which must run only if
// the round was the frame's last (no word-end events) and needs no rerun or
// continuation (closure settled, records within the staging buffer). The
// condition is the same for every thread, so a gated kernel returns as a
// whole. The host reads the same counters to learn whether pruning ran.
__device__ __forceinline__ bool prune_held_back(const TpState& s, bool gated) {
  if (!gated) return false;
  const TpCounters* c = s.counters;
  return c->events != 0 || c->last_changed != 0 || c->records > s.staging_capacity ||
         c->overflow != 0;
}

// The pruning step's four parts are bodies shared by the separate kernels
// (below) and the fused round kernel's phases.
// What pruning compares costs with, from the frame's best cost
// (min(best_key, best_emit_key): the minimum over every winner the frame's
// resolve phases made, the emitting step's kept apart as the closure's beam
// needs it alone, the start token's included: an entry's final value is the
// last winner it got, and no winner is below its entry's final value, so
// the minimum over winners is the minimum over touched entries without a
// walk over them): the best itself (histogram bins
// count from it) and the highest cost a token keeps, by the beam or, for a
// fresh word end, the word-end beam. Every pruning phase, single-stream or
// lanes, takes them from here.
struct PruneLimits {
  float best, beam, word_end;
};
__device__ __forceinline__ PruneLimits prune_limits(const TpState& s, const TpFrame& f) {
  const uint32_t k = min(s.counters->best_key, s.counters->best_emit_key);
  const float best = key_cost(k);
  return {best, add_cost(best, f.beam), add_cost(best, f.word_end_beam)};
}

__device__ __forceinline__ bool within_beam(const TpState& s, const TpFrame& f, int32_t d, float c,
                                            const PruneLimits& lim) {
  const bool fresh = s.entries[d].record >= f.first_record;
  return c <= (fresh ? lim.word_end : lim.beam);
}

// Touched entry i's histogram bin, or -1 outside its beam.
__device__ __forceinline__ int prune_bin(const TpState& s, const TpFrame& f, uint32_t i,
                                         const PruneLimits& lim) {
  const int32_t d = s.touched[i];
  const float c = candidate_cost(s.entries[d].best);
  if (!within_beam(s, f, d, c, lim)) return -1;
  return search::histogram_bin(c, lim.best, f.bin_scale, f.bins);
}

// Counts in a per-block histogram in shared memory (the bins near the best
// cost get most tokens: global atomics on them would serialise), then adds
// the block's non-zero bins to the global one.
__device__ __forceinline__ void prune_histogram_body(const Team& t, const TpState& s, const TpFrame& f,
                                                     uint32_t* block_hist) {
  for (int k = threadIdx.x; k < f.bins; k += blockDim.x) block_hist[k] = 0;
  __syncthreads();
  const uint32_t n = s.counters->touched;
  const PruneLimits lim = prune_limits(s, f);
  uint32_t kept = 0;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const int bin = prune_bin(s, f, i, lim);
    if (bin < 0) continue;
    ++kept;
    atomicAdd(block_hist + bin, 1u);
  }
  for (int off = 16; off > 0; off >>= 1) kept += __shfl_xor_sync(0xffffffffu, kept, off);
  if ((threadIdx.x & 31) == 0 && kept > 0) atomicAdd(&s.counters->kept, kept);
  __syncthreads();
  for (int k = threadIdx.x; k < f.bins; k += blockDim.x)
    if (block_hist[k] != 0) atomicAdd(s.histogram + k, block_hist[k]);
}

__global__ void prune_histogram_kernel(TpState s, const TpFrame* __restrict__ fp, bool gated) {
  if (prune_held_back(s, gated)) return;
  extern __shared__ uint32_t block_hist[];
  prune_histogram_body(grid_team(), s, *fp, block_hist);
}

// The same rule as Searcher::max_active_cutoff_bin, by one block (of at
// most kCutoffThreads threads): each thread sums a run of bins, a
// block-wide scan gives each run's starting count, and the first bin where
// the running count passes max_active wins.
constexpr int kCutoffThreads = 1024;

__device__ __forceinline__ void prune_cutoff_body(const TpState& s, const TpFrame& f) {
  TpCounters* c = s.counters;
  if (c->kept <= static_cast<uint32_t>(f.max_active)) {  // the same for all threads
    if (threadIdx.x == 0) c->cut_bin = f.bins;
    return;
  }
  __shared__ uint32_t warp_total[kCutoffThreads / 32];
  __shared__ int cut;
  const int per = (f.bins + blockDim.x - 1) / blockDim.x;
  const int first = threadIdx.x * per;
  const int last = first + per < f.bins ? first + per : f.bins;
  uint32_t run = 0;
  for (int k = first; k < last; ++k) run += s.histogram[k];
  // Inclusive scan of the runs: within each warp, then over warp totals.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t incl = run;
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t o = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += o;
  }
  if (lane == 31) warp_total[warp] = incl;
  if (threadIdx.x == 0) cut = f.bins;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    uint32_t t = lane < warps ? warp_total[lane] : 0;
    for (int off = 1; off < 32; off <<= 1) {
      const uint32_t o = __shfl_up_sync(0xffffffffu, t, off);
      if (lane >= off) t += o;
    }
    if (lane < warps) warp_total[lane] = t;  // inclusive over warps
  }
  __syncthreads();
  uint64_t cum = static_cast<uint64_t>(incl - run) + (warp > 0 ? warp_total[warp - 1] : 0);
  for (int k = first; k < last; ++k) {
    cum += s.histogram[k];
    if (cum > static_cast<uint64_t>(f.max_active)) {
      atomicMin(&cut, k);
      break;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) c->cut_bin = cut < 1 ? 1 : cut;  // max(k, 1), or bins if none
}

__global__ void prune_cutoff_kernel(TpState s, const TpFrame* __restrict__ fp, bool gated) {
  if (prune_held_back(s, gated)) return;
  prune_cutoff_body(s, *fp);
}

// Touched entry i: into the next live list if it survives, freed either way.
__device__ __forceinline__ void prune_compact_item(const TpState& s, const TpFrame& f, uint32_t i,
                                                   const PruneLimits& lim) {
  const int cut = s.counters->cut_bin;
  const int out = 1 - f.live_in;
  {
    const int32_t e = s.touched[i];
    const float c = candidate_cost(s.entries[e].best);
    if (within_beam(s, f, e, c, lim) &&
        search::histogram_bin(c, lim.best, f.bin_scale, f.bins) < cut) {
      TpToken t;
      t.state = s.entries[e].key;
      t.cost = c;
      t.record = s.entries[e].record;
      t.hist = s.rescoring ? s.entries[e].hist : 0;
      const uint32_t j = append_slot(&s.counters->live[out]);
      if (j < s.live_capacity) {
        s.live[out][j] = t;
        if (keeps_acoustic(s)) s.live_acoustic[out][j] = s.entries[e].acoustic;
      } else  // only in a frame that overflowed the table (and runs again)
        note_overflow(s);
    }
    s.entries[e].best = kNoCandidate;
    s.entries[e].key = kEmptyKey;
  }
}

__device__ __forceinline__ void prune_compact_body(const Team& t, const TpState& s, const TpFrame& f) {
  const uint32_t n = s.counters->touched;
  const PruneLimits lim = prune_limits(s, f);
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x)
    prune_compact_item(s, f, i, lim);
}

__global__ void prune_compact_kernel(TpState s, const TpFrame* __restrict__ fp, bool gated) {
  if (prune_held_back(s, gated)) return;
  prune_compact_body(grid_team(), s, *fp);
}

// The word-end step, device half 1: the round's events. One thread per
// entry of the round's word-end list (word-end states have a word arc or a
// few), or per touched entry if the list overflowed.
// Nothing while the closure is unsettled (the round's graph ran out of
// passes): the host continues the round and the collection runs after the
// continuation's passes instead, once.
__device__ __forceinline__ bool word_end_list_whole(const TpState& s) {
  return s.counters->word_ends <= s.word_end_capacity;
}
__device__ __forceinline__ uint32_t collect_items(const TpState& s) {
  return word_end_list_whole(s) ? s.counters->word_ends : s.counters->touched;
}
__device__ __forceinline__ void collect_events_item(const TpGraph& g, const TpState& s,
                                                    const TpFrame& f, uint32_t i) {
  {
    const int32_t ent = word_end_list_whole(s) ? s.word_ends[i] : s.touched[i];
    if (s.entries[ent].round_mark != f.round_id) return;
    const int32_t v = s.entries[ent].key;
    const int32_t state = graph_state(g, v);
    if ((state_flags(g, state) & kStateWordArc) == 0) return;
    const float cost = candidate_cost(s.entries[ent].best);
    const int32_t rec = s.entries[ent].record;
    const bool fresh = rec >= f.first_record;
    const float best_emit = key_cost(s.counters->best_emit_key);
    if (!(cost <= add_cost(best_emit, fresh ? f.word_end_beam : f.beam))) return;
    const StateArcs r = eps_arcs_of(g, state, EpsKind::kWord);
    for (uint32_t i = r.begin; i < r.end; ++i) {
      const uint32_t a = __ldg(g.eps_arcs + i);
      const Arc arc = load_arc(g, a);
      const float c = add_cost(cost, arc.cost);
      if (!usable_cost(c)) continue;
      const uint32_t slot = atomicAdd(&s.counters->events, 1u);
      if (slot < s.event_capacity) {
        // Two 16-byte stores. Into mapped host memory each store is a
        // write across PCIe (field by field it was seven); the batched
        // lanes write to device memory and copy once (event_stage).
        TpEvent* dst = s.event_stage != nullptr ? s.event_stage : s.events;
        int4* out = reinterpret_cast<int4*>(&dst[slot]);
        out[0] = make_int4(v, static_cast<int32_t>(a), __float_as_int(c), rec);
        out[1] = make_int4(s.entries[ent].hist, arc.olabel - 1, arc.dest,
                           keeps_acoustic(s) ? __float_as_int(s.entries[ent].acoustic) : 0);
      }
    }
  }
}

__device__ __forceinline__ void collect_events_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                     const TpFrame& f) {
  if (s.counters->last_changed != 0) return;
  const uint32_t n = collect_items(s);
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x)
    collect_events_item(g, s, f, i);
}

__global__ void collect_events_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  collect_events_phase(grid_team(), g, s, *fp);
}

// Whether offer o is made at all: a usable cost within `beam` of the
// emitting step's best (search::offer_in_beam, as the CPU searcher decides).
__device__ __forceinline__ bool offer_made(const TpState& s, const TpFrame& f, const TpOffer& o) {
  return search::offer_in_beam(o.cost, key_cost(s.counters->best_emit_key), f.beam);
}

// Half 2a: the host's offers, keyed (cost, num_arcs + index).
__device__ __forceinline__ void offer_event_item(const TpGraph& g, const TpState& s, const TpFrame& f,
                                                 uint32_t i) {
  const TpOffer o = s.offers[i];
  if (offer_made(s, f, o)) offer(s, o.dest, pack_candidate(o.cost, g.num_arcs + i));
}
__device__ __forceinline__ void offer_events_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                   const TpFrame& f) {
  const uint32_t n = f.num_offers;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x)
    offer_event_item(g, s, f, i);
  if (t.rank == 0 && threadIdx.x == 0) begin_round_collection(s.counters);
}

// Half 2b: each offer that holds its destination makes its record and
// starts the round in changed[0] (empty: the last round settled). Returns
// a winner's cost key (0xFFFFFFFF for the others), for the frame's best.
__device__ __forceinline__ uint32_t resolve_event_item(const TpGraph& g, const TpState& s,
                                                       const TpFrame& f, uint32_t i) {
  {
    const TpOffer o = s.offers[i];
    if (!offer_made(s, f, o)) return 0xFFFFFFFFu;
    const int32_t e = find_entry(s.entries, s.table_mask, s.table_shift, o.dest);
    if (e < 0 || s.entries[e].best != pack_candidate(o.cost, g.num_arcs + i)) return 0xFFFFFFFFu;
    // Offers come only with rescoring, so the history is kept.
    const TpToken t = commit_winner(s, f, e, o.cost, stage_record(s, f, o.word, o.record, o.cost, o.acoustic),
                                    o.hist, o.acoustic, state_flags(g, graph_state(g, o.dest)));
    TpToken* slot = list_slot(s, s.changed[0], &s.counters->changed[0], s.changed_capacity);
    if (slot != nullptr) *slot = t;
    return cost_key(o.cost);
  }
}

__device__ __forceinline__ void resolve_events_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                     const TpFrame& f) {
  const uint32_t n = f.num_offers;
  uint32_t best = 0xFFFFFFFFu;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const uint32_t k = resolve_event_item(g, s, f, i);
    best = k < best ? k : best;
  }
  warp_min_into(&s.counters->best_key, best);
}

__global__ void offer_events_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  offer_events_phase(grid_team(), g, s, *fp);
}
__global__ void resolve_events_kernel(TpGraph g, TpState s, const TpFrame* __restrict__ fp) {
  resolve_events_phase(grid_team(), g, s, *fp);
}

// A round's device work in one cooperative launch: its head (the emitting
// step, or the host's rescored offers), the epsilon closure, and the
// word-end event collection, the kernels of the separate path becoming
// phases separated by grid-wide barriers (each barrier orders memory as a
// kernel boundary does). The closure loop stops after the pass that
// changed nothing, so max_passes is only a bound. Inside a CUDA graph each
// kernel node costs a few microseconds of latency even when it has little
// to do, and a frame of the LibriVox search has ~25 of them; barriers
// among one block per SM cost less. Every thread reads last_changed after
// the same barrier and nothing writes it before the next pass's resolve
// phase, so all leave the loop together. Likewise the heavy count: the
// phase that fills it ends in a barrier, every thread reads it after that
// barrier, and the next resolve phase, which resets it, cannot finish
// before every thread has read it; where it was 0 the reset writes 0
// again. So all threads agree whether to run the heavy phase and its
// barrier.
// A frame's parameters as another block of this kernel last wrote them
// (after a barrier), word by word through volatile loads: never a value
// the compiler kept from before the write.
__device__ __forceinline__ TpFrame load_frame_written(const TpFrame* p) {
  static_assert(sizeof(TpFrame) % sizeof(uint32_t) == 0, "TpFrame is copied in 32-bit words");
  TpFrame out;
  const volatile uint32_t* src = reinterpret_cast<const volatile uint32_t*>(p);
  uint32_t* dst = reinterpret_cast<uint32_t*>(&out);
  for (size_t i = 0; i < sizeof(TpFrame) / sizeof(uint32_t); ++i) dst[i] = src[i];
  return out;
}

__device__ __forceinline__ uint32_t heavy_count(const TpState& s) {
  return *static_cast<volatile const uint32_t*>(&s.counters->heavy);
}

// Where a round's time goes, for round_body / round_run: `lap(phase)`
// after each barrier adds the time since the last one to that phase
// (kLanePhase*). The single-stream kernel keeps no clock; the cluster
// lanes kernel keeps one per lane (ClusterClock, below).
struct NoClock {
  static constexpr bool on = false;
  __device__ void init(unsigned long long*, bool) {}
  __device__ void start() {}
  __device__ void lap(int) {}
  __device__ void count(int) {}
};
// One lane's clock in the cluster kernel: its first thread reads the
// global timer after each cluster barrier and adds to the launch's
// profile words (TpLaneProfile), so they sum lane time over lanes.
struct ClusterClock {
  unsigned long long* acc;  // profile words
  bool on;                  // this thread keeps the clock
  unsigned long long last;
  __device__ void init(unsigned long long* profile, bool keeper) {
    acc = profile;
    on = profile != nullptr && keeper;
    last = 0;
  }
  __device__ static unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ void start() {
    if (on) last = now();
  }
  __device__ void lap(int phase) {
    if (!on) return;
    const unsigned long long t = now();
    atomicAdd(acc + kLaneProfileNs + phase, t - last);
    last = t;
  }
  __device__ void count(int word) {
    if (on) atomicAdd(acc + word, 1ull);
  }
};

// Events whose (source, arc) keys fit in a block's shared memory (16 KiB)
// for ordering them: place_events and the device's word-end rescoring.
constexpr uint32_t kPlacedEvents = 2048;

// `grid` is whatever barrier spans the blocks of the Team: the whole grid
// (cg::grid_group) or, for the cluster lanes kernel, one cluster.
template <class Barrier, class Clock>
__device__ __forceinline__ void round_body(const Barrier& grid, const Team& t, const TpGraph& g,
                                           const TpState& s, const TpFrame& f, int head,
                                           int max_passes, bool heavy, bool collect, Clock& clock) {
  if (head == kRoundHeadEmit) {
    emit_phase(t, g, s, f);
    grid.sync();
    clock.lap(kLanePhaseHead);
    if (heavy && heavy_count(s) > 0) {
      emit_heavy_phase(t, g, s, f);
      grid.sync();
      clock.lap(kLanePhaseEmitHeavy);
    }
    emit_resolve_phase(t, g, s, f);
    grid.sync();
    clock.lap(kLanePhaseEmitResolve);
  } else if (head == kRoundHeadOffers) {
    offer_events_phase(t, g, s, f);
    grid.sync();
    clock.lap(kLanePhaseHead);
    resolve_events_phase(t, g, s, f);
    grid.sync();
    clock.lap(kLanePhaseEmitResolve);
  }
  for (int pass = 0; pass < max_passes; ++pass) {
    relax_phase(t, g, s, f, pass);
    grid.sync();
    clock.lap(kLanePhaseRelax);
    clock.count(kLaneProfilePasses);
    if (heavy && heavy_count(s) > 0) {
      relax_heavy_phase(t, g, s, f, pass);
      grid.sync();
      clock.lap(kLanePhaseRelaxHeavy);
    }
    relax_resolve_phase(t, g, s, f, pass);
    grid.sync();
    clock.lap(kLanePhaseRelaxResolve);
    if (*static_cast<volatile const uint32_t*>(&s.counters->last_changed) == 0) break;
  }
  if (collect) collect_events_phase(t, g, s, f);
}

// Word-end rescoring on the device (TpState::lm; docs/search-lanes-plan.md,
// S8 step 5), the host's Searcher::rescore_word_ends for one round's n
// staged events, in two phases. First, a thread an event: its word end
// from the stream's memo, or computed (lm_word_end: both LMs' scores, by
// n-gram hash lookups or trie walks (S8 step 6), and a probe of the
// history table) and noted for the memo; its offer (word_end_offer) by
// event. Each block also loads the events' (source,
// arc) keys into its shared memory (`keys`, kPlacedEvents of them, or
// null: the keys are then read from the staged events in global memory,
// slower and the same). A history the table cannot take raises
// counters->history_full (the round's offers are then not used).
__device__ __forceinline__ unsigned long long lm_memo_key(int32_t history, int32_t word) {
  return (static_cast<unsigned long long>(static_cast<uint32_t>(history)) << 32) | static_cast<uint32_t>(word);
}
__device__ __forceinline__ uint32_t lm_memo_slot(const TpLm& lm, unsigned long long key) {
  return static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - lm.memo_bits));
}

__device__ __forceinline__ void rescore_events_phase(const Team& t, const TpGraph& g, const TpState& s,
                                                     uint32_t n, unsigned long long* keys) {
  const TpEvent* ev = s.event_stage;
  if (keys != nullptr && n <= kPlacedEvents)  // the same for every thread
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) keys[i] = word_end_event_key(ev[i].source, ev[i].arc);
  const TpLm& lm = *s.lm;
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const TpEvent e = ev[i];
    const unsigned long long mk = lm_memo_key(e.hist, e.word);
    const uint32_t slot = lm_memo_slot(lm, mk);
    TpLmMiss miss{kLmMemoEmpty, 0.0f, 0};
    LmWordEnd we;
    if (lm.memo_keys[slot] == mk) {  // filled in an earlier phase
      const uint2 v = lm.memo_values[slot];
      we.delta = __uint_as_float(v.x);
      we.history = static_cast<int32_t>(v.y);
      we.history_hash = lm.table.hashes[we.history];
    } else {
      we = lm_word_end(lm.view, lm.table, e.hist, e.word);
      if (we.history < 0)
        atomicOr(&s.counters->history_full, 1u);
      else
        miss = TpLmMiss{mk, we.delta, we.history};
    }
    lm.misses[i] = miss;
    const WordEndOfferFields f = word_end_offer(e.dest, e.cost, e.word, e.record, we, g.slots);
    TpOffer o;
    o.dest = f.dest;
    o.cost = f.cost;
    o.word = f.word;
    o.record = f.record;
    o.hist = f.history;
    o.acoustic = e.acoustic;
    lm.unsorted[i] = o;
  }
}

// Second, each event's offer at its place in (source, arc) order, so that
// offer i's tie-break (num_arcs + i) is the host's: a warp an event, its
// lanes counting the smaller keys in stripes (as place_events does); and
// the memo takes the word ends the first phase computed. Nothing reads the
// memo in this phase, so a slot is claimed (kLmMemoBusy), written and
// keyed by one thread, and two events that missed the same slot in one
// round leave one consistent entry.
__device__ __forceinline__ void place_offers_phase(const Team& t, const TpState& s, uint32_t n,
                                                   const unsigned long long* keys) {
  const TpEvent* ev = s.event_stage;
  const bool shared_keys = keys != nullptr && n <= kPlacedEvents;
  const TpLm& lm = *s.lm;
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t warps = blockDim.x >> 5;
  // i is the same for the whole warp, so all its lanes reach the reduction.
  for (uint32_t i = (threadIdx.x >> 5) * t.size + t.rank; i < n; i += warps * t.size) {
    const unsigned long long key = shared_keys ? keys[i] : word_end_event_key(ev[i].source, ev[i].arc);
    uint32_t smaller = 0;
    if (shared_keys) {
      for (uint32_t q = lane; q < n; q += 32) smaller += keys[q] < key ? 1u : 0u;
    } else {
      for (uint32_t q = lane; q < n; q += 32) smaller += word_end_event_key(ev[q].source, ev[q].arc) < key ? 1u : 0u;
    }
    const uint32_t place = __reduce_add_sync(0xffffffffu, smaller);
    if (lane == 0) lm.offers[place] = lm.unsorted[i];
  }
  for (uint32_t i = t.rank * blockDim.x + threadIdx.x; i < n; i += t.size * blockDim.x) {
    const TpLmMiss m = lm.misses[i];
    if (m.key == kLmMemoEmpty) continue;
    const uint32_t slot = lm_memo_slot(lm, m.key);
    const unsigned long long held = *static_cast<volatile unsigned long long*>(lm.memo_keys + slot);
    if (held == m.key || held == kLmMemoBusy) continue;
    if (atomicCAS(lm.memo_keys + slot, held, kLmMemoBusy) != held) continue;
    lm.memo_values[slot] = make_uint2(__float_as_uint(m.delta), static_cast<uint32_t>(m.next));
    __threadfence();
    atomicExch(lm.memo_keys + slot, m.key);
  }
}

__device__ __forceinline__ uint32_t volatile_counter(const uint32_t* p) {
  return *static_cast<volatile const uint32_t*>(p);
}

// The frame's word-end loop in the launch (TpRoundParams::word_end_rounds
// says when it runs and when it stops), after a round body that collected
// its events: rescore, barrier, then the offers' closure round (its head,
// passes and collection, as the host's kRoundHeadOffers round runs them),
// until a collection finds no events. Every thread reads the same counters
// after the same barrier, so all leave together. Ends after a barrier.
template <class Barrier, class Clock>
__device__ __forceinline__ void word_end_loop(const Barrier& grid, const Team& t, const TpGraph& g,
                                              const TpState& s, const TpFrame& f, const TpRoundParams& p,
                                              unsigned long long* keys, Clock& clock) {
  TpCounters* c = s.counters;
  TpFrame rf = f;
  for (int round = 1;; ++round) {
    grid.sync();  // the collection is complete
    clock.lap(kLanePhaseCollect);
    const uint32_t n = volatile_counter(&c->events);
    if (n == 0 || n > s.event_capacity) return;
    if (volatile_counter(&c->last_changed) != 0 || volatile_counter(&c->overflow) != 0 ||
        volatile_counter(&c->records) > s.staging_capacity ||
        volatile_counter(&c->passes_run) > static_cast<uint32_t>(p.pass_limit))
      return;
    if (round > p.word_end_rounds || static_cast<uint64_t>(g.num_arcs) + n >= kNoArc) {
      if (t.rank == 0 && threadIdx.x == 0) c->word_end_rounds = static_cast<uint32_t>(round);
      return;  // the host reports it, as its own loop would
    }
    rescore_events_phase(t, g, s, n, keys);
    if (t.rank == 0 && threadIdx.x == 0) {
      c->word_end_rounds = static_cast<uint32_t>(round);
      c->word_end_events += n;
    }
    grid.sync();  // the offers are made; history_full is final
    clock.lap(kLanePhaseRescore);
    if (volatile_counter(&c->history_full) != 0) return;
    place_offers_phase(t, s, n, keys);
    grid.sync();  // the offers are in order
    clock.lap(kLanePhaseRescore);
    rf.round_id = f.round_id + static_cast<uint32_t>(round);
    rf.num_offers = n;
    const int run = static_cast<int>(volatile_counter(&c->passes_run));
    int passes = p.pass_limit - run > 2 ? p.pass_limit - run : 2;
    passes += passes & 1;
    round_body(grid, t, g, s, rf, kRoundHeadOffers, passes, p.heavy, /*collect=*/true, clock);
  }
}

__device__ __forceinline__ bool rescores_on_device(const TpState& s, const TpRoundParams& p, bool collect) {
  return s.lm != nullptr && collect && p.word_end_rounds > 0;
}

// A round: the body above, then with `prune` (rescoring), as tp_prune
// with `gated` does, the pruning step as four phases when the round ended
// its frame; with chain_passes > 0 also the next frame (tp_round in
// token_passing.cuh): the chain's decision by one thread, then the next
// frame's emitting round. Every thread decides the gates from the same
// counters after the same barrier. `fp` is written here (the chained
// frame's parameters replace the frame's), so it is read with plain loads
// after barriers, never through the read-only cache.
template <class Barrier, class Clock>
__device__ __forceinline__ void round_run(const Barrier& grid, const Team& t, const TpGraph& g,
                                          const TpState& s, TpFrame* fp, const TpRoundParams& p,
                                          uint32_t* block_hist, unsigned long long* event_keys,
                                          Clock& clock) {
  const int chain_frames = p.chain_passes > 0 ? min(p.chain_frames, kMaxChainedFrames) : 0;
  if (chain_frames > 0 && t.rank == 0 && threadIdx.x == 0) s.chain->go = 0;  // read after barriers
  TpFrame f = load_frame_written(fp);
  round_body(grid, t, g, s, f, p.head, p.max_passes, p.heavy, p.collect, clock);
  if (rescores_on_device(s, p, p.collect)) word_end_loop(grid, t, g, s, f, p, event_keys, clock);
  if (!p.prune) return;
  // The frame's pruning, then each chained frame's rounds, and its pruning
  // but for the last: frame k + 1 begins only where frame k ended.
  for (int k = 0;; ++k) {
    grid.sync();  // the events are collected
    clock.lap(kLanePhaseCollect);
    if (prune_held_back(s, true)) return;  // the same counters for every thread
    prune_histogram_body(t, s, f, block_hist);
    grid.sync();
    clock.lap(kLanePhasePruneHistogram);
    if (t.rank == 0) prune_cutoff_body(s, f);
    grid.sync();
    clock.lap(kLanePhasePruneCutoff);
    prune_compact_body(t, s, f);
    if (k >= chain_frames) return;
    grid.sync();  // the frame's counters are final
    clock.lap(kLanePhasePruneCompact);
    if (t.rank == 0 && threadIdx.x == 0) {
      const TpCounters c = *s.counters;
      TpFrame n = load_frame_written(p.next + k);
      n.first_record = f.first_record + static_cast<int32_t>(c.records);
      if (n.first_record < n.record_limit) {
        s.chain->prev[k] = c;
        *fp = n;
        reset_counters(s.counters, n);
        s.chain->go = static_cast<uint32_t>(k + 1);
      }
    }
    grid.sync();
    if (*static_cast<volatile const uint32_t*>(&s.chain->go) != static_cast<uint32_t>(k + 1)) return;
    clock.count(kLaneProfileChained);
    f = load_frame_written(fp);
    for (int i = t.rank * blockDim.x + threadIdx.x; i < f.bins; i += t.size * blockDim.x)
      s.histogram[i] = 0;
    grid.sync();
    clock.lap(kLanePhaseChain);
    round_body(grid, t, g, s, f, kRoundHeadEmit, p.chain_passes, p.heavy, /*collect=*/true, clock);
    if (rescores_on_device(s, p, true)) word_end_loop(grid, t, g, s, f, p, event_keys, clock);
    if (k + 1 >= chain_frames) return;  // the last chained frame's pruning is the host's
  }
}

// The cooperative round kernel: one stream's round over the whole grid.
// (Word ends rescored on the device order their events by keys in global
// memory here: 16 KiB of keys in shared memory beside the largest
// histogram would pass the 48 KiB a block gets without asking.)
__global__ void round_kernel(TpGraph g, TpState s, TpFrame* fp, TpRoundParams p) {
  extern __shared__ uint32_t block_hist[];
  NoClock clock;
  round_run(cg::this_grid(), grid_team(), g, s, fp, p, block_hist, /*event_keys=*/nullptr, clock);
}

// ---------------------------------------------------------------------------
// The batched search: many streams' rounds in one cooperative launch
// (tp_lanes_round in token_passing.cuh). The phases are the single-stream
// round's, but each one walks the items of every lane at once: a block
// counts each lane's items (a scan over the lanes into shared memory) and
// the grid strides over the concatenation, a binary search over the scan
// naming each item's lane. So the grid-wide barriers, which bound a
// single stream's frame, are paid once for every stream in the launch, and
// a lane with many tokens gets as many threads as its items need. Every
// item runs the single-stream rules on its own lane's tables and counters
// (the per-item functions above): a lane's result does not depend on the
// others. Per lane, what the single-stream path decides between kernels
// (which head, whether its closure goes on, whether pruning runs, whether
// the next frame is chained) is decided by one thread and kept in the
// lane's TpLaneStep, so every block reads the same decision after the
// next barrier.

// A lane's round within a launch (device scratch, one per lane).
struct TpLaneStep {
  int32_t head;        // kRoundHead*, or kLaneIdle: the lane has no round now
  int32_t max_passes;  // closure passes it may run (an even bound, as tp_round's)
  int32_t collect;     // word-end events after the closure
  int32_t prune;       // gated pruning after the round
  int32_t closing;     // still in its closure
  int32_t pruned;      // the gate let pruning run
};
constexpr int32_t kLaneIdle = -1;
// Launch-wide counters (device scratch): lanes whose closure goes on after
// pass p (slot p % 3; a slot is cleared two passes before it is counted
// again), and lanes that chained their next frame.
constexpr int kLaneScratchWords = 4;
constexpr int kChainedSlot = 3;

// Where a launch's time goes (tp_lanes_round's `profile`, null when off):
// block 0's first thread reads the global timer after each grid-wide
// barrier, when every block has finished the phase before it, and adds the
// time since its last reading to that phase, and the phase's item count
// (the same total in every block) beside it. Nothing else is touched, so
// a profiled launch computes what an unprofiled one does.
struct LaneClock {
  unsigned long long* acc;  // TpLaneProfile words, or null
  unsigned long long last;

  __device__ static unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ bool on() const { return acc != nullptr && blockIdx.x == 0 && threadIdx.x == 0; }
  __device__ void start() {
    if (on()) last = now();
  }
  // The phase that ended at the barrier just passed.
  __device__ void lap(int phase) {
    if (!on()) return;
    const unsigned long long t = now();
    acc[kLaneProfileNs + phase] += t - last;
    last = t;
  }
  __device__ void items(int phase, uint32_t n) {
    if (on()) acc[kLaneProfileItems + phase] += n;
  }
  __device__ void count(int word) {
    if (on()) acc[word] += 1;
  }
};

// Exclusive prefix sums of count(lane) over the L lanes into prefix[0..L]
// (shared memory), by the whole block; returns the total. count must give
// the same value whenever it is called in a phase.
template <class Count>
__device__ __forceinline__ uint32_t lane_prefix(int L, uint32_t* prefix, Count count) {
  __shared__ uint32_t warp_sums[32];
  __syncthreads();  // the previous scan's readers are done
  const int per = (L + static_cast<int>(blockDim.x) - 1) / static_cast<int>(blockDim.x);
  const int first = min(L, static_cast<int>(threadIdx.x) * per);
  const int last = min(L, first + per);
  uint32_t run = 0;
  for (int l = first; l < last; ++l) run += count(l);
  const unsigned ln = lane_id();
  const int w = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) / 32;
  uint32_t incl = run;
  for (int off = 1; off < 32; off <<= 1) {
    const uint32_t o = __shfl_up_sync(0xffffffffu, incl, off);
    if (ln >= static_cast<unsigned>(off)) incl += o;
  }
  if (ln == 31) warp_sums[w] = incl;
  __syncthreads();
  if (w == 0) {
    uint32_t t = ln < static_cast<unsigned>(warps) ? warp_sums[ln] : 0;
    for (int off = 1; off < 32; off <<= 1) {
      const uint32_t o = __shfl_up_sync(0xffffffffu, t, off);
      if (ln >= static_cast<unsigned>(off)) t += o;
    }
    if (ln < static_cast<unsigned>(warps)) warp_sums[ln] = t;  // inclusive over warps
  }
  __syncthreads();
  uint32_t start = incl - run + (w > 0 ? warp_sums[w - 1] : 0);
  for (int l = first; l < last; ++l) {
    prefix[l] = start;
    start += count(l);
  }
  if (threadIdx.x == 0) prefix[L] = warp_sums[warps - 1];
  __syncthreads();
  return prefix[L];
}

// The lane of concatenated item u: the last lane whose first item is <= u.
__device__ __forceinline__ int lane_of(const uint32_t* prefix, int L, uint32_t u) {
  int lo = 0, hi = L - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (prefix[mid] <= u) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// item(lane, i, sub) for every item i < count(lane) of every lane, `width`
// threads an item (sub: the thread's rank among them).
template <class Count, class Item>
__device__ __forceinline__ uint32_t for_lane_items(int L, uint32_t* prefix, int width,
                                                   Count count, Item item) {
  const uint32_t total = lane_prefix(L, prefix, count);
  const uint32_t per_block = blockDim.x / width;
  for (uint32_t u = blockIdx.x * per_block + threadIdx.x / width; u < total;
       u += gridDim.x * per_block) {
    const int lane = lane_of(prefix, L, u);
    item(lane, u - prefix[lane], static_cast<int>(threadIdx.x % width));
  }
  return total;
}

// item(lane, i) by a whole block for every item i < count(lane); returns
// how many items there were in all (the same in every block).
template <class Count, class Item>
__device__ __forceinline__ uint32_t for_lane_items_by_block(int L, uint32_t* prefix, Count count,
                                                            Item item) {
  const uint32_t total = lane_prefix(L, prefix, count);
  for (uint32_t u = blockIdx.x; u < total; u += gridDim.x) {
    const int lane = lane_of(prefix, L, u);
    item(lane, u - prefix[lane]);
  }
  return total;
}

// fn(lane) by one thread per lane.
template <class Fn>
__device__ __forceinline__ void for_lanes(int L, Fn fn) {
  const uint32_t threads = gridDim.x * blockDim.x;
  for (uint32_t l = blockIdx.x * blockDim.x + threadIdx.x; l < static_cast<uint32_t>(L); l += threads)
    fn(static_cast<int>(l));
}

__device__ __forceinline__ uint32_t volatile_load(const uint32_t* p) {
  return *static_cast<const volatile uint32_t*>(p);
}

// One round of every lane whose step has a head (kRoundHeadNone included):
// the head, the closure, the events; the lane's steps say what each does.
__device__ void lanes_round_body(const cg::grid_group& grid, const TpLaneRound* rounds, int L,
                                 TpLaneStep* steps, uint32_t* scratch, uint32_t* prefix,
                                 LaneClock& clock) {
  // The head: emitting step and offers (different lanes) side by side.
  if (blockIdx.x == 0 && threadIdx.x < 3) scratch[threadIdx.x] = 0;
  const int emit_width = c_emit_group;
  uint32_t items = for_lane_items(
      L, prefix, emit_width,
      [&](int l) -> uint32_t {
        const TpLaneRound& r = rounds[l];
        return steps[l].head == kRoundHeadEmit ? r.state.counters->live[r.frame->live_in] : 0u;
      },
      [&](int l, uint32_t i, int sub) {
        const TpLaneRound& r = rounds[l];
        emit_item(r.graph, r.state, *r.frame, i, sub, emit_width);
      });
  items += for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t { return steps[l].head == kRoundHeadOffers ? rounds[l].frame->num_offers : 0u; },
      [&](int l, uint32_t i, int) { offer_event_item(rounds[l].graph, rounds[l].state, *rounds[l].frame, i); });
  for_lanes(L, [&](int l) {
    if (steps[l].head == kRoundHeadOffers) begin_round_collection(rounds[l].state.counters);
  });
  grid.sync();
  clock.lap(kLanePhaseHead);
  clock.items(kLanePhaseHead, items);
  // Heavy tokens; no barrier after a phase with none (every block saw the
  // same total).
  items = for_lane_items_by_block(
          L, prefix,
          [&](int l) -> uint32_t {
            const TpState& s = rounds[l].state;
            return steps[l].head == kRoundHeadEmit ? min(s.counters->heavy, s.heavy_capacity) : 0u;
          },
          [&](int l, uint32_t h) {
            const TpLaneRound& r = rounds[l];
            emit_heavy_arcs(r.graph, r.state, *r.frame, h, threadIdx.x, blockDim.x);
          });
  if (items > 0) {
    grid.sync();
    clock.lap(kLanePhaseEmitHeavy);
    clock.items(kLanePhaseEmitHeavy, items);
  }
  items = for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t {
        return steps[l].head == kRoundHeadEmit ? log_items(emit_log(rounds[l].state)) : 0u;
      },
      [&](int l, uint32_t i, int) {
        const TpLaneRound& r = rounds[l];
        const uint32_t k = emit_resolve_item(r.graph, r.state, *r.frame, i);
        min_into(&r.state.counters->best_emit_key, k);
      });
  items += for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t { return steps[l].head == kRoundHeadOffers ? rounds[l].frame->num_offers : 0u; },
      [&](int l, uint32_t i, int) {
        const TpLaneRound& r = rounds[l];
        min_into(&r.state.counters->best_key, resolve_event_item(r.graph, r.state, *r.frame, i));
      });
  for_lanes(L, [&](int l) {
    if (steps[l].head == kRoundHeadEmit) rounds[l].state.counters->heavy = 0;
  });
  grid.sync();
  clock.lap(kLanePhaseEmitResolve);
  clock.items(kLanePhaseEmitResolve, items);
  // The closure: pass p for the lanes still in theirs, until none is.
  for (int pass = 0;; ++pass) {
    const int in = pass & 1;
    if (blockIdx.x == 0 && threadIdx.x == 0) scratch[(pass + 1) % 3] = 0;
    auto closing = [&](int l) { return steps[l].closing != 0; };
    items = for_lane_items(
        L, prefix, kGroup,
        [&](int l) -> uint32_t {
          const TpState& s = rounds[l].state;
          return closing(l) ? min(s.counters->changed[in], s.changed_capacity) : 0u;
        },
        [&](int l, uint32_t i, int sub) {
          const TpLaneRound& r = rounds[l];
          relax_item(r.graph, r.state, *r.frame, pass, i, sub);
        });
    grid.sync();
    clock.lap(kLanePhaseRelax);
    clock.items(kLanePhaseRelax, items);
    clock.count(kLaneProfilePasses);
    items = for_lane_items_by_block(
            L, prefix,
            [&](int l) -> uint32_t {
              const TpState& s = rounds[l].state;
              return closing(l) ? min(s.counters->heavy, s.heavy_capacity) : 0u;
            },
            [&](int l, uint32_t h) {
              const TpLaneRound& r = rounds[l];
              relax_arcs(r.graph, r.state, r.state.heavy[h], in, threadIdx.x, blockDim.x);
            });
    if (items > 0) {
      grid.sync();
      clock.lap(kLanePhaseRelaxHeavy);
      clock.items(kLanePhaseRelaxHeavy, items);
    }
    items = for_lane_items(
        L, prefix, 1,
        [&](int l) -> uint32_t { return closing(l) ? relax_resolve_items(rounds[l].state, pass) : 0u; },
        [&](int l, uint32_t i, int) {
          const TpLaneRound& r = rounds[l];
          min_into(&r.state.counters->best_key, relax_resolve_item(r.graph, r.state, *r.frame, pass, i));
        });
    for_lanes(L, [&](int l) {
      if (!closing(l)) return;
      relax_resolve_lane(rounds[l].state, pass);
      // As tp_round: stop after the pass that changed nothing, or at the
      // lane's bound (the host continues it).
      if (rounds[l].state.counters->last_changed != 0 && pass + 1 < steps[l].max_passes)
        atomicAdd(scratch + pass % 3, 1u);
      else
        steps[l].closing = 0;
    });
    grid.sync();
    clock.lap(kLanePhaseRelaxResolve);
    clock.items(kLanePhaseRelaxResolve, items);
    if (volatile_load(scratch + pass % 3) == 0) break;
  }
  // The round's word-end events (not while a lane's closure is unsettled).
  items = for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t {
        const TpCounters* c = rounds[l].state.counters;
        return steps[l].head != kLaneIdle && steps[l].collect && c->last_changed == 0
                   ? collect_items(rounds[l].state)
                   : 0u;
      },
      [&](int l, uint32_t i, int) {
        const TpLaneRound& r = rounds[l];
        collect_events_item(r.graph, r.state, *r.frame, i);
      });
  clock.items(kLanePhaseCollect, items);  // its time: up to the caller's barrier
}

// Pruning, for the lanes whose step asks for it and whose gate lets it
// run (tp_prune with `gated`). The gate's counters do not change in the
// first phase, which reads them; one thread a lane keeps the decision in
// the step for the later phases (the last can change `overflow`).
__device__ void lanes_prune(const cg::grid_group& grid, const TpLaneRound* rounds, int L,
                            TpLaneStep* steps, uint32_t* prefix, LaneClock& clock) {
  auto prunes = [&](int l) {
    return steps[l].head != kLaneIdle && steps[l].prune && !prune_held_back(rounds[l].state, true);
  };
  // The frame's best cost is final (the resolve phases kept it), so the
  // histogram is the first phase. Its count reads the gate (the phase
  // changes none of the gate's counters); one thread a lane keeps the
  // decision in the step for the later phases.
  for_lanes(L, [&](int l) { steps[l].pruned = prunes(l); });
  uint32_t items = for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t { return prunes(l) ? rounds[l].state.counters->touched : 0u; },
      [&](int l, uint32_t i, int) {
        const TpLaneRound& r = rounds[l];
        const TpState& s = r.state;
        const TpFrame& f = *r.frame;
        const int bin = prune_bin(s, f, i, prune_limits(s, f));
        if (bin >= 0) atomicAdd(s.histogram + bin, 1u);
        add_into(&s.counters->kept, bin >= 0 ? 1u : 0u);
      });
  grid.sync();
  clock.lap(kLanePhasePruneHistogram);
  clock.items(kLanePhasePruneHistogram, items);
  for (int l = blockIdx.x; l < L; l += gridDim.x)
    if (steps[l].pruned) prune_cutoff_body(rounds[l].state, *rounds[l].frame);
  grid.sync();
  clock.lap(kLanePhasePruneCutoff);
  items = for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t { return steps[l].pruned ? rounds[l].state.counters->touched : 0u; },
      [&](int l, uint32_t i, int) {
        const TpLaneRound& r = rounds[l];
        const TpState& s = r.state;
        const TpFrame& f = *r.frame;
        prune_compact_item(s, f, i, prune_limits(s, f));
      });
  clock.items(kLanePhasePruneCompact, items);
  // The histogram is done with (the cutoff read it): cleared for a chained
  // next frame (tp_round clears it there; a frame begun by the host clears
  // it again).
  for_lane_items(
      L, prefix, 1,
      [&](int l) -> uint32_t {
        return steps[l].pruned ? static_cast<uint32_t>(rounds[l].frame->bins) : 0u;
      },
      [&](int l, uint32_t i, int) { rounds[l].state.histogram[i] = 0; });
}

// What the single-stream path queues before a round, for one lane by one
// block: the frame parameters, and at a frame's start its counters,
// histogram and (at an utterance's start) the start token.
__device__ __forceinline__ void lane_round_begin(const TpLaneRound& r) {
  constexpr int kFrameWords = sizeof(TpFrame) / sizeof(uint32_t);
  for (int i = threadIdx.x; i < static_cast<int>(r.num_frames) * kFrameWords; i += blockDim.x)
    reinterpret_cast<uint32_t*>(r.frame)[i] = reinterpret_cast<const uint32_t*>(r.frames)[i];
  if (r.begin_frame) {
    for (int i = threadIdx.x; i < r.frames[0].bins; i += blockDim.x) r.state.histogram[i] = 0;
    if (threadIdx.x == 0) {
      reset_counters(r.state.counters, r.frames[0]);
      if (r.start) start_token(r.state, r.frames[0]);
    }
  }
}

// A lane's events in (source, arc) order, the order in which the host
// makes their offers (Searcher::rescore_word_ends): putting them there on
// the device spares the host its radix sort, which was more than half of
// the instructions of a stream's word-end rescoring (callgrind, LibriVox;
// docs/benchmarks.md "Word-end events in order from the device"). Every
// block of the lane's cluster takes part: each holds all the keys in
// shared memory, and each event's place is the number of smaller keys
// (the keys are distinct, one event per table entry and word arc, so the
// places are a permutation and the order is the host's). Up to
// kPlacedEvents events; a round with more is copied as it came and the
// host sorts it (it checks the order either way). (kPlacedEvents, above.)

// Stores the lane's n staged events at their places in the mapped buffer
// the host reads; `keys` is the block's shared memory for kPlacedEvents.
// A warp places one event at a time: its 32 threads count the smaller
// keys in a stripe each and add their counts. A thread an event (the
// first version) walked all n keys alone, about 800 dependent steps for a
// frame's events, which put about 10 µs on the lane-round; a warp an event
// does the same comparisons in n / 32 steps and a reduction. The events go
// to the cluster's warps in turn (warp w of block rank r takes w * blocks +
// r first), so every block has its share whatever n is. blockDim.x is a
// multiple of 32 and `i` is the same for the whole warp, so the warp's
// threads all reach the reduction.
__device__ __forceinline__ void place_events(const Team& t, const TpState& s, uint32_t n,
                                             unsigned long long* keys) {
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
    keys[i] = word_end_event_key(s.event_stage[i].source, s.event_stage[i].arc);
  __syncthreads();
  const int4* from = reinterpret_cast<const int4*>(s.event_stage);
  int4* to = reinterpret_cast<int4*>(s.events);
  static_assert(sizeof(TpEvent) == 2 * sizeof(int4), "an event is two 16-byte words");
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t warps = blockDim.x >> 5;
  for (uint32_t i = (threadIdx.x >> 5) * t.size + t.rank; i < n; i += warps * t.size) {
    const unsigned long long key = keys[i];
    uint32_t smaller = 0;
    for (uint32_t j = lane; j < n; j += 32) smaller += keys[j] < key ? 1u : 0u;
    const uint32_t place = __reduce_add_sync(0xffffffffu, smaller);
    if (lane < 2) to[2 * place + lane] = from[2 * i + lane];
  }
}

// What the host reads after a lane's round, copied by one block: the
// counters, then the chain's outcome, then the first `copy_events` of the
// lane's events as they came (0 where place_events has put them in order),
// staged in device memory by the collection (the last round body's: a
// chained round begins only where the frame's last round had none), to the
// mapped buffer the host reads.
__device__ __forceinline__ void lane_round_out(const TpLaneRound& r, uint32_t copy_events) {
  constexpr int kOutWords = sizeof(TpCounters) / sizeof(uint32_t);
  uint32_t* out = reinterpret_cast<uint32_t*>(r.out);
  const uint32_t* c = reinterpret_cast<const uint32_t*>(r.state.counters);
  for (int i = threadIdx.x; i < kOutWords; i += blockDim.x) out[i] = c[i];
  if (r.state.chain != nullptr) {
    // The header and the counters of the frames the chain went past (go,
    // read after the round's last barrier): all that the host reads.
    static_assert(offsetof(TpChain, prev) % sizeof(uint32_t) == 0, "copied in words");
    constexpr int kHeadWords = offsetof(TpChain, prev) / sizeof(uint32_t);
    const uint32_t* ch = reinterpret_cast<const uint32_t*>(r.state.chain);
    const uint32_t go = min(*static_cast<volatile const uint32_t*>(&r.state.chain->go),
                            static_cast<uint32_t>(kMaxChainedFrames));
    const int words = kHeadWords + static_cast<int>(go) * kOutWords;
    for (int i = threadIdx.x; i < words; i += blockDim.x) out[kOutWords + i] = ch[i];
  }
  if (copy_events > 0) {
    const int4* from = reinterpret_cast<const int4*>(r.state.event_stage);
    int4* to = reinterpret_cast<int4*>(r.state.events);
    constexpr uint32_t kWords = sizeof(TpEvent) / sizeof(int4);
    for (uint32_t i = threadIdx.x; i < copy_events * kWords; i += blockDim.x) to[i] = from[i];
  }
}

// The lane's staged events the host reads: all of the round's, up to the
// staging's capacity (a round with more is rerun by the host); none
// without a staging.
__device__ __forceinline__ uint32_t lane_events_out(const TpState& s) {
  return s.event_stage != nullptr ? min(s.counters->events, s.event_capacity) : 0u;
}

__global__ void lanes_round_kernel(const TpLaneRound* __restrict__ rounds, int L,
                                   TpLaneStep* steps, uint32_t* scratch,
                                   unsigned long long* profile) {
  extern __shared__ uint32_t prefix[];  // L + 1
  const cg::grid_group grid = cg::this_grid();
  LaneClock clock{profile, 0};
  clock.start();
  clock.count(kLaneProfileLaunches);
  if (clock.on()) profile[kLaneProfileLanes] += static_cast<unsigned long long>(L);
  // What the single-stream path queues before its round: the frame
  // parameters, the frame's start (counters, histogram, start token).
  for (int l = blockIdx.x; l < L; l += gridDim.x) {
    const TpLaneRound& r = rounds[l];
    lane_round_begin(r);
    if (threadIdx.x == 0) {
      TpLaneStep st;
      st.head = r.run_round ? r.params.head : kLaneIdle;
      st.max_passes = r.params.max_passes;
      st.collect = r.params.collect;
      st.prune = r.params.prune;
      st.closing = r.run_round && r.params.max_passes > 0;
      st.pruned = 0;
      steps[l] = st;
      if (r.params.chain_passes > 0) r.state.chain->go = 0;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) scratch[kChainedSlot] = 0;
  grid.sync();
  clock.lap(kLanePhaseSetup);
  lanes_round_body(grid, rounds, L, steps, scratch, prefix, clock);
  grid.sync();  // the events are collected
  clock.lap(kLanePhaseCollect);
  lanes_prune(grid, rounds, L, steps, prefix, clock);
  grid.sync();  // the frames' counters are final
  clock.lap(kLanePhasePruneCompact);
  // Chaining, as tp_round's: the next frame's emitting round for the lanes
  // whose frame ended here.
  for_lanes(L, [&](int l) {
    const TpLaneRound& r = rounds[l];
    TpLaneStep& st = steps[l];
    const bool chained_here = st.pruned && r.params.chain_passes > 0;
    st.head = kLaneIdle;
    st.closing = 0;
    if (!chained_here) return;
    const TpCounters c = *r.state.counters;
    TpFrame n = r.frame[1];
    n.first_record = r.frame->first_record + static_cast<int32_t>(c.records);
    if (n.first_record >= n.record_limit) return;
    r.state.chain->prev[0] = c;  // one frame at most here (TpLaneRound)
    *r.frame = n;
    reset_counters(r.state.counters, n);
    r.state.chain->go = 1;
    st.head = kRoundHeadEmit;
    st.max_passes = r.params.chain_passes;
    st.collect = 1;
    st.prune = 0;
    st.closing = r.params.chain_passes > 0;
    atomicAdd(scratch + kChainedSlot, 1u);
  });
  grid.sync();
  clock.lap(kLanePhaseChain);
  if (volatile_load(scratch + kChainedSlot) != 0) {
    clock.count(kLaneProfileChained);
    lanes_round_body(grid, rounds, L, steps, scratch, prefix, clock);
    grid.sync();
    clock.lap(kLanePhaseCollect);
  }
  // What the host reads: the counters, then the chain's outcome.
  for (int l = blockIdx.x; l < L; l += gridDim.x) {
    lane_round_out(rounds[l], lane_events_out(rounds[l].state));
  }
  clock.lap(kLanePhaseOut);  // block 0's share only: no barrier follows
}

// ---------------------------------------------------------------------------
// GPUSPEECH_LANES_TIMELINE (tp_set_lanes_timeline): where each lane's
// span is logged, or null (off). One load a lane when off.
struct LaneTimeline {
  TpLaneSpan* spans;
  unsigned int capacity;
  unsigned int* count;
};
__device__ LaneTimeline g_lane_timeline;

// The batched search with a thread-block cluster per lane (stage S1 of
// docs/search-lanes-plan.md; the batcher's choice on sm_90 devices):
// each cluster runs its lane's round exactly as the single-stream round
// kernel runs a stream's (round_run over the cluster's blocks, with
// cluster barriers instead of grid barriers), so there is no scan over
// the lanes in any phase and no lane waits for another's phases. The
// launch is not cooperative: clusters start as the hardware finds room.
// Clock: NoClock, or ClusterClock for GPUSPEECH_LANES_PROFILE (its own
// instance, so that the plain kernel carries no clock code).
// This is the kernel's body; the kernels below (the plain one and the
// register-capped ones) differ only in the registers a thread may use.
template <class Clock>
__device__ __forceinline__ void lanes_cluster_round(const TpLaneRound* __restrict__ rounds,
                                                    unsigned long long* profile, unsigned int* done,
                                                    unsigned int serial) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the batcher does not pick this kernel below it
#else
  extern __shared__ uint32_t block_hist[];
  const cg::cluster_group cluster = cg::this_cluster();
  const Team t{cluster.block_rank(), cluster.num_blocks()};
  // The lane's descriptor in this block's shared memory: every phase reads
  // the graph's and the state's arrays and capacities through it, which
  // from global memory would be a load each time (the single-stream
  // kernel has them as kernel parameters).
  __shared__ TpLaneRound lane;
  {
    static_assert(sizeof(TpLaneRound) % sizeof(uint32_t) == 0, "copied in words");
    constexpr int kWords = sizeof(TpLaneRound) / sizeof(uint32_t);
    const uint32_t* from = reinterpret_cast<const uint32_t*>(rounds + blockIdx.x / cluster.num_blocks());
    for (int i = threadIdx.x; i < kWords; i += blockDim.x) reinterpret_cast<uint32_t*>(&lane)[i] = from[i];
    __syncthreads();
  }
  const TpLaneRound& r = lane;
  // The lane's start (GPUSPEECH_LANES_TIMELINE), kept in shared memory so
  // that no register is held across the round for it.
  __shared__ unsigned long long span_start;
  if (g_lane_timeline.spans != nullptr && t.rank == 0 && threadIdx.x == 0) span_start = ClusterClock::now();
  // Per lane (GPUSPEECH_LANES_PROFILE): lane time by phase, summed over
  // the lanes of every launch.
  Clock clock;
  clock.init(profile, t.rank == 0 && threadIdx.x == 0);
  clock.start();
  if (clock.on) {
    atomicAdd(profile + kLaneProfileLanes, 1ull);
    if (blockIdx.x == 0) atomicAdd(profile + kLaneProfileLaunches, 1ull);
  }
  // What the single-stream path queues before its round (as the lanes
  // kernel's setup phase): the frame parameters, the frame's start.
  if (t.rank == 0) lane_round_begin(r);
  cluster.sync();
  clock.lap(kLanePhaseSetup);
  // The round's events' keys, for their order: the device's rescoring
  // (in the round) and place_events (after it).
  __shared__ unsigned long long event_keys[kPlacedEvents];
  if (r.run_round) {
    TpRoundParams p = r.params;
    p.next = r.frame + 1;  // the chained frame's parameters, copied above
    round_run(cluster, t, r.graph, r.state, r.frame, p, block_hist, event_keys, clock);
  }
  // With a completion flag the lane's stream goes on (and its next round
  // may start in another launch) while this launch still runs: every
  // block's writes to the lane's tables must be visible device-wide first.
  if (done != nullptr) __threadfence();
  cluster.sync();
  // The round's last phase (the collection, or the compaction) ends here;
  // with what follows it is counted as "out".
  // The events in the host's order, by every block (the count, read after
  // the barrier, is the same for all, and so is the decision).
  const uint32_t events = lane_events_out(r.state);
  const bool placed = events > 1 && events <= kPlacedEvents;
  if (placed) {
    place_events(t, r.state, events, event_keys);
    // With a completion flag, every block's stores to the host's buffer
    // are visible before the first block raises the flag.
    if (done != nullptr) {
      __threadfence_system();
      cluster.sync();
    }
  }
  // What the host reads: the counters, the chain's outcome, the events
  // (unless placed above).
  if (t.rank == 0) lane_round_out(r, placed ? 0u : events);
  clock.lap(kLanePhaseOut);  // the first block's share of the copy
  // The lane's completion flag (mapped host memory): written once the copy
  // above is visible to the host, so the host may hand the lane's round
  // back before the launch's slowest lane ends.
  if (done != nullptr && t.rank == 0) {
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0)
      *reinterpret_cast<volatile unsigned int*>(done + blockIdx.x / cluster.num_blocks()) = serial;
  }
  // The lane's span, from its first block's start to its flag.
  if (t.rank == 0 && threadIdx.x == 0) {
    const LaneTimeline log = g_lane_timeline;
    if (log.spans != nullptr) {
      const unsigned int at = atomicAdd(log.count, 1u);
      if (at < log.capacity) {
        unsigned int sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        TpLaneSpan span;
        span.start_ns = span_start;
        span.end_ns = ClusterClock::now();
        span.launch = reinterpret_cast<unsigned long long>(rounds);
        span.serial = serial;
        span.lane = blockIdx.x / cluster.num_blocks();
        span.lanes = gridDim.x / cluster.num_blocks();
        span.sm = sm;
        log.spans[at] = span;
      }
    }
  }
#endif
}

template <class Clock>
__global__ void lanes_cluster_round_kernel(const TpLaneRound* __restrict__ rounds,
                                           unsigned long long* profile, unsigned int* done,
                                           unsigned int serial) {
  lanes_cluster_round<Clock>(rounds, profile, done, serial);
}

// The same with at least `MinBlocks` blocks an SM by registers (at most
// 65 536 / (MinBlocks * 256) a thread; the plain instance takes 56, so 4
// blocks an SM, 28 clusters of 16 on the H100): more lanes resident, each
// with fewer registers. The batcher's default is 6 (42 clusters of 16).
template <class Clock, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks)
    lanes_cluster_round_capped_kernel(const TpLaneRound* __restrict__ rounds, unsigned long long* profile,
                                      unsigned int* done, unsigned int serial) {
  lanes_cluster_round<Clock>(rounds, profile, done, serial);
}

using ClusterRoundKernel = void (*)(const TpLaneRound*, unsigned long long*, unsigned int*, unsigned int);

// tp_set_lanes_min_blocks's choice, for this process (each device's
// batcher sets it, with the same value, while others may launch).
std::atomic<int> lanes_min_blocks{0};

// The cluster kernel's instance for this process's register cap, with the
// lane clock (`profiled`) or without.
ClusterRoundKernel cluster_round_kernel(bool profiled) {
  switch (lanes_min_blocks.load(std::memory_order_relaxed)) {
    case 5:
      return profiled ? lanes_cluster_round_capped_kernel<ClusterClock, 5>
                      : lanes_cluster_round_capped_kernel<NoClock, 5>;
    case 6:
      return profiled ? lanes_cluster_round_capped_kernel<ClusterClock, 6>
                      : lanes_cluster_round_capped_kernel<NoClock, 6>;
    default:
      return profiled ? lanes_cluster_round_kernel<ClusterClock> : lanes_cluster_round_kernel<NoClock>;
  }
}

__global__ void remap_histories_kernel(TpToken* tokens, uint32_t n, const int32_t* __restrict__ map) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    tokens[i].hist = map[tokens[i].hist];
}

__global__ void clear_touched_kernel(TpState s) {
  const uint32_t n = s.counters->touched;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int32_t e = s.touched[i];
    s.entries[e].best = kNoCandidate;
    s.entries[e].key = kEmptyKey;
  }
}

}  // namespace

cudaError_t tp_collect_events(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks,
                              cudaStream_t stream) {
  collect_events_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  return cudaGetLastError();
}

cudaError_t tp_offer_events(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks,
                            cudaStream_t stream) {
  offer_events_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  resolve_events_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  return cudaGetLastError();
}

cudaError_t tp_clear_touched(const TpState& s, int blocks, cudaStream_t stream) {
  clear_touched_kernel<<<blocks, kThreads, 0, stream>>>(s);
  return cudaGetLastError();
}

cudaError_t tp_remap_histories(TpToken* tokens, uint32_t n, const int32_t* map, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const uint32_t blocks = std::min<uint32_t>((n + kThreads - 1) / kThreads, 1024u);
  remap_histories_kernel<<<blocks, kThreads, 0, stream>>>(tokens, n, map);
  return cudaGetLastError();
}

cudaError_t tp_frame_begin(const TpState& s, const TpFrame* f, cudaStream_t stream) {
  frame_begin_kernel<<<1, kThreads, 0, stream>>>(s, f);
  return cudaGetLastError();
}

cudaError_t tp_start(const TpState& s, const TpFrame* f, cudaStream_t stream) {
  start_kernel<<<1, 1, 0, stream>>>(s, f);
  return cudaGetLastError();
}

cudaError_t tp_emit(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks, bool heavy,
                    cudaStream_t stream) {
  emit_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  if (heavy) emit_heavy_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  emit_resolve_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f);
  return cudaGetLastError();
}

cudaError_t tp_epsilon_pass(const TpGraph& g, const TpState& s, const TpFrame* f, int pass,
                            int blocks, bool heavy, cudaStream_t stream) {
  relax_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f, pass);
  if (heavy) relax_heavy_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f, pass);
  relax_resolve_kernel<<<blocks, kThreads, 0, stream>>>(g, s, f, pass);
  return cudaGetLastError();
}

int tp_round_blocks(int sm_count, int max_per_sm, int bins) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, round_kernel, kThreads,
                                                    static_cast<size_t>(bins) * sizeof(uint32_t)) !=
          cudaSuccess ||
      per_sm < 1)
    return 0;
  return std::min(per_sm, std::max(max_per_sm, 1)) * sm_count;
}

cudaError_t tp_round(const TpGraph& g, const TpState& s, TpFrame* f, const TpRoundParams& p,
                     int blocks, int bins, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = p.prune ? static_cast<size_t>(bins) * sizeof(uint32_t) : 0;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeCooperative;
  attribute[0].val.cooperative = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, round_kernel, g, s, f, p);
}

// The launch configuration of the cluster lanes kernel: `clusters`
// clusters of `cluster` blocks, a histogram of `bins` in shared memory.
// `attribute` is the caller's, kept alive with the configuration.
static cudaLaunchConfig_t cluster_launch_config(int clusters, int cluster, size_t bins, cudaStream_t stream,
                                                cudaLaunchAttribute* attribute) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = bins * sizeof(uint32_t);
  config.stream = stream;
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute->val.clusterDim.y = 1;
  attribute->val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}

cudaError_t tp_lanes_cluster_round(const TpLaneRound* rounds, int lanes, int cluster, int bins,
                                   cudaStream_t stream, unsigned long long* profile,
                                   unsigned int* done, unsigned int serial) {
  if (lanes <= 0) return cudaSuccess;
  // (tp_lanes_cluster_size allowed sizes above 8 on both instances, once.)
  const ClusterRoundKernel kernel = cluster_round_kernel(profile != nullptr);
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      cluster_launch_config(lanes, cluster, static_cast<size_t>(bins), stream, &attribute);
  return cudaLaunchKernelEx(&config, kernel, rounds, profile, done, serial);
}
size_t tp_lanes_scratch_bytes(int lanes) {
  return static_cast<size_t>(lanes) * sizeof(TpLaneStep) + kLaneScratchWords * sizeof(uint32_t);
}

int tp_lanes_round_blocks(int sm_count, int max_per_sm, int max_lanes) {
  int per_sm = 0;
  const size_t smem = static_cast<size_t>(max_lanes + 1) * sizeof(uint32_t);
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lanes_round_kernel, kThreads, smem) !=
          cudaSuccess ||
      per_sm < 1)
    return 0;
  return std::min(per_sm, std::max(max_per_sm, 1)) * sm_count;
}

cudaError_t tp_set_lanes_timeline(TpLaneSpan* spans, unsigned int capacity, unsigned int* count) {
  const LaneTimeline log{spans, capacity, count};
  return cudaMemcpyToSymbol(g_lane_timeline, &log, sizeof(log));
}

cudaError_t tp_set_emit_group(int width) {
  return cudaMemcpyToSymbol(c_emit_group, &width, sizeof(width));
}

void tp_set_lanes_min_blocks(int blocks) {
  lanes_min_blocks.store(blocks == 5 || blocks == 6 ? blocks : 0, std::memory_order_relaxed);
}

int tp_lanes_cluster_size(int wanted) {
  // The kernel must hold sm_90 code (a build for older SMs only traps in
  // it), and the device must place at least one cluster of that size.
  cudaFuncAttributes attr{};
  // The plain kernel; the profiled one takes the same size (one block on
  // each of the cluster's SMs fits either).
  const ClusterRoundKernel kernel = cluster_round_kernel(false);
  const ClusterRoundKernel profiled = cluster_round_kernel(true);
  if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess || attr.binaryVersion < 90) {
    cudaGetLastError();
    return 0;
  }
  // The largest histogram beside the kernel's static shared memory (the
  // event keys' 16 KiB among it) passes the 48 KiB a block gets without
  // asking; both instances ask for it once here.
  const int hist_bytes = kMaxHistogramBins * static_cast<int>(sizeof(uint32_t));
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, hist_bytes) != cudaSuccess ||
      cudaFuncSetAttribute(profiled, cudaFuncAttributeMaxDynamicSharedMemorySize, hist_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  for (int c = wanted; c >= 1; c /= 2) {
    // Sizes above 8 are allowed here, once per device, on both instances
    // (the plain one and the profiled one), not at each launch.
    if (c > 8 && (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess ||
                  cudaFuncSetAttribute(profiled, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                      cudaSuccess)) {
      cudaGetLastError();
      continue;
    }
    cudaLaunchAttribute attribute;
    const cudaLaunchConfig_t config = cluster_launch_config(1, c, kMaxHistogramBins, nullptr, &attribute);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess &&
        clusters > 0)
      return c;
    cudaGetLastError();
  }
  return 0;
}

int tp_lanes_clusters_resident(int cluster, int bins) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      cluster_launch_config(1, cluster, static_cast<size_t>(bins), nullptr, &attribute);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, cluster_round_kernel(false), &config) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters;
}

cudaError_t tp_lanes_round(const TpLaneRound* rounds, int lanes, void* scratch, int blocks,
                           cudaStream_t stream, unsigned long long* profile) {
  if (lanes <= 0) return cudaSuccess;
  TpLaneStep* steps = static_cast<TpLaneStep*>(scratch);
  uint32_t* counters = reinterpret_cast<uint32_t*>(steps + lanes);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(lanes + 1) * sizeof(uint32_t);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeCooperative;
  attribute[0].val.cooperative = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, lanes_round_kernel, rounds, lanes, steps, counters, profile);
}

cudaError_t tp_prune(const TpState& s, const TpFrame* f, int bins, int blocks,
                     cudaStream_t stream, bool gated) {
  prune_histogram_kernel<<<blocks, kThreads, bins * sizeof(uint32_t), stream>>>(s, f, gated);
  prune_cutoff_kernel<<<1, kCutoffThreads, 0, stream>>>(s, f, gated);
  prune_compact_kernel<<<blocks, kThreads, 0, stream>>>(s, f, gated);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
