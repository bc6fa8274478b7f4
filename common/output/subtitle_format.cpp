// Cue grouping and SRT / WebVTT text (subtitle_format.h).
#include "common/output/subtitle_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>

namespace gpuspeech {

void CueOptions::validate() const {
  if (max_chars < 1) throw std::invalid_argument("cue options: max_chars must be >= 1");
  if (max_duration_ns <= 0) throw std::invalid_argument("cue options: max_duration must be > 0");
  if (max_gap_ns < 0) throw std::invalid_argument("cue options: max_gap must be >= 0");
  if (line_chars < 0) throw std::invalid_argument("cue options: line_chars must be >= 0");
}

namespace {

// Breaks `text` (words joined by single spaces) into two lines at the space
// nearest its middle when it is longer than `line_chars`.
std::string break_lines(const std::string& text, int line_chars) {
  if (line_chars <= 0 || static_cast<int>(text.size()) <= line_chars) return text;
  const size_t middle = text.size() / 2;
  size_t best = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != ' ') continue;
    const size_t d = i > middle ? i - middle : middle - i;
    const size_t bd = best == std::string::npos ? SIZE_MAX
                      : best > middle           ? best - middle
                                                : middle - best;
    if (d < bd) best = i;
  }
  if (best == std::string::npos) return text;  // one long word
  std::string out = text;
  out[best] = '\n';
  return out;
}

std::string timestamp(int64_t ns, char separator) {
  if (ns < 0) ns = 0;
  const int64_t ms = ns / 1'000'000;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%02" PRId64 ":%02d:%02d%c%03d", ms / 3'600'000,
                static_cast<int>(ms / 60'000 % 60), static_cast<int>(ms / 1000 % 60), separator,
                static_cast<int>(ms % 1000));
  return buf;
}

// Cue text must not contain a blank line (it ends the block): collapse
// runs of newlines and drop leading/trailing ones.
std::string without_blank_lines(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\r') continue;
    if (c == '\n' && (out.empty() || out.back() == '\n')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Cue> complete_cues(const std::vector<TimedWord>& words, size_t first,
                               bool more_may_follow, const CueOptions& options) {
  options.validate();
  std::vector<Cue> cues;
  // A cue never starts before the previous word (and so the previous cue)
  // ends, so cue times are monotonic even if word spans touch.
  int64_t floor_ns = first > 0 && first <= words.size() ? words[first - 1].end_ns : INT64_MIN;
  size_t i = first;
  while (i < words.size()) {
    Cue cue;
    cue.first_word = i;
    cue.start_ns = std::max(words[i].start_ns, floor_ns);
    std::string text = words[i].text;
    int64_t end = std::max(words[i].end_ns, cue.start_ns);
    size_t j = i + 1;
    bool closed = false;  // a following word was refused: the cue is done
    for (; j < words.size(); ++j) {
      const TimedWord& w = words[j];
      const size_t len = text.size() + 1 + w.text.size();
      const int64_t new_end = std::max(w.end_ns, end);
      if (static_cast<int64_t>(len) > options.max_chars ||
          new_end - cue.start_ns > options.max_duration_ns ||
          w.start_ns - end > options.max_gap_ns) {
        closed = true;
        break;
      }
      text += ' ';
      text += w.text;
      end = new_end;
    }
    if (!closed && more_may_follow) break;  // the next word may still join it
    cue.end_ns = end;
    cue.num_words = j - i;
    cue.text = break_lines(text, options.line_chars);
    floor_ns = end;
    cues.push_back(std::move(cue));
    i = j;
  }
  return cues;
}

std::string srt_timestamp(int64_t ns) { return timestamp(ns, ','); }
std::string webvtt_timestamp(int64_t ns) { return timestamp(ns, '.'); }

std::string srt_cue(int64_t index, const Cue& cue) {
  return std::to_string(index) + "\n" + srt_timestamp(cue.start_ns) + " --> " +
         srt_timestamp(cue.end_ns) + "\n" + without_blank_lines(cue.text) + "\n\n";
}

std::string webvtt_header() { return "WEBVTT\n\n"; }

std::string webvtt_cue(const Cue& cue) {
  std::string text;
  for (char c : without_blank_lines(cue.text)) {
    switch (c) {
      case '&': text += "&amp;"; break;
      case '<': text += "&lt;"; break;
      case '>': text += "&gt;"; break;
      default: text += c;
    }
  }
  return webvtt_timestamp(cue.start_ns) + " --> " + webvtt_timestamp(cue.end_ns) + "\n" + text +
         "\n\n";
}

}  // namespace gpuspeech
