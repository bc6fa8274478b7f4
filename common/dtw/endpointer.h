// Energy-based endpointing: finds stretches of speech in a stream of audio
// so that isolated-word recognition works on a continuous (live) signal,
// and trims the silence around a recorded template.
//
// Per frame of EndpointOptions::frame_ms the level is 10 log10 of the mean
// square of the samples (16-bit units; digital silence reads as 0 dB). A
// noise floor follows the level: down at once, up by at most
// floor_rise_db_per_s (so a short word barely lifts it, and a background
// that got louder is learnt within seconds). A frame is speech when its level is threshold_db above the floor
// and above min_level_db. A segment opens after start_frames speech frames
// in a row (at the first of them) and closes after end_frames non-speech
// frames in a row (after the last speech frame); segments with fewer than
// min_speech_frames speech frames are dropped, and pad_frames of audio are
// kept on each side (clipped to the stream and to the previous segment).
//
// The decisions depend only on the samples, not on how they were chunked.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtw/dtw_options.h"

namespace gpuspeech {

// Samples [begin, end) of the stream, counted from its first sample.
struct SpeechSegment {
  int64_t begin = 0;
  int64_t end = 0;
};

class Endpointer {
 public:
  // Throws std::invalid_argument for bad options or a sample rate < 1000.
  Endpointer(const EndpointOptions& opts, float sample_rate);

  // Feeds samples (16-bit units); returns the segments that closed.
  std::vector<SpeechSegment> push(const float* samples, int64_t n);
  // Ends the stream: closes an open segment (ending at the last speech
  // frame plus padding) and returns it, then starts afresh.
  std::vector<SpeechSegment> finish();
  void reset();
  // Starts the noise floor at `db` instead of the first frame's level
  // (a live stream that may open with speech: a level measured before).
  void set_noise_floor(float db);

  // True while a segment is open (speech started and has not ended).
  bool in_speech() const { return open_; }
  // First sample of the open segment (with padding); valid if in_speech().
  int64_t open_begin() const;
  int frame_samples() const { return frame_; }
  // The current noise floor in dB (for logs and tests).
  float noise_floor_db() const { return floor_db_; }

 private:
  void process_frame(double level_db, std::vector<SpeechSegment>& out);
  void close(std::vector<SpeechSegment>& out);

  EndpointOptions opts_;
  int frame_ = 160;
  float rise_per_frame_ = 0.0f;
  // The frame being filled.
  double sum_sq_ = 0.0;
  int filled_ = 0;
  int64_t frames_done_ = 0;  // whole frames processed
  bool have_floor_ = false;
  float floor_db_ = 0.0f;
  // Candidate onset: speech frames in a row, and the first of them.
  int run_speech_ = 0;
  int64_t run_start_ = 0;
  // Open segment.
  bool open_ = false;
  int64_t seg_start_frame_ = 0;  // first speech frame
  int64_t last_speech_frame_ = 0;
  int64_t speech_frames_ = 0;
  int run_silence_ = 0;
  int64_t last_end_sample_ = 0;  // end of the previous segment (padding stops there)
};

// The level (dB, as the endpointer measures it) below which a tenth of the
// signal's frames lie: where the noise floor of a whole recording starts.
float quiet_level_db(const float* samples, int64_t n, int frame);

// All segments of a whole signal: push + finish, with the floor started at
// quiet_level_db().
std::vector<SpeechSegment> find_speech(const float* samples, int64_t n, float sample_rate,
                                       const EndpointOptions& opts);

// From the first segment's begin to the last one's end; {0, 0} when the
// signal holds no speech.
SpeechSegment speech_extent(const float* samples, int64_t n, float sample_rate,
                            const EndpointOptions& opts);

}  // namespace gpuspeech
