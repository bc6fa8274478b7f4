// CUDA kernels of token passing (common/search/cuda_searcher.cpp drives
// them; token_passing.h states the rules, cpu_searcher.cpp is the
// reference). Plain host-callable launch wrappers, as in feature_kernels.cuh:
// each queues work on `stream` and returns cudaGetLastError().
//
// Device state: a stream's token state is sized by what a frame reaches,
// not by the graph (a graph of 22 M virtual states would otherwise cost
// over 2 GB a stream). The states a frame touches get entries in a hash
// table (open addressing, linear probing, keys claimed by atomicCAS) of
// TpEntry, one 32-byte sector each, so a probe, an offer and a winner's
// commit touch one sector of the entry instead of one per field:
//   entries[e].key      the virtual state of entry e, kEmptyKey when free
//   entries[e].best     packed (cost key, arc) candidate, kNoCandidate when
//                       empty; atomicMin picks winners without races
//   entries[e].record   the record of the entry's token (this frame)
//   touched             every entry that got a candidate this frame; the
//                       pruning step frees them all, so the table is empty
//                       between frames
//   changed[2]          the tokens that changed in the last pass / this
//                       pass; their `state` field holds the entry
//   heavy               tokens with more than kHeavyDegree arcs, which a
//                       whole block expands each
//   live[2]             pruned live tokens of the previous / this frame
//                       (virtual states: they outlive the table's entries)
//   winners             the improving offers of the emitting step (the
//                       whole buffer) and of closure pass p (half p % 2),
//                       each with its entry, arc and the source token's
//                       record and history: an entry's winner in a phase is
//                       the logged offer whose arc its best candidate
//                       names, and it takes its record and history from
//                       there (no lookup of the source token)
//   staging             word records made this frame (index first_record + i)
// A frame that fills more than half the table (table_limit) counts an
// overflow; the host gives the stream a table twice the size and runs the
// frame again from the unchanged previous live list.
// With word-end rescoring (token_passing.h) every state is a virtual state
// (state * slots + slot), tokens carry an LM history id, and
//   entries[e].hist     the history beside the record
//   entries[e].round_mark  id of the closure round that last changed e
//                       (kNoRound when none: ids run from 1 to kNoRound - 1)
//   word_ends           the round's changed entries at word-end states
//   events              word-end events of the round (written by the device
//                       straight into mapped host memory)
//   offers              the host's rescored events (read by the device
//                       straight from mapped host memory)
// List lengths live in TpCounters on the device, so kernels read them there
// and the host need not wait between kernels; it waits once per frame for
// the counters (and once for the frame's records).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/search/lm_history_table.h"

