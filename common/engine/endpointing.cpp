// See endpointing.h.
#include "common/engine/endpointing.h"

namespace gpuspeech {

EndpointDecision decide_endpoint(int64_t endpoint_frames, int64_t utterance_frames,
                                 const Hypothesis& partial, const VoiceActivity* vad) {
  const int64_t e = endpoint_frames;
  if (e <= 0) return EndpointDecision::kNone;
  if (vad != nullptr) {
    if (vad->silent_throughout) {
      if (utterance_frames >= kVadSilentDropFrames) return EndpointDecision::kDrop;
    } else if (vad->silence_frames >= e && !partial.words.empty()) {
      return EndpointDecision::kFinal;
    }
  }
  const int64_t silence = partial.trailing_silence_frames;
  if (!partial.words.empty()) return silence >= e ? EndpointDecision::kFinal : EndpointDecision::kNone;
  if (silence >= kNoWordSilenceFactor * e || utterance_frames >= kNoWordLimitFactor * e)
    return EndpointDecision::kDrop;
  return EndpointDecision::kNone;
}

}  // namespace gpuspeech
