// See result_json.h.
#include "common/output/result_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace gpuspeech {

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  // std::to_chars ignores the locale (printf's %g follows LC_NUMERIC).
  char buf[32];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  out.append(buf, r.ptr);
}

std::string result_json(const RecognitionResult& result, const ResultJsonOptions& options,
                        const std::function<double(int64_t frame)>& seconds) {
  const Hypothesis& best = result.best;
  std::string j = "{\"utterance\":" + std::to_string(options.utterance);
  j += ",\"start\":";
  append_json_number(j, seconds(0));
  j += ",\"end\":";
  append_json_number(j, seconds(options.frames));
  j += ",\"reason\":";
  append_json_string(j, options.reason);
  j += ",\"hypothesis\":";
  append_json_string(j, best.text());
  j += ",\"confidence\":";
  append_json_number(j, best.confidence);
  j += ",\"words\":[";
  for (size_t i = 0; i < best.words.size(); ++i) {
    const HypothesisWord& w = best.words[i];
    j += i > 0 ? ",{\"word\":" : "{\"word\":";
    append_json_string(j, w.text);
    j += ",\"start\":";
    append_json_number(j, seconds(w.start_frame));
    j += ",\"end\":";
    append_json_number(j, seconds(static_cast<int64_t>(w.end_frame) + 1));
    j += ",\"confidence\":";
    append_json_number(j, w.confidence);
    j += "}";
  }
  j += "]";
  if (options.with_nbest) {
    j += ",\"nbest\":[";
    for (size_t i = 0; i < result.nbest.size(); ++i) {
      j += i > 0 ? ",{\"hypothesis\":" : "{\"hypothesis\":";
      append_json_string(j, result.nbest[i].text());
      j += ",\"confidence\":";
      append_json_number(j, result.nbest[i].confidence);
      j += ",\"cost\":";
      append_json_number(j, result.nbest[i].cost);
      j += "}";
    }
    j += "]";
  }
  return j + "}\n";
}

}  // namespace gpuspeech
