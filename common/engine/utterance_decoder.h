// A stream's utterances decoded with or without speaker adaptation, behind
// one face, so that every client that offers both (the gpudecoder element's
// adapt property, gpuspeech-bench decode --adapt) pushes, finishes and
// resets an utterance the same way:
//
//   UtteranceDecoder d(recognizer, adapt);
//   d.push_features(frames, n);   // any number of times
//   recognizer.partial();         // partials as usual
//   d.finish();                   // the final result
//   d.reset();                    // the next utterance
//
// With adapt the calls go through an AdaptiveRedecoder
// (adaptive_redecoder.h: per-stream fMLLR and a second decoding), else
// straight to the recognizer. Not thread-safe: the Recognizer's thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/engine/adaptive_redecoder.h"
#include "common/engine/recognizer.h"

namespace gpuspeech {

class UtteranceDecoder {
 public:
  // `recognizer` outlives this object. With `adapt` it must keep its
  // features (AdaptiveRedecoder's std::invalid_argument otherwise).
  UtteranceDecoder(Recognizer& recognizer, bool adapt, const AdaptiveRedecoderOptions& options = {})
      : rec_(recognizer),
        adapter_(adapt ? std::make_unique<AdaptiveRedecoder>(recognizer, options) : nullptr) {}

  // `cmn_offsets`, `cmn_learned`: live CMN's trace of the frames, when
  // known (AdaptiveRedecoder::push_features); unused without adapt.
  void push_features(const float* frames, int64_t num_frames, const float* cmn_offsets = nullptr,
                     const uint8_t* cmn_learned = nullptr) {
    if (adapter_)
      adapter_->push_features(frames, num_frames, cmn_offsets, cmn_learned);
    else
      rec_.push_features(frames, num_frames);
  }
  // `silence_start`: see AdaptiveRedecoder::finish().
  RecognitionResult finish(int64_t silence_start = kNoSilence) {
    if (adapter_) return adapter_->finish(silence_start);
    RecognitionResult r = rec_.finish();
    drop_words_from(r.best, silence_start);
    return r;
  }
  // The next utterance; without finish() before, this one is dropped (and,
  // adapting, not learnt from).
  void reset() {
    if (adapter_)
      adapter_->reset();
    else
      rec_.reset();
  }

  // The adaptation, or null without it (its last_report() says whether the
  // last final came from the second decoding).
  const AdaptiveRedecoder* adapter() const { return adapter_.get(); }

 private:
  Recognizer& rec_;
  std::unique_ptr<AdaptiveRedecoder> adapter_;
};

}  // namespace gpuspeech
