// Frame-synchronous token passing (Viterbi beam search) over a SearchGraph,
// in the style of Kaldi's "faster decoder": what is searched, the exact
// rules both searchers follow, the word-record buffer, and the results.
// CpuSearcher (cpu_searcher.h) is the reference implementation and
// CudaSearcher (cuda_searcher.h) runs the same rules on the device; on the
// same graph and scores they find the same best path.
//
// A token is (state, cost, record): the best path cost into the state and
// the last word record on that path. Costs are minus log probabilities:
// lower is better. Frame t (0-based) of scores is consumed like this:
//
//  1. Emitting step. Every live token at state s follows every arc
//     s -> d with ilabel > 0:
//        cost' = (cost + arc.cost) - acoustic_scale * loglik[t][ilabel - 1]
//     Each destination keeps the candidate that is smallest in
//     (cost', arc index) order (search_arithmetic.h): the tie-break is the
//     lower CSR arc index, so the result does not depend on the order
//     tokens are visited in. Non-finite candidates are dropped.
//  2. Epsilon closure at frame boundary t + 1, by passes. Pass k relaxes
//     the epsilon arcs (ilabel == 0) of the tokens that changed in pass
//     k - 1 (pass 1: those the emitting step created), using their costs as
//     of the end of pass k - 1 (a Jacobi iteration, so again the visiting
//     order cannot matter); a destination changes when its (cost, arc) value
//     drops. Passes repeat until nothing changes. A token relaxes only if
//     its cost is within `beam` of the best cost of step 1 (`word_end_beam`
//     if it passed a word label at this boundary). More than
//     max_epsilon_passes passes means a negative-cost epsilon cycle: an
//     error.
//  3. Pruning. With best = the lowest cost now, a token survives if
//     cost <= best + beam (best + word_end_beam if its last word record was
//     made at this boundary). If more than max_active survive, a histogram
//     of (cost - best) over histogram_bins bins spanning the beam gives a
//     cutoff bin instead of a sort: the smallest bin k at which the
//     cumulative count exceeds max_active; tokens in bins < max(k, 1)
//     survive (so the best bin always does, even if it alone is larger).
//
// Before frame 0 the start state gets a token of cost 0 and the closure of
// step 2 runs at boundary 0.
//
// Word records: whenever a winning token came over an arc with an output
// label, a record (word, frame boundary, previous record, cost) is appended
// and the token carries its index. Records form a tree (each points to an
// earlier one). The buffer is bounded: at the start of a frame, if it holds
// max_word_records or more, the records no live token reaches are dropped
// and the rest renumbered (garbage collection); if more than half the
// capacity is still live the capacity doubles, so memory follows what is
// live, not the length of the stream.
//
// Results: the best token is the one with the lowest cost + final cost among
// final states (lowest cost of all if none is final; ties: lower state
// index); its record chain gives the words. The partial result is the best
// token's chain, of which the words every live token's chain shares (their
// common ancestor and everything before) are marked stable.
// With the word-lattice pass on (SearchOptions::lattice, word_lattice.h),
// best() takes its words from the best path through the lattice of every
// record of the utterance instead; partial() and nbest() stay as above.
//
// Word-end rescoring (optional; a searcher made with an LmRescorer,
// lm_rescorer.h). The graph was built with a pruned LM; the full LM is
// applied on the host at word ends, and each graph state holds up to
// K = lm_histories tokens with different LM histories so that a rescored
// word end can beat a path the pruned LM preferred:
//
//  * A token also carries an LM history id (the rescorer's table of word
//    histories; 0 = the utterance start) and lives in a slot: its
//    "virtual state" is state * K + slot, slot = the history's hash mod K.
//    Every per-state rule above holds per virtual state; arcs without a
//    word label keep the slot and the history. Histories that share a slot
//    merge by plain Viterbi (the best, rescored cost wins): K bounds the
//    work, not correctness of any cost.
//  * Word-label arcs are not relaxed in the closure passes. A closure
//    round is: passes over the other epsilon arcs until nothing changes;
//    then the word-end step: every token that changed in the round (the
//    emitting step's winners in round 0) and may relax (the beam rule of
//    step 2) yields one event per epsilon arc with an output label:
//    (source virtual state, arc, cost + arc cost, record, history). The
//    events are put in (source, arc) order; event i, word w = olabel - 1,
//    gets from the rescorer (delta, history') for (history, w) and offers
//        cost_i = (cost + arc cost) + delta
//    to virtual state dest * K + slot(history') with the candidate's arc
//    field num_arcs + i (ties: the lower event index), only if cost_i is
//    within `beam` of the emitting step's best (search::offer_in_beam: a
//    costlier one is inert, and leaving it out makes the word records, all
//    of which the word-lattice pass reads, the same on every searcher; a
//    search without the lattice pass finds the same tokens either way).
//    Each event that won
//    its destination appends its record (cost_i) and sets the history; the
//    winners start the next round. Rounds repeat until a word-end step
//    finds no event. Then pruning (step 3), unchanged.
//  * delta = language_weight * (full-LM cost of w after the history -
//    pruned-LM cost of w after it): the arc costs the pruned graph charged
//    for w are, on the path, replaced by the full LM's. Filler words
//    (silences, noises) are transparent: delta 0, history unchanged.
//  * At the end, a final token's total also adds the rescorer's end delta
//    (the same difference for the sentence end </s>).
// Rescoring needs every word label on an epsilon arc (the compiler's
// word_labels_on_epsilon); the searcher checks it. Without a rescorer K is 1,
// every history 0, and the closure relaxes word-label arcs with the others,
// as above.
//
// Word times. The graph compiler puts each word's output label on an arc at
// the word's end (common/search/graph_compiler.h); a record made when frame t
// is consumed (or at boundary t + 1 by an epsilon arc) ends its word at frame
// t, and the word starts where the previous record ended. The first word
// starts at frame 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <memory>
#include <vector>