namespace gpuspeech {
namespace cuda {

// The largest histogram the pruning kernels keep in shared memory.
constexpr int kMaxHistogramBins = 8192;
// Tokens with more arcs than this are expanded by a whole block each.
constexpr int kHeavyDegree = 64;

// One arc as the kernels read it: a 16-byte record, so an arc is one
// aligned load (one 32-byte sector) where the five arrays it replaced took
// a sector each. The destination's state flags ride in dest's top bits: a
// winner learns whether it starts the closure and whether it is a word end
// from the arc it already loads for its output label.
struct alignas(16) TpArc {
  uint32_t dest;  // destination state | its flags << kStateFlagShift
  float cost;
  int32_t ilabel;
  int32_t olabel;
};
// States and per-state arc counts must fit below the flags.
constexpr int kStateFlagShift = 30;
constexpr uint32_t kStateIndexMask = (1u << kStateFlagShift) - 1u;

struct TpGraph {
  // Per state: x its first arc (arcs are in CSR order), y its arc count |
  // its flags << kStateFlagShift. One 8-byte load gives a token its range
  // and flags.
  const uint2* states;
  const TpArc* arcs;
  // The epsilon arcs alone, for the closure and the word-end collection
  // (most arcs of a state with epsilon arcs are emitting ones, which those
  // phases would load only to pass over). Per state, num_states + 1 of
  // them: x its first entry in eps_arcs, y how many of its epsilon arcs
  // carry no word label; they come first, its word-label arcs after them,
  // up to the next state's x. eps_arcs holds CSR arc indices, so ties
  // still break on the arc's index and nothing in the results changes.
  const uint2* eps_states;
  const uint32_t* eps_arcs;
  // Word-end rescoring: tokens per state (1 without), whether word-label
  // arcs wait for the word-end step, and the arc count (event candidates'
  // arc fields are num_arcs + event index).
  int32_t slots;
  int32_t rescoring;
  uint32_t num_arcs;
};
// State flags (TpGraph::states and TpArc::dest, above the index).
constexpr uint8_t kStateEpsilon = 1;  // the state has an epsilon arc
constexpr uint8_t kStateWordArc = 2;  // one of them has a word label

struct TpToken {
  int32_t state;  // virtual state
  float cost;
  int32_t record;
  int32_t hist;
};

// A word-end event as the device writes it: Searcher::WordEndEvent's
// fields, padded to 32 bytes so that the kernel writes one as two 16-byte
// stores (the host copies the fields out).
struct alignas(16) TpEvent {
  int32_t source;
  uint32_t arc;
  float cost;
  int32_t record;
  int32_t hist;
  int32_t word;  // the arc's olabel - 1
  int32_t dest;  // the arc's destination graph state
  float acoustic;  // the token's acoustic part (TpState::winner_acoustic), else 0
};

// The layout of Searcher::WordEndOffer (checked on the host).
struct TpOffer {
  int32_t dest;
  float cost;
  int32_t word;
  int32_t record;
  int32_t hist;
  float acoustic;  // the event's
};

// A word end the rescoring computed rather than found in the stream's
// memo (TpLm::memo_*), for the memo to take in the next phase; key
// kLmMemoEmpty where there is nothing to add.
struct TpLmMiss {
  unsigned long long key;  // (history << 32) | graph word
  float delta;
  int32_t next;  // the history after the word
};
constexpr unsigned long long kLmMemoEmpty = ~0ull;
constexpr unsigned long long kLmMemoBusy = ~0ull - 1;

// Word-end rescoring on the device (docs/search-lanes-plan.md, S8 step 5):
// what a stream's rounds rescore with, in device memory. Both LMs and the
// graph words' ids (shared by every stream on the device), the stream's
// history table (its ids are the tokens' histories), and the offers the
// rescoring writes and the next closure round reads (TpState::offers
// points to the same array).
struct TpLm {
  LmRescoringView view;
  LmHistoryTable table;
  TpOffer* offers;    // event_capacity of them, in (source, arc) order
  TpOffer* unsorted;  // the same, by event (before they are placed)
  TpLmMiss* misses;   // by event
  // The stream's memo of word ends, (history, word) -> (delta, next
  // history), direct-mapped, 2^memo_bits entries (keys kLmMemoEmpty when
  // free). A search asks for the same few hundred pairs frame after frame,
  // and a hit costs two loads where a word end costs both LMs' scores (a
  // few hash lookups each, or tens of dependent loads through the tries)
  // and a probe of the history table. Cleared with the table (reset,
  // growth).
  unsigned long long* memo_keys;
  uint2* memo_values;  // (delta's bits, next history)
  int memo_bits;
};

struct TpRecord {
  int32_t word;
  int32_t frame;
  int32_t prev;
  float cost;
};

struct TpCounters {
  uint32_t touched;
  uint32_t changed[2];
  uint32_t heavy;
  uint32_t live[2];
  uint32_t records;        // staged this frame; above capacity = overflow
  uint32_t winners;        // the emitting step's improving offers; above
                           // capacity = overflow
  uint32_t relax_winners[2];  // closure pass p's, in [p % 2]
  uint32_t best_emit_key;  // cost key of the emitting step's best token
  uint32_t emit_bound_key;  // the lowest candidate the emitting step has offered so
                            // far (its skip rule); 0xFFFFFFFF: none yet
  uint32_t best_key;       // cost key of the best winner of the other resolve
                           // phases (closure, host offers) and the start token;
                           // the frame's best is min(best_key, best_emit_key)
  uint32_t kept;           // tokens within their beam
  int32_t cut_bin;         // max-active cutoff bin
  uint32_t passes;         // closure passes that changed something
  uint32_t passes_run;     // closure passes that had tokens to relax (the
                           // CPU searcher's count, which max_epsilon_passes bounds)
  uint32_t last_changed;   // improving offers of the last pass queued (non-zero
                           // exactly when it changed a token)
  uint32_t events;         // word-end events of the round; above capacity = overflow
  uint32_t word_ends;      // entries in the round's word-end list; above
                           // capacity, the collection walks every touched entry
  uint32_t overflow;       // non-zero: the state table filled past table_limit
  // Word-end rescoring on the device (TpState::lm) only:
  uint32_t word_end_rounds;  // the frame's rounds that found events (rescored on the device)
  uint32_t word_end_events;  // events rescored on the device this frame
  uint32_t history_full;     // non-zero: the history table could not take a history
};

// The most frames one round may chain behind its own (TpRoundParams::
// chain_frames): a launch then carries up to this many frames' rounds, so
// a stream's round trip through the host is paid once for all of them.
constexpr int kMaxChainedFrames = 8;

// Frames chained to the end of the previous one (tp_round with
// chain_passes): how many began (0 .. chain_frames), and the final
// counters of the frame each one followed: prev[0] the round's own
// frame's, prev[k] the k-th chained frame's (each chained frame resets the
// counters, and the last one begun leaves its own, unpruned, in them).
struct TpChain {
  uint32_t go;
  uint32_t reserved;
  TpCounters prev[kMaxChainedFrames];
};

// An offer of the emitting step that lowered its entry's value, logged by
// the thread that made it, which has the source token at hand. Within one
// emitting step an arc and an entry name one source token (the entry fixes
// the slot, the arc the source state), so exactly one logged offer per
// entry carries the arc of the entry's final candidate: the winner.
struct alignas(16) TpWinner {
  int32_t entry;
  uint32_t arc;
  int32_t record;  // the source token's
  int32_t hist;
};

// A free entry of the state tables.
constexpr int32_t kEmptyKey = -1;
// A round mark no closure round has (round ids are 1 .. kNoRound - 1).
constexpr uint32_t kNoRound = 0xFFFFFFFFu;

// One entry of the state table. All bytes 0xFF is a free entry: key
// kEmptyKey, best kNoCandidate, round_mark kNoRound (record, hist and
// acoustic are written before they are read).
struct alignas(32) TpEntry {
  unsigned long long best;
  int32_t key;
  int32_t record;
  int32_t hist;         // word-end rescoring only
  uint32_t round_mark;  // word-end rescoring only
  float acoustic;       // the word-lattice pass only (TpState::winner_acoustic)
  uint32_t unused;
};
static_assert(sizeof(TpEntry) == 32, "one entry is one 32-byte sector");

struct TpState {
  // The frame's state table (entries e < table_mask + 1, a power of two).
  TpEntry* entries;
  uint32_t table_mask;
  uint32_t table_shift;  // 32 - log2(entries): the hash keeps the top bits
  uint32_t table_limit;  // touched entries allowed before an overflow
  int32_t* touched;
  TpToken* changed[2];
  TpToken* heavy;
  TpToken* live[2];
  // Tokens each list holds; past them a token is lost and an overflow
  // counted (a frame within table_limit never gets there).
  uint32_t changed_capacity;
  uint32_t heavy_capacity;
  uint32_t live_capacity;
  // The improving offers (TpWinner): winner_capacity for the emitting
  // step, half of them for each closure pass.
  TpWinner* winners;
  uint32_t winner_capacity;
  // Word records of two frames: a frame writes its half (TpFrame::
  // staging_base) while the previous frame's are still on their way to the
  // host. staging_capacity is one half's.
  TpRecord* staging;
  uint32_t staging_capacity;
  uint32_t* histogram;
  TpCounters* counters;
  // Word-end rescoring (entries' hist and round_mark in use) or not.
  bool rescoring;
  // Word-end rescoring only (null otherwise):
  TpEvent* events;  // mapped host memory: what the host reads
  // Batched lanes only (null otherwise): device memory that the collection
  // writes the events to, event_capacity of them; the lanes kernel copies
  // each lane's events to `events` at its end, a block a lane, coalesced
  // (one thread's scattered stores across PCIe cost more than the copy).
  TpEvent* event_stage;
  uint32_t event_capacity;
  // Entries the round changed at states with a word arc, each once (its
  // round_mark turning to the round's id adds it): the collection walks
  // these instead of every touched entry.
  int32_t* word_ends;
  uint32_t word_end_capacity;
  const TpOffer* offers;
  TpChain* chain;  // the outcome of tp_round's chaining (rescoring only)
  // Word-end rescoring on the device (device memory), or null: the host
  // rescores. With it the word-end step loops inside the round (tp_round,
  // TpRoundParams::word_end_rounds), and event_stage holds the events.
  const TpLm* lm;
  // The word-lattice pass only (all null otherwise, and then nothing below
  // is read or written: the search without the pass moves no more bytes):
  // the acoustic part of each token's cost (the scores' -acoustic_scale *
  // loglik summed over its frames, token_passing.h's WordRecord::
  // acoustic), kept beside the token wherever the token is, in arrays
  // parallel to the lists so that TpToken stays 16 bytes. A table entry
  // keeps its committed winner's part (TpEntry::acoustic), which is how
  // the changed lists' tokens (entries) find theirs; the events and offers
  // carry it in their own field.
  float* live_acoustic[2];  // beside live[2]
  float* heavy_acoustic;    // beside heavy (the emitting step's heavy tokens)
  float* winner_acoustic;   // beside winners: the candidate's part
  float* staging_acoustic;  // beside staging: each record's part
};

// Per-frame parameters, in device memory: the host writes them before each
// frame (a copy node of the frame's CUDA graph), so one captured graph
// serves every frame.
struct TpFrame {
  const float* loglik;   // this frame's scores (emitting step only)
  float acoustic_scale;
  float beam;
  float word_end_beam;
  float bin_scale;       // histogram_bins / beam, in float
  int bins;
  int max_active;
  int32_t boundary;      // frames consumed after this frame
  int32_t first_record;  // records >= this were made this frame
  int live_in;           // parity of the previous frame's live list
  uint32_t round_id;     // rescoring: id of the closure round being run
  uint32_t num_offers;   // rescoring: offers of this round's word-end step
  int32_t start_state;   // the start frame's token (virtual state)
  int32_t start_history;  // and its LM history (0, or the device table's start id)
  uint32_t staging_base;  // this frame's half of the staging buffer
  // Chained frames only: records a frame may begin at before the host must
  // collect garbage (the store's capacity); at or past it no frame chains.
  int32_t record_limit;
};

// `f` points to the frame's TpFrame in device memory. `blocks` sizes the
// list kernels' grids (they loop over lists of any length). `heavy` false
// (the graph has no state with more than kHeavyDegree arcs) leaves out the
// heavy-list kernels.

// Zeroes the frame's counters and histogram (live[1 - live_in] too).
cudaError_t tp_frame_begin(const TpState& s, const TpFrame* f, cudaStream_t stream);
// The start token (cost 0, no arc, no record, history 0) at
// f->start_state, as the emitting step's only result.
cudaError_t tp_start(const TpState& s, const TpFrame* f, cudaStream_t stream);
// Step 1 and its winners' records; changed[0] = the touched tokens at
// states with epsilon arcs.
cudaError_t tp_emit(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks, bool heavy,
                    cudaStream_t stream);
// Closure pass `pass` (0-based): reads changed[pass % 2], writes the other.
cudaError_t tp_epsilon_pass(const TpGraph& g, const TpState& s, const TpFrame* f, int pass,
                            int blocks, bool heavy, cudaStream_t stream);
// One cooperative launch for a round: the head (kRoundHeadEmit: the
// emitting step as tp_emit; kRoundHeadOffers: tp_offer_events;
// kRoundHeadNone: nothing, a continuation or the start frame), then closure
// passes 0, 1, ... up to max_passes (even, so that a continuation starts on
// the parity this one ended on), stopping after the first pass that changes
// nothing, then (collect) tp_collect_events: the same result as the
// separate calls. With `prune` (rescoring: after collect) then tp_prune
// with `gated`, and with chain_passes > 0 after that the next frame: if
// the round ended its frame (the gate let pruning run) and the next
// frame's records would begin below next->record_limit, chain->go = 1,
// chain->prev[0] = the frame's final counters, *f = *next with
// first_record following the frame's records, counters and histogram
// reset as tp_frame_begin does, and the next frame's emitting round
// (chain_passes passes, events collected, word ends rescored on the
// device if the state has an LM) runs; else chain->go = 0. With
// chain_frames > 1 the chained frame is then pruned the same way and
// chains next[1], and so on: up to chain_frames frames, each begun only
// if the one before it ended (its gate let pruning run) and its records
// fit, chain->go counting those begun and prev[k] the final counters of
// the frame the (k+1)-th followed. The last frame begun is never pruned
// here: its counters are left for the host. `blocks` must be at
// most tp_round_blocks(); `bins` = f->bins (the pruning phases' shared
// memory).
constexpr int kRoundHeadNone = 0;
constexpr int kRoundHeadEmit = 1;
constexpr int kRoundHeadOffers = 2;
struct TpRoundParams {
  int head = kRoundHeadNone;
  int max_passes = 0;
  bool heavy = false;    // the graph has heavy states (kHeavyDegree)
  bool collect = false;
  bool prune = false;
  int chain_passes = 0;
  // With chain_passes: the most frames to chain (1 .. kMaxChainedFrames),
  // and their parameters, next[0 .. chain_frames).
  int chain_frames = 1;
  const TpFrame* next = nullptr;
  // Word-end rescoring on the device (TpState::lm set, collect): after the
  // collection, while it found events and at most word_end_rounds times,
  // the events are put in (source, arc) order, rescored (lm_word_end) and
  // offered, and a closure round with ids round_id + 1, + 2, ... follows,
  // of max(2, pass_limit - passes run) passes rounded up to even, its
  // events collected again: what the host's loop in run_frame_rescoring
  // does, in the launch. It stops with events left (pruning then held
  // back) when a round's closure is unsettled or has run past pass_limit,
  // a buffer overflowed, the history table is full (counters->
  // history_full), there are word_end_rounds rounds with events, or the
  // events would make offer indices reach kNoArc; the host reads which.
  // The host hands a frame word_end_rounds + 1 round ids.
  int word_end_rounds = 0;
  int pass_limit = 0;
};
cudaError_t tp_round(const TpGraph& g, const TpState& s, TpFrame* f, const TpRoundParams& p,
                     int blocks, int bins, cudaStream_t stream);
// The grid size for tp_round: blocks that can be resident at once on
// `sm_count` multiprocessors (with a `bins`-entry histogram in shared
// memory), at most max_per_sm each; 0 if the device cannot say.
int tp_round_blocks(int sm_count, int max_per_sm, int bins);
// Many streams' rounds in one cooperative launch (the batched search of
// the many-streams engine, common/search/cuda_round_batcher.h): each lane,
// that is each stream, runs the round tp_round would run for it, and the
// phases walk the items of all lanes at once (token_passing.cu says how),
// so a lane's results are those of its stream decoded alone. What the
// single-stream path queues around tp_round is part of the lane's
// descriptor: the frame parameters (num_frames of `frames` copied to
// `frame` first: the round's frame, then those it may chain), the frame's
// start (begin_frame: counters and histogram reset as tp_frame_begin;
// start: the start token as tp_start), the round
// itself if run_round, and at the end the counters, then the chain's
// outcome if the state has a chain, copied to `out` (mapped host memory,
// sizeof(TpCounters) + sizeof(TpChain) bytes; of the chain, only the
// entries of prev that its go names are copied). The cooperative lanes
// kernel chains one frame at most (params.chain_frames must be 1); the
// cluster kernel runs round_run, as tp_round does, and chains up to
// chain_frames.
struct TpLaneRound {
  TpGraph graph;
  TpState state;
  TpFrame* frame;
  TpRoundParams params;
  TpFrame frames[1 + kMaxChainedFrames];
  uint32_t num_frames;
  uint32_t begin_frame;
  uint32_t start;
  uint32_t run_round;
  void* out;
};
// The most lanes one launch takes (the scan of their item counts sits in
// shared memory).
constexpr int kMaxLanesPerLaunch = 4096;
// Where the lanes kernel's time goes, a diagnostic (the batcher turns it
// on with GPUSPEECH_LANES_PROFILE=1): per phase, the device time from the
// barrier before it to the barrier after it (ns) and the items it walked
// (tokens, touched entries, offers), summed over launches; then counts.
// Phases whose barrier is skipped (no heavy tokens) fall into the next.
enum TpLanePhase {
  kLanePhaseSetup,          // descriptors copied, frames begun
  kLanePhaseHead,           // emitting step or offers
  kLanePhaseEmitHeavy,      // heavy tokens' emitting arcs, a block each
  kLanePhaseEmitResolve,    // the emitting step's winners
  kLanePhaseRelax,          // a closure pass's epsilon arcs
  kLanePhaseRelaxHeavy,     // its heavy tokens
  kLanePhaseRelaxResolve,   // its winners
  kLanePhaseCollect,        // word-end events
  kLanePhaseRescore,        // word ends rescored on the device (TpLm), each round's
  kLanePhasePruneHistogram, // the histogram
  kLanePhasePruneCutoff,    // the max-active cutoff, a block a lane
  kLanePhasePruneCompact,   // the next live list, tables freed
  kLanePhaseChain,          // the next frame chained
  kLanePhaseOut,            // counters copied out (block 0's share)
  kLanePhases
};
constexpr int kLaneProfileNs = 0;
constexpr int kLaneProfileItems = kLanePhases;
constexpr int kLaneProfileLaunches = 2 * kLanePhases;
constexpr int kLaneProfileLanes = kLaneProfileLaunches + 1;
constexpr int kLaneProfilePasses = kLaneProfileLaunches + 2;   // closure passes
constexpr int kLaneProfileChained = kLaneProfileLaunches + 3;  // launches that chained
constexpr int kLaneProfileWords = kLaneProfileLaunches + 4;

// `rounds` (device memory) holds `lanes` descriptors; `scratch` is device
// memory of tp_lanes_scratch_bytes(lanes); `blocks` at most
// tp_lanes_round_blocks(..., max_lanes >= lanes). `profile`: null, or
// kLaneProfileWords counters in device memory that the launch adds to.
cudaError_t tp_lanes_round(const TpLaneRound* rounds, int lanes, void* scratch, int blocks,
                           cudaStream_t stream, unsigned long long* profile = nullptr);
// The same rounds with a thread-block cluster of `cluster` blocks (1-16,
// see tp_lanes_cluster_size) per lane, each running its lane's round as
// tp_round does, with cluster barriers (sm_90; stage S1 of
// docs/search-lanes-plan.md). Not cooperative: clusters start as room
// frees. `bins`: the largest histogram of the lanes. `profile` (or null):
// the kLaneProfileWords counters, here lane time by phase summed over the
// lanes (each lane's first thread times its own phases), not device time.
// `done` (or null): `lanes` flags in mapped host memory; lane i stores
// `serial` into done[i] once its round and its `out` are visible to the
// host and to later launches, before the launch as a whole ends.
cudaError_t tp_lanes_cluster_round(const TpLaneRound* rounds, int lanes, int cluster, int bins,
                                   cudaStream_t stream, unsigned long long* profile = nullptr,
                                   unsigned int* done = nullptr, unsigned int serial = 0);
// One lane's time on the device in the cluster kernel (a measurement:
// GPUSPEECH_LANES_TIMELINE): from its first block's start to its
// completion flag, by the device's global timer (ns), with its launch
// (the descriptors' device address and the launch's serial) and where it
// ran (the first block's SM).
struct TpLaneSpan {
  unsigned long long start_ns;
  unsigned long long end_ns;
  unsigned long long launch;
  unsigned int serial;
  unsigned int lane;
  unsigned int lanes;  // the launch's lanes
  unsigned int sm;
};
// Every cluster-kernel lane on the current device from now on appends its
// span to `spans` (device memory) while *count (device memory, the next
// free index) is below `capacity`; null spans turns it off.
cudaError_t tp_set_lanes_timeline(TpLaneSpan* spans, unsigned int capacity, unsigned int* count);
// Threads per token in the emitting step of every kernel on the current
// device from now on (1-32, a power of two; default 8). Only while no
// kernel of this module runs on the device (CudaSearcher sets it once, 2
// when the device's first search is batched); the results do not depend
// on it.
cudaError_t tp_set_emit_group(int width);
// Which instance of the cluster kernel this process launches from now on
// (before tp_lanes_cluster_size): 0, the compiler's registers (56 a
// thread: 4 blocks an SM), or 5 or 6, at least that many blocks an SM by
// registers, so more lanes are resident, each with fewer registers. The
// batcher asks for 6 (GPUSPEECH_LANES_MIN_BLOCKS to measure others); the
// results do not depend on it.
void tp_set_lanes_min_blocks(int blocks);
// The largest cluster size c <= wanted, halving, that tp_lanes_cluster_round
// can launch on the current device (sm_90 code and room for one cluster);
// 0 if none.
int tp_lanes_cluster_size(int wanted);
// How many clusters of `cluster` blocks the device holds at once, with a
// histogram of `bins` (cudaOccupancyMaxActiveClusters); 0 if unknown.
int tp_lanes_clusters_resident(int cluster, int bins);
size_t tp_lanes_scratch_bytes(int lanes);
// The grid size for tp_lanes_round: blocks resident at once on `sm_count`
// multiprocessors, at most max_per_sm each, with room for `max_lanes`
// lanes; 0 if the device cannot say.
int tp_lanes_round_blocks(int sm_count, int max_per_sm, int max_lanes);

// Step 3: beam, max-active histogram and cutoff, compaction into
// live[1 - live_in]; frees every touched entry.
// `bins` = f->bins (sizes the per-block histogram in shared memory; at most
// kMaxHistogramBins). `gated` (rescoring): does nothing unless the round
// was the frame's last and complete: no word-end events, closure settled,
// records within the staging buffer, no table overflow (the host checks
// the same counters).
cudaError_t tp_prune(const TpState& s, const TpFrame* f, int bins, int blocks,
                     cudaStream_t stream, bool gated = false);

// Rescoring: the word-end step's device halves. tp_collect_events lists
// the events of the round f->round_id (tokens it changed that may relax,
// one per word-label arc) in s.events (counters->events); it does nothing
// while the closure is unsettled (counters->last_changed != 0), so a round
// cut short by its pass batch is continued, not collected twice. s.events
// and s.offers may point to mapped host memory (the host reads and writes
// them in place). tp_offer_events
// offers the host's f->num_offers rescored events and makes the winners'
// records; they start round f->round_id in changed[0].
cudaError_t tp_collect_events(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks,
                              cudaStream_t stream);
cudaError_t tp_offer_events(const TpGraph& g, const TpState& s, const TpFrame* f, int blocks,
                            cudaStream_t stream);
// Frees every touched entry (a frame abandoned before pruning).
cudaError_t tp_clear_touched(const TpState& s, int blocks, cudaStream_t stream);
// The histories of `n` tokens renamed: tokens[i].hist = map[tokens[i].hist]
// (a history table grown, lm_history_rehash).
cudaError_t tp_remap_histories(TpToken* tokens, uint32_t n, const int32_t* map, cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
