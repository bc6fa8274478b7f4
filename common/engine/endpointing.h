// When a stream's utterance ends, decided from its partial results
// (gpudecoder's endpoint-silence): the rule in one place, apart from the
// element, so that it can be tested and reused by any streaming front.
//
// With E = endpoint_frames (0 turns endpointing off) and the best path's
// trailing_silence_frames (how long it has been in silence or filler words
// since its last word; 0 while it is inside a word, so a long word is never
// cut by it):
// - at least one word and trailing silence >= E: the utterance ends with a
//   final result (kFinal);
// - no word yet and trailing silence >= kNoWordSilenceFactor * E (all of
//   the utterance is silence or noise), or no word after
//   kNoWordLimitFactor * E frames whatever the path is in: the audio so far
//   is dropped without a result (kDrop), so that silence never makes an
//   utterance grow without end (costs and the time of a later word stay
//   small);
// - else it goes on (kNone).
//
// With a voice activity detector upstream (`vad`, gpufeatures' Sphinx
// detector through gpudecoder), its word comes first, as in pocketsphinx,
// whose utterances are the detector's: the search can fill a pause with
// words it hears in steady noise (white noise 20 dB below the speech did,
// for a hundred seconds), and then never reaches the silence its own rule
// waits for, while an energy detector with a noise floor still hears the
// pause.
// - the detector said the speech ended, after speech it heard in this
//   utterance, its silence has lasted E frames (from where it began), and
//   there is at least one word: kFinal;
// - the detector has heard no speech in the whole utterance, for
//   kVadSilentDropFrames frames or more: kDrop, words or not (words there
//   are the noise's).
// Otherwise the rules above apply.
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
// An utterance the detector calls silent throughout is dropped at this
// length; gpudecoder decodes its last kVadDropOverlapFrames again as the
// next one's start, enough for the onset the detector confirms
// vad_startspeech (10) frames late.
constexpr int64_t kVadSilentDropFrames = 40;
constexpr int64_t kVadDropOverlapFrames = 25;

// What a voice activity detector upstream says about the utterance.
struct VoiceActivity {
  // The detector says the speech ended: frames at the utterance's end
  // since its silence began; -1 while it hears speech. (It says so
  // vad_postspeech frames after the silence began.)
  int64_t silence_frames = -1;
  // Its silence began before the utterance did: no speech heard in it.
  bool silent_throughout = false;
};

// `utterance_frames`: frames decoded in the utterance so far; `partial`:
// the recognizer's partial result for them; `vad`: the detector's view, or
// null without one. Nothing ends while endpoint_frames is 0.
EndpointDecision decide_endpoint(int64_t endpoint_frames, int64_t utterance_frames,
                                 const Hypothesis& partial, const VoiceActivity* vad = nullptr);

}  // namespace gpuspeech