#include "common/search/lattice_options.h"
#include "common/search/search_graph.h"

namespace gpuspeech {

struct SearchOptions {
  // Beams are natural-log cost differences. beam: -ln(1e-42), narrower than
  // pocketsphinx's -beam 1e-48 because this search runs over the fully
  // expanded graph with no second (flat) pass. On the LibriVox set 1e-40
  // gave the same words as 1e-48 until noise subtraction came into the
  // front end; since then 1e-40 loses one word to a search error that
  // 1e-42 keeps (docs/benchmarks.md). word_end_beam: pocketsphinx's
  // -wbeam 7e-29.
  float beam = 96.71f;
  float word_end_beam = 64.8f;  // <= beam
  // Graph states kept per frame (pocketsphinx -maxhmmpf, 30000 HMMs there).
  // 10000 gives the same words as 30000 on LibriVox and the degraded sets
  // of issue 15 (within two words either way a condition, measured three
  // times), and many streams on one GPU 1.5x the throughput and a third of
  // the live lag (docs/benchmarks.md); 7000 loses words.
  int max_active = 10000;
  // Scores enter as -acoustic_scale * loglik. The graph compiler folds the
  // language weight (pocketsphinx -lw, 6.5 by default) and the word insertion
  // penalty into the arc costs, so the acoustic log-likelihood keeps scale
  // 1, as in pocketsphinx. (Kaldi graphs have unscaled LM costs and decode
  // with acoustic_scale 0.1 instead; same ranking, costs 10x smaller.)
  float acoustic_scale = 1.0f;
  int histogram_bins = 512;           // max-active histogram resolution
  int64_t max_word_records = 1 << 20;  // garbage-collection threshold
  int max_epsilon_passes = 1000;
  // Posterior scale for confidences (see Hypothesis::confidence).
  float posterior_scale = 0.1f;
  // Word-end rescoring only: tokens with different LM histories kept per
  // graph state (K above). 1 = one token per state, as without rescoring.
  int lm_histories = 3;
  // The word-lattice pass over the utterance's records for the final
  // result (word_lattice.h): off unless lattice.language_weight > 0. It
  // needs word-end rescoring (its LM is the rescorer's full LM) and a
  // searcher that keeps acoustic costs apart (CpuSearcher).
  LatticeOptions lattice;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

// One entry of the word-record tree.
struct WordRecord {
  int32_t word = 0;   // graph word id (output label - 1)
  int32_t frame = 0;  // frame boundary at which the label was passed
  int32_t prev = -1;  // earlier record on the same path, -1 if none
  // Number of records on the chain up to this one; 0 until a common
  // ancestor search first needs it (WordRecordStore::depth_of), so that an
  // append does not read its predecessor (likely a cache miss with many
  // streams on a core; not measured apart).
  int32_t depth = 0;
  float cost = 0.0f;  // path cost when the label was passed
  // The acoustic part of `cost` (the scores' -acoustic_scale * loglik
  // summed over the path's frames), for the lattice pass; 0 from a
  // searcher that does not keep it apart.
  float acoustic = 0.0f;
};

// The bounded record buffer with garbage collection.
class WordRecordStore {
 public:
  explicit WordRecordStore(int64_t capacity);

