// A final recognition result as one line of JSON, the format gpudecoder
// pushes with output-format=json (docs/gpudecoder.md):
//   {"utterance":N,"start":S,"end":E,"reason":R,"hypothesis":TEXT,
//    "confidence":C,"words":[{"word":W,"start":S,"end":E,"confidence":C}...]
//    [,"nbest":[{"hypothesis":TEXT,"confidence":C,"cost":X}...]]}
// Times are in seconds, as the caller's clock gives them; numbers are
// written with 6 significant digits whatever the C locale says (a decimal
// comma would break the JSON), and a non-finite number as null.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/engine/recognizer.h"

namespace gpuspeech {

struct ResultJsonOptions {
  uint32_t utterance = 0;      // index of the utterance in its stream
  int64_t frames = 0;          // its length in frames: "end" is seconds(frames)
  std::string reason;          // why it ended ("silence", "eos", ...)
  bool with_nbest = false;     // add the "nbest" array (result.nbest)
};

// `seconds(frame)` turns a frame index of the utterance (0 = its first
// frame; a word's end is end_frame + 1) into the time written. Ends with a
// newline.
std::string result_json(const RecognitionResult& result, const ResultJsonOptions& options,
                        const std::function<double(int64_t frame)>& seconds);

// The pieces, for other writers: `s` as a JSON string literal (quotes,
// backslashes and control characters escaped; other bytes, UTF-8
// included, as they are), and a number as above.
void append_json_string(std::string& out, const std::string& s);
void append_json_number(std::string& out, double v);

}  // namespace gpuspeech
