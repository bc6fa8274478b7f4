// When a stream's utterance ends, decided from its partial results
// (gpudecoder's endpoint-silence): the rule in one place, apart from the
// element, so that it can be tested and reused by any streaming front.
//
// With E = endpoint_frames (0 turns endpointing off) and the best path's
// trailing_silence_frames (how long it has been in silence or filler words
// since its last word; 0 while it is inside a word, so a long word is never
// cut):
// - at least one word and trailing silence >= E: the utterance ends with a
//   final result (kFinal);
// - no word yet and trailing silence >= kNoWordSilenceFactor * E (all of
//   the utterance is silence or noise), or no word after
//   kNoWordLimitFactor * E frames whatever the path is in: the audio so far
//   is dropped without a result (kDrop), so that silence never makes an
//   utterance grow without end (costs and the time of a later word stay
//   small);
// - else it goes on (kNone).
#pragma once

#include <cstdint>

#include "common/search/token_passing.h"

namespace gpuspeech {

enum class EndpointDecision {
  kNone,   // the utterance goes on
  kFinal,  // ends by silence after words: a final result
  kDrop,   // only silence or noise so far: dropped without a result
};

constexpr int64_t kNoWordSilenceFactor = 5;
constexpr int64_t kNoWordLimitFactor = 20;

// `utterance_frames`: frames decoded in the utterance so far; `partial`:
// the recognizer's partial result for them.
EndpointDecision decide_endpoint(int64_t endpoint_frames, int64_t utterance_frames,
                                 const Hypothesis& partial);

}  // namespace gpuspeech