  int32_t append(int32_t word, int32_t frame, int32_t prev, float cost, float acoustic = 0.0f);
  const WordRecord& operator[](int32_t i) const { return records_[i]; }
  int64_t size() const { return static_cast<int64_t>(records_.size()); }
  int64_t capacity() const { return capacity_; }
  bool needs_collection() const { return size() >= capacity_; }
  // Raises the capacity to at least `capacity` without collecting (the
  // lattice pass keeps every record of an utterance).
  void grow(int64_t capacity) { capacity_ = std::max(capacity_, capacity); }
  void clear() { records_.clear(); }

  // Keeps the records reachable from `roots` (indices, -1 = none), in their
  // order, and rewrites `roots` to the new indices. Grows the capacity if
  // more than half of it stays live. Returns the number of records dropped.
  int64_t collect(int32_t* roots, size_t num_roots);

  // Record indices from the oldest to `last` (empty for -1).
  std::vector<int32_t> chain(int32_t last) const;
  // The deepest record on every one of the chains ending at `lasts`, or -1
  // if they share none. Fills in the depths of the records it passes.
  int32_t common_ancestor(const std::vector<int32_t>& lasts);

 private:
  // Record r's depth (0 for -1), computed now if not yet known.
  int32_t depth_of(int32_t r);

  std::vector<WordRecord> records_;
  std::vector<int32_t> depth_path_;  // depth_of's scratch
  int64_t capacity_;
};

// A live token as the searchers hand them out. Inside the searchers
// `state` is the virtual state (state * K + slot); handed out, the graph
// state.
struct SearchToken {
  int32_t state = 0;
  float cost = 0.0f;
  int32_t record = -1;
  int32_t history = 0;  // LM history id (word-end rescoring), else 0
};

class LmRescorer;

struct HypothesisWord {
  int32_t word = 0;  // graph word id
  std::string text;
  int32_t start_frame = 0;  // first frame of the word
  int32_t end_frame = 0;    // last frame of the word (inclusive)
  float cost = 0.0f;        // path cost at the word's end (lattice pass: its acoustic part)
  // Fraction of the posterior mass of the live tokens' distinct word
  // sequences (Hypothesis::confidence) whose sequences hold this word over
  // an overlapping span: 1 when every surviving path agrees on it, lower
  // the more of the mass an alternative takes. In (0, 1]. Set by best(),
  // partial() and nbest() alike. (With the word-lattice pass, best() may
  // hold a word that no live path has over its span: its confidence is 0.)
  float confidence = 1.0f;
};

struct Hypothesis {
  std::vector<HypothesisWord> words;  // filler words left out
  float cost = 0.0f;          // total cost, final cost included if final
  bool final_state = false;   // ended in a final state of the graph
  int32_t frames = 0;         // frames decoded
  int32_t stable_words = 0;   // partial results: leading words no live path can change
  // Posterior of this hypothesis among the distinct word sequences of the
  // live tokens at the end: exp(-posterior_scale * cost), normalised. It is
  // a margin measure over what the beam kept, not a calibrated probability.
  // (partial(): among the tokens' costs without final costs, as the partial
  // result's path is chosen.)
  float confidence = 1.0f;
  // Frames at the end that the hypothesis' path has spent since its last
  // non-filler word ended: in filler words (silence, noises) and in the
  // silence between words; 0 while the path is inside a word. A path with
  // no word at all counts from frame 0. best() and partial() set it, each
  // for its own path. Whether the path is inside a word or a filler is read
  // from the senone of the state its token is in (set_filler_senones());
  // without that, a path after its last word record counts as silent.
  int32_t trailing_silence_frames = 0;

