// Token passing on the CPU: the reference implementation of the rules in
// token_passing.h, single-threaded. The states a frame reaches are numbered
// densely as they are first reached (StateIndex), and the frame's values
// live in arrays over that numbering, emptied after each frame: a frame
// costs what it visits, and a stream's memory is its largest frame, not
// the graph's size (many streams share one graph). With word-end
// rescoring the states are virtual states (state * K + slot,
// token_passing.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/search/state_index.h"
#include "common/search/token_passing.h"

namespace gpuspeech {

class CpuSearcher : public Searcher {
 public:
  // Validates the options and the graph (std::invalid_argument).
  CpuSearcher(const SearchGraph& graph, const SearchOptions& options = {},
              LmRescorer* rescorer = nullptr, GraphCheck check = GraphCheck::kCheck);
  // The searcher keeps a reference: a temporary graph would dangle.
  CpuSearcher(SearchGraph&&, const SearchOptions& = {}, LmRescorer* = nullptr,
              GraphCheck = GraphCheck::kCheck) = delete;

  const char* name() const override { return "cpu"; }
  void reset() override;
  void advance(const float* loglik, int64_t frames, int64_t columns) override;

 protected:
  std::vector<SearchToken> fetch_live() override;
  std::vector<float> live_acoustic() override { return live_acoustic_; }

 private:
  // A state whose value changed: `local` is its StateIndex number.
  struct Changed {
    int32_t local;
    float cost;
    int32_t record;
    int32_t history;
    float acoustic;  // the token's acoustic cost (lattice pass), else 0
  };
  void decode_frame(const float* loglik_row);
  // Offers candidate (cost, arc) to virtual state d, reached from `source`
  // (a live_ index in the emitting step, a local index in the closure, -1
  // for a rescored word end); returns d's local index if its value
  // dropped, else -1.
  int32_t offer(int32_t d, float cost, uint32_t arc, int32_t source);
  // Step 2 from the tokens in `changed` at boundary `boundary`: closure
  // rounds, each ending with the word-end step when rescoring.
  void epsilon_closure(std::vector<Changed>& changed, float best_emit, int32_t boundary);
  // One round's passes; returns the passes run (counted against
  // max_epsilon_passes by the caller).
  int epsilon_passes(std::vector<Changed>& changed, float best_emit, int32_t boundary,
                     int passes_before);
  // The word-end step closing the current round: rescored word ends
  // offered; the winners go to `changed` (empty: the closure is done).
  void word_end_step(float best_emit, int32_t boundary, std::vector<Changed>& changed);
  // Step 3 into live_; empties the frame's states.
  void prune();
  // Forgets the frame's states and values.
  void clear_frame();
  void collect_garbage_if_full();

  std::vector<SearchToken> live_;
  // With the lattice pass (keep_acoustic_): the acoustic part of each live
  // token's cost (WordRecord::acoustic), in live_'s order; else empty.
  bool keep_acoustic_ = false;
  std::vector<float> live_acoustic_;
  // The frame's states (its "touched" set), and per local index:
  StateIndex index_;
  std::vector<uint64_t> best_;        // packed (cost, arc) or kNoCandidate
  std::vector<int32_t> source_;       // where the winning arc comes from (see offer)
  std::vector<int32_t> record_;       // record of the state's token
  std::vector<int32_t> history_;      // LM history of the state's token (rescoring)
  std::vector<float> acoustic_;       // acoustic part of its cost (keep_acoustic_)
  std::vector<uint32_t> round_mark_;  // closure round that last changed the state
  std::vector<uint32_t> stamp_;       // pass id that last changed the state
  uint32_t round_id_ = 0;
  uint32_t pass_id_ = 0;
  std::vector<WordEndEvent> events_;
  std::vector<WordEndOffer> offers_;
  int32_t frame_first_record_ = 0;  // records at or above were made this frame
  std::vector<uint32_t> histogram_;
};

}  // namespace gpuspeech
