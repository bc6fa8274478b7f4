// Subtitles from recognised words: grouping timed words into cues, and
// writing cues as SubRip (SRT) or WebVTT text. No GStreamer here; the
// gpudecoder element (gst/gstgpudecoder.cpp) pushes what these functions
// make.
//
// Cue grouping is greedy and left to right, so that it can run on a growing
// list of words that will not change (the stable words of a partial result):
// complete_cues() returns only the cues that later words cannot alter, and
// cutting the words into cues piece by piece gives the same cues as cutting
// the whole list at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuspeech {

// A recognised word with its time span in nanoseconds (any time base:
// stream time for the element's messages, buffer time on its src pad).
struct TimedWord {
  std::string text;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // exclusive: the word's last frame ends here
};

struct Cue {
  int64_t start_ns = 0;  // the first word's start
  int64_t end_ns = 0;    // the last word's end
  std::string text;      // the words, with '\n' between lines
  size_t first_word = 0; // index of the first word in the list cut
  size_t num_words = 0;
};

struct CueOptions {
  // A cue takes words while all of these hold (a single word that breaks
  // them still gets a cue of its own).
  int max_chars = 84;                        // text length, spaces included
  int64_t max_duration_ns = 5'000'000'000;   // first start to last end
  int64_t max_gap_ns = 1'000'000'000;        // silence between two words
  // Cue text longer than this is broken into two lines at the space nearest
  // the middle (the common subtitling convention of two lines of about 42
  // characters); 0 keeps one line.
  int line_chars = 42;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

// The cues that `words[first..]` begins with and that no word appended later
// can change: every cue except the last when `more_may_follow`, all of them
// otherwise. Words are expected in time order; a word that starts before the
// previous one ends is kept in order (its cue's times stay monotonic because
// a cue never starts before the previous cue's end).
std::vector<Cue> complete_cues(const std::vector<TimedWord>& words, size_t first,
                               bool more_may_follow, const CueOptions& options);

// "HH:MM:SS,mmm" (SRT) and "HH:MM:SS.mmm" (WebVTT), milliseconds rounded
// down; negative times print as 0. Hours grow past 99 as needed.
std::string srt_timestamp(int64_t ns);
std::string webvtt_timestamp(int64_t ns);

// One SRT block: "index\nstart --> end\ntext\n\n" (index from 1). Text
// lines never end up empty (an empty line would end the block early).
std::string srt_cue(int64_t index, const Cue& cue);

// The WebVTT file header, "WEBVTT\n\n", and one cue block
// "start --> end\ntext\n\n" with '&', '<' and '>' escaped as the WebVTT
// cue-text syntax requires.
std::string webvtt_header();
std::string webvtt_cue(const Cue& cue);

}  // namespace gpuspeech