  std::string text() const;  // the words joined by single spaces
};

// Statistics of the search so far (reset with the utterance).
struct SearchStats {
  int64_t frames = 0;
  int64_t tokens_expanded = 0;      // live tokens summed over frames
  int64_t max_live_tokens = 0;
  int64_t epsilon_passes = 0;
  int64_t records_collected = 0;    // dropped by garbage collection
  int64_t collections = 0;
  int64_t record_capacity = 0;
  // Word-end rescoring:
  int64_t word_end_events = 0;      // events rescored
  int64_t rescore_rounds = 0;       // word-end steps that found events
  int64_t rescore_rounds_sorted = 0;  // of them, those whose events the host had to sort
  double rescore_seconds = 0.0;     // host time in the rescorer and event handling
  double rescore_cpu_seconds = 0.0; // the same, the thread's CPU time
  // Frames the CUDA searcher began on the device right behind the previous
  // frame's last round, without a host round trip between them.
  int64_t chained_frames = 0;
  // Of them, those the same launch also ended (pruned) and chained the
  // next one behind (chains of several frames, word ends rescored on the
  // device): the host only finished them, with no round of their own.
  int64_t chained_frames_ended = 0;
  // Frames the CUDA searcher ran again because a device buffer (word
  // records, word-end events) overflowed; the buffer grows first.
  int64_t frames_rerun = 0;
  // Rounds the CUDA searcher launched (each a kernel launch of its own, or
  // a lane of the batcher's launches), and of them those that only pruned
  // a frame, with nothing chained behind. With word ends rescored on the
  // device that is a frame whose rounds ran chained in the launch before
  // and whose successor's scores were not there yet (the last frame of a
  // block of scores or of the utterance).
  int64_t rounds = 0;
  int64_t prune_only_rounds = 0;
  // The CUDA searcher's host thread waiting for the device: for its own
  // CUDA stream, or for the batcher's launch that ran its round (batched
  // search). With rescore_seconds, what is left of a frame's time is the
  // host's own bookkeeping.
  double device_wait_seconds = 0.0;
  // The CUDA searcher's host time in growing its device and pinned
  // buffers (state tables, record staging, word-end events; the frame then
  // runs again, counted in frames_rerun), and in collecting garbage among
  // the word records (live tokens fetched, renumbered, sent back): each
  // with the device waits inside it, which device_wait_seconds leaves out.
  double buffer_growth_seconds = 0.0;
  double garbage_collection_seconds = 0.0;
  // The word-lattice pass at the last best(): its nodes, those on a path
  // to an end, and its time (the dynamic programme and the node table).
  int64_t lattice_nodes = 0;
  int64_t lattice_nodes_used = 0;
  double lattice_seconds = 0.0;
};

// Whether a searcher checks its graph when made (Searcher::check_graph):
// kCheck, or kCheckedByOwner where whoever holds the graph ran check_graph
// on it already with the same answer to `rescoring` (shared recognition
// resources check once, not for every stream: on the en-us graph the
// check is a scan of 64 M arcs).
enum class GraphCheck { kCheck, kCheckedByOwner };

// The part of a searcher that lives on the host: options, the record
// store, and every result (traceback, partial, n-best), computed from the
// live tokens the implementation hands over.
class Searcher {
 public:
  // `graph` (and `rescorer`, if any) must outlive the searcher. With a
  // rescorer, word ends are rescored as described above (the searcher
  // resets the rescorer's history table with each utterance).
  Searcher(const SearchGraph& graph, const SearchOptions& options,
           LmRescorer* rescorer = nullptr, GraphCheck check = GraphCheck::kCheck);
  // What a searcher needs of its graph: SearchGraph::validate(), at least
  // one state, fewer arcs than the packed candidates can name, and with
  // word-end rescoring (`rescoring`) word labels only on epsilon arcs.
  // Throws std::invalid_argument saying which.
  static void check_graph(const SearchGraph& graph, bool rescoring);
  virtual ~Searcher();
  Searcher(const Searcher&) = delete;
  Searcher& operator=(const Searcher&) = delete;

  virtual const char* name() const = 0;
  // Starts an utterance: the start token and its epsilon closure.
  virtual void reset() = 0;
  // Consumes `frames` frames of senone log-likelihoods (natural log, higher
  // is better): row f holds `columns` values, senone k at column k. columns
  // must be >= graph.num_senones. Throws std::invalid_argument on a bad
  // shape, std::logic_error before reset().
  virtual void advance(const float* loglik, int64_t frames, int64_t columns) = 0;

