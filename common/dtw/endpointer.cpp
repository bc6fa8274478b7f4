#include "common/dtw/endpointer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

Endpointer::Endpointer(const EndpointOptions& opts, float sample_rate) : opts_(opts) {
  opts_.validate();
  if (!(sample_rate >= 1000.0f))
    throw std::invalid_argument("endpointer: sample rate must be >= 1000 Hz, got " +
                                std::to_string(sample_rate));
  frame_ = std::max(1, static_cast<int>(std::lround(sample_rate * opts_.frame_ms / 1000.0f)));
  rise_per_frame_ = opts_.floor_rise_db_per_s * opts_.frame_ms / 1000.0f;
}

void Endpointer::reset() {
  sum_sq_ = 0.0;
  filled_ = 0;
  frames_done_ = 0;
  have_floor_ = false;
  floor_db_ = 0.0f;
  run_speech_ = 0;
  run_start_ = 0;
  open_ = false;
  seg_start_frame_ = last_speech_frame_ = speech_frames_ = 0;
  run_silence_ = 0;
  last_end_sample_ = 0;
}

void Endpointer::set_noise_floor(float db) {
  floor_db_ = db;
  have_floor_ = true;
}

int64_t Endpointer::open_begin() const {
  return std::max(last_end_sample_, (seg_start_frame_ - opts_.pad_frames) * frame_);
}

std::vector<SpeechSegment> Endpointer::push(const float* samples, int64_t n) {
  std::vector<SpeechSegment> out;
  for (int64_t k = 0; k < n; ++k) {
    sum_sq_ += static_cast<double>(samples[k]) * samples[k];
    if (++filled_ == frame_) {
      const double mean_sq = sum_sq_ / frame_;
      // +1 keeps digital silence at 0 dB instead of -inf.
      process_frame(10.0 * std::log10(mean_sq + 1.0), out);
      sum_sq_ = 0.0;
      filled_ = 0;
    }
  }
  return out;
}

void Endpointer::process_frame(double level_db, std::vector<SpeechSegment>& out) {
  const int64_t t = frames_done_++;
  const float level = static_cast<float>(level_db);
  if (!have_floor_) {
    floor_db_ = level;
    have_floor_ = true;
  }
  const bool speech = level > floor_db_ + opts_.threshold_db && level > opts_.min_level_db;
  // Down at once, up slowly on every frame: a word of a second lifts the
  // floor by floor_rise_db_per_s only, while a background that got louder
  // (which reads as speech at first) is learnt within a few seconds instead
  // of holding a segment open for ever.
  floor_db_ = std::min(level, floor_db_ + rise_per_frame_);

  if (!open_) {
    if (speech) {
      if (run_speech_++ == 0) run_start_ = t;
      if (run_speech_ >= opts_.start_frames) {
        open_ = true;
        seg_start_frame_ = run_start_;
        last_speech_frame_ = t;
        speech_frames_ = run_speech_;
        run_silence_ = 0;
      }
    } else {
      run_speech_ = 0;
    }
    return;
  }
  if (speech) {
    last_speech_frame_ = t;
    ++speech_frames_;
    run_silence_ = 0;
  } else if (++run_silence_ >= opts_.end_frames) {
    close(out);
  }
}

void Endpointer::close(std::vector<SpeechSegment>& out) {
  if (speech_frames_ >= opts_.min_speech_frames) {
    SpeechSegment s;
    s.begin = open_begin();
    const int64_t pad_end = (last_speech_frame_ + 1 + opts_.pad_frames) * frame_;
    // Never beyond what has been seen.
    s.end = std::min(pad_end, frames_done_ * frame_ + filled_);
    out.push_back(s);
    last_end_sample_ = s.end;
  }
  open_ = false;
  run_speech_ = 0;
  run_silence_ = 0;
}

std::vector<SpeechSegment> Endpointer::finish() {
  std::vector<SpeechSegment> out;
  if (open_) close(out);
  reset();
  return out;
}

float quiet_level_db(const float* samples, int64_t n, int frame) {
  std::vector<float> levels;
  for (int64_t s = 0; s + frame <= n; s += frame) {
    double sum = 0.0;
    for (int k = 0; k < frame; ++k) sum += static_cast<double>(samples[s + k]) * samples[s + k];
    levels.push_back(static_cast<float>(10.0 * std::log10(sum / frame + 1.0)));
  }
  if (levels.empty()) return 0.0f;
  const size_t q = levels.size() / 10;
  std::nth_element(levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(q), levels.end());
  return levels[q];
}

std::vector<SpeechSegment> find_speech(const float* samples, int64_t n, float sample_rate,
                                       const EndpointOptions& opts) {
  Endpointer ep(opts, sample_rate);
  // The whole signal is at hand: start the floor at its quiet level, so
  // speech at the very start is found too.
  ep.set_noise_floor(quiet_level_db(samples, n, ep.frame_samples()));
  std::vector<SpeechSegment> segs = ep.push(samples, n);
  for (const SpeechSegment& s : ep.finish()) segs.push_back(s);
  return segs;
}

SpeechSegment speech_extent(const float* samples, int64_t n, float sample_rate,
                            const EndpointOptions& opts) {
  const std::vector<SpeechSegment> segs = find_speech(samples, n, sample_rate, opts);
  if (segs.empty()) return {};
  return {segs.front().begin, segs.back().end};
}

}  // namespace gpuspeech