  const SearchGraph& graph() const { return graph_; }
  const SearchOptions& options() const { return options_; }
  int32_t frames_decoded() const { return frames_; }
  const SearchStats& stats() const { return stats_; }
  LmRescorer* rescorer() const { return rescorer_; }
  // Tokens per graph state: options().lm_histories with a rescorer, else 1.
  int slots() const { return slots_; }

  // Marks the senones of filler phones (silence, noises): is_filler_senone
  // has one entry per senone (at least graph().num_senones), nonzero for a
  // filler phone's. With it, trailing_silence_frames tells a path inside a
  // filler from one inside a word (see Hypothesis). Throws
  // std::invalid_argument if the mask is too short. O(arcs), once:
  // set_state_kinds(state_kinds(graph(), is_filler_senone)).
  void set_filler_senones(const std::vector<uint8_t>& is_filler_senone);
  // What set_filler_senones derives: per graph state, what a token there is
  // inside (StateKind). A property of the graph, so many searchers on one
  // graph can share one table (RecognitionResources does).
  static std::shared_ptr<const std::vector<uint8_t>> state_kinds(
      const SearchGraph& graph, const std::vector<uint8_t>& is_filler_senone);
  // Takes a table from state_kinds() for this searcher's graph
  // (std::invalid_argument if its size is not the graph's state count).
  void set_state_kinds(std::shared_ptr<const std::vector<uint8_t>> kinds);

  // The best hypothesis so far (the final result after the last frame),
  // with word confidences.
  Hypothesis best();
  // Whether best() gives the lattice pass's path (when the pass is
  // configured) or the search's own; the records are kept either way.
  // On by default; a client that wants the words only as an alignment
  // (two-pass fMLLR's first pass) turns it off for that utterance, and may
  // turn it on and call best() again to have the pass run after all.
  void set_lattice_result(bool on) { lattice_result_ = on; }
  // The best hypothesis so far, final states not preferred, with
  // stable_words, confidences and trailing_silence_frames set.
  Hypothesis partial();
  // Up to n distinct word sequences among the live tokens, best first,
  // each with its posterior as confidence; word confidences as described
  // at HypothesisWord. n-best from the survivors of the beam only (Viterbi
  // paths that merged earlier are gone), so it is short when the beam is.
  std::vector<Hypothesis> nbest(int n);

  // The utterance's word records (tests, diagnostics): those live tokens
  // reach, or with the lattice pass every one made.
  const WordRecordStore& word_records() const { return records_; }
  // The live tokens, in an unspecified order (tests, diagnostics).
  std::vector<SearchToken> live_tokens() { return fetch_live(); }
  // The words of a live token's LM history (full-LM spellings, oldest
  // first; empty without a rescorer): what a history id stands for, which
  // is what two searchers can be compared on (the CUDA searcher's ids,
  // with word ends rescored on the device, are its own table's).
  virtual std::vector<std::string> history_words(int32_t history) const;

  // The senones the next frame can score: those on the emitting arcs that
  // leave live states, sorted, each once. A scorer that evaluates only
  // these (as pocketsphinx does) gives the search everything it reads.
  std::vector<int32_t> active_senones();

 protected:
  // The current live tokens with records valid in records_.
  virtual std::vector<SearchToken> fetch_live() = 0;
  // The acoustic parts of the live tokens' costs, in fetch_live()'s order
  // (WordRecord::acoustic); empty from a searcher that does not keep them.
  virtual std::vector<float> live_acoustic() { return {}; }
  // Whether the lattice pass runs for this utterance's final result: it is
  // on (SearchOptions::lattice) and its records were all kept.
  bool lattice_active() const {
    return options_.lattice.enabled() && rescorer_ != nullptr && !lattice_given_up_;
  }
  // Set when the utterance's records passed lattice.max_records.
  bool lattice_given_up_ = false;
  bool lattice_result_ = true;
  // For a searcher whose record store is full: while the lattice pass keeps
  // this utterance's records (`keeping`), the store grows instead of being
  // collected, up to lattice.max_records; returns whether it grew. Past the
  // limit the lattice is given up (the result is the Viterbi path) and the
  // caller collects as without a lattice.
  bool grow_records_for_lattice(bool keeping);

  // Histogram cutoff of pruning step 3: tokens in bins < the result survive.
  static int max_active_cutoff_bin(const std::vector<uint32_t>& histogram,
                                   int64_t kept, int max_active);
  // Throws std::invalid_argument unless `columns` covers the graph's senones
  // and the pointers are usable; std::logic_error before reset().
  void check_advance(const float* loglik, int64_t frames, int64_t columns) const;

  // The word-end step's host half, shared by both searchers: rescores
  // `events` (sorted here into (source, arc) order) and fills `out` in that
  // order with each event's destination virtual state and cost_i.
  struct WordEndEvent {
    int32_t source = 0;  // virtual state
    uint32_t arc = 0;
    float cost = 0.0f;   // token cost + arc cost
    int32_t record = -1;
    int32_t history = 0;
    // The arc's word (olabel - 1) and destination graph state, filled by
    // whoever makes the event: the searcher has the arc at hand, and reading
    // them here again would miss the cache in a large graph's arc arrays.
    int32_t word = 0;
    int32_t dest = 0;
    float acoustic = 0.0f;  // the token's acoustic part (lattice pass), else 0
  };
  struct WordEndOffer {
    int32_t dest = 0;   // virtual state
    float cost = 0.0f;  // event cost + delta
    int32_t word = 0;
    int32_t record = -1;  // the previous record
    int32_t history = 0;  // history after the word
    float acoustic = 0.0f;  // the event's, unchanged (the LM's part is not acoustic)
  };
  void rescore_word_ends(std::vector<WordEndEvent>& events, std::vector<WordEndOffer>& out);
  // The start of an utterance for the rescorer (history table cleared).
  void reset_rescorer();
  // A token's total for best/n-best: cost + final cost (+ end delta).
  float final_total(const SearchToken& t) const;
  // The sentence end's correction after LM history `history`
  // (LmRescorer::end_delta); a searcher whose history ids are not the
  // rescorer's answers for its own.
  virtual float history_end_delta(int32_t history) const;
  // rescore_word_ends' scratch: ((source, arc) key, event index), and the
  // sort's working space.
  std::vector<std::pair<uint64_t, uint32_t>> sort_scratch_, sort_scratch_spare_;

  const SearchGraph& graph_;
  SearchOptions options_;
  LmRescorer* rescorer_ = nullptr;
  int slots_ = 1;
  WordRecordStore records_;
  SearchStats stats_;
  int32_t frames_ = 0;
  bool started_ = false;

 private:
  // With the lattice pass: replaces `words` by the lattice's best path
  // among the records (ending in the live tokens, only final ones if
  // `final_only`); unchanged when the searcher keeps no acoustic costs or
  // no path is found.
  void lattice_words(const std::vector<SearchToken>& live, bool final_only,
                     std::vector<HypothesisWord>* words);
  // Words of the chain ending at `record`, fillers dropped, with times.
  std::vector<HypothesisWord> words_of(int32_t record, int32_t* num_records) const;
  bool is_filler_word(int32_t word) const;

  // The distinct non-filler word sequences of the live tokens, each by its
  // best token in (total, state, record) order, best first, with their
  // posteriors (totals with final costs if `with_final_costs`).
  struct SequencePosteriors {
    struct Entry {
      uint64_t key;  // pack_candidate(total, state)
      int token;     // index into the live tokens
      std::vector<int32_t> sequence;  // word ids, last word first
      std::vector<HypothesisWord> words;
      double posterior;  // unnormalised
    };
    std::vector<Entry> entries;
    double sum = 0.0;
  };
  SequencePosteriors sequence_posteriors(const std::vector<SearchToken>& live,
                                         bool with_final_costs) const;
  // Sets h's word confidences and its confidence from `sp`.
  void set_confidences(Hypothesis& h, const SequencePosteriors& sp) const;
  // Hypothesis::trailing_silence_frames for a token's path.
  int32_t trailing_silence(const SearchToken& t) const;

  // Per graph state: what the token in it is inside (set_filler_senones()).
  enum StateKind : uint8_t { kUnknownState = 0, kWordState = 1, kFillerState = 2 };
  std::shared_ptr<const std::vector<uint8_t>> state_kind_;  // null: no filler senones given
  // The best token (final preferred) and its total cost.
  int best_token(const std::vector<SearchToken>& live, float* total, bool* final_state) const;
};

}  // namespace gpuspeech
