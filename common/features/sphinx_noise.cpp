#include "common/features/sphinx_noise.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

namespace {

// sphinxbase fe_noise.c constants (identical in the Debian build, whose
// fe_init_noisestats stores exactly these doubles).
//
// Smoothed power: P = LAMBDA_POWER * P + (1 - LAMBDA_POWER) * E.
constexpr double kLambdaPower = 0.7;
// Lower-envelope trackers (noise estimate and signal floor): rise slowly
// (LAMBDA_A) towards a larger input, fall fast (LAMBDA_B) to a smaller one.
constexpr double kLambdaA = 0.995;
constexpr double kLambdaB = 0.5;
// Temporal masking: the peak decays by LAMBDA_T per frame; a signal below
// LAMBDA_T * peak is replaced by MU_T * peak.
constexpr double kLambdaT = 0.85;
constexpr double kMuT = 0.2;
// Gains are limited to [1 / MAX_GAIN, MAX_GAIN]; the signal floor starts at
// energy / MAX_GAIN (and, in the Debian build, so does the noise estimate).
constexpr double kMaxGain = 20.0;
// Gains are averaged over SMOOTH_WINDOW bands on each side.
constexpr int kSmoothWindow = 4;
// Loudness test of the VAD: a slow peak of ln(sum of signal) rises with
// factor SLOW_PEAK_LEARN_FACTOR and decays with SLOW_PEAK_FORGET_FACTOR; a
// frame more than SPEECH_VOLUME_RANGE below it is "quiet", never speech.
constexpr double kSlowPeakLearn = 0.9;
constexpr double kSlowPeakForget = 0.9995;
constexpr double kSpeechVolumeRange = 8.0;

// fe_lower_envelope: tracks the lower envelope of `in` in `env`.
void lower_envelope(const std::vector<double>& in, std::vector<double>& env) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] >= env[i])
      env[i] = kLambdaA * env[i] + (1.0 - kLambdaA) * in[i];
    else
      env[i] = kLambdaB * env[i] + (1.0 - kLambdaB) * in[i];
  }
}

void check_count(int value, const char* name) {
  // sphinxbase keeps these counters in 16-bit integers.
  if (value < 0 || value > 32767)
    throw std::invalid_argument(std::string(name) + " must be in 0..32767, got " +
                                std::to_string(value));
}

}  // namespace

SphinxNoiseRemover::SphinxNoiseRemover(int num_filters, const NoiseOptions& opts)
    : num_filters_(num_filters), opts_(opts) {
  if (num_filters < 1)
    throw std::invalid_argument("SphinxNoiseRemover needs at least one band");
  if (!std::isfinite(opts.vad_threshold))
    throw std::invalid_argument("vad-threshold must be finite");
  const size_t n = static_cast<size_t>(num_filters);
  power_.assign(n, 0.0);
  noise_.assign(n, 0.0);
  floor_.assign(n, 0.0);
  peak_.assign(n, 0.0);
  signal_.assign(n, 0.0);
  gain_.assign(n, 0.0);
}

void SphinxNoiseRemover::reset() { fresh_ = true; }

bool SphinxNoiseRemover::process(float* bands) {
  const int n = num_filters_;
  if (fresh_ && opts_.start_at_first_sound) {
    // Digital silence says nothing about the noise: wait for a sound.
    bool silent = true;
    for (int i = 0; i < n && silent; ++i) silent = bands[i] <= 0.0f;
    if (silent) return false;
  }
  if (fresh_) {
    slow_peak_ = 0.0;
    for (int i = 0; i < n; ++i) {
      power_[i] = bands[i];
      noise_[i] = opts_.start_at_first_sound ? bands[i] : bands[i] / kMaxGain;
      floor_[i] = bands[i] / kMaxGain;
      peak_[i] = 0.0;
    }
    fresh_ = false;
  }

  for (int i = 0; i < n; ++i)
    power_[i] = kLambdaPower * power_[i] + (1.0 - kLambdaPower) * bands[i];

  // Noise: the lower envelope of the smoothed power. What rises above it is
  // signal (at least 1, so that its log is >= 0).
  lower_envelope(power_, noise_);
  // The SNR test uses the largest per-band ln(power / noise); a NaN (0 / 0
  // in digital silence) never wins the comparison, as in sphinxbase.
  double max_snr = 0.0;
  for (int i = 0; i < n; ++i) {
    const double s = power_[i] - noise_[i];
    signal_[i] = s < 1.0 ? 1.0 : s;
    const double snr = std::log(power_[i] / noise_[i]);
    if (snr > max_snr) max_snr = snr;
  }

  // The loudness test (fe_is_frame_quiet), updated on every frame.
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += signal_[i];
  const double log_sum = std::log(sum);
  const double factor = log_sum > slow_peak_ ? kSlowPeakLearn : kSlowPeakForget;
  slow_peak_ = slow_peak_ * factor + log_sum * (1.0 - factor);
  const bool quiet = slow_peak_ - kSpeechVolumeRange > log_sum;

  // -vad_threshold is a float32 in sphinxbase, compared as a double. The
  // decision is made whenever the trackers run: with remove_noise alone
  // no frame is dropped, but live CMN learns from it
  // (NormOptions::live_from_speech).
  const double threshold = static_cast<double>(opts_.vad_threshold);
  const bool speech = !(max_snr < threshold) && !quiet;

  // Signal floor, then temporal masking: a band falling well below its
  // recent peak is replaced by a fraction of that peak (reverberation tails
  // are treated as masked, after the PNCC front end).
  lower_envelope(signal_, floor_);
  for (int i = 0; i < n; ++i) {
    const double in = signal_[i];
    peak_[i] *= kLambdaT;
    if (in < kLambdaT * peak_[i]) signal_[i] = peak_[i] * kMuT;
    if (in > peak_[i]) peak_[i] = in;
  }
  if (!opts_.remove_noise) return speech;

  // Gain = cleaned signal / smoothed power, limited to [1/MAX_GAIN, MAX_GAIN].
  for (int i = 0; i < n; ++i) {
    if (signal_[i] < floor_[i]) signal_[i] = floor_[i];
    double g = signal_[i] < kMaxGain * power_[i] ? signal_[i] / power_[i] : kMaxGain;
    if (g < 1.0 / kMaxGain) g = 1.0 / kMaxGain;
    gain_[i] = g;
  }
  // Each band is scaled by the mean gain of the bands within kSmoothWindow
  // of it (fewer at the edges).
  for (int i = 0; i < n; ++i) {
    const int lo = std::max(i - kSmoothWindow, 0);
    const int hi = std::min(i + kSmoothWindow, n - 1);
    double g = 0.0;
    for (int j = lo; j <= hi; ++j) g += gain_[j];
    bands[i] = static_cast<float>(bands[i] * (g / (hi - lo + 1)));
  }
  return speech;
}

SphinxVad::SphinxVad(const NoiseOptions& opts) : opts_(opts) {
  check_count(opts.vad_prespeech, "vad-prespeech");
  check_count(opts.vad_postspeech, "vad-postspeech");
  check_count(opts.vad_startspeech, "vad-startspeech");
  // fe_init_auto_r sizes the pre-speech buffer to vad_prespeech + 1 frames.
  ring_capacity_ = opts.vad_prespeech + 1;
}

void SphinxVad::reset() {
  in_speech_ = false;
  pre_speech_frames_ = 0;
  post_speech_frames_ = 0;
  next_frame_ = 0;
  ring_.clear();
}

void SphinxVad::update(bool is_speech) {
  const int64_t frame = next_frame_++;
  if (!in_speech_) {
    // A full ring forgets its oldest frame.
    if (static_cast<int>(ring_.size()) == ring_capacity_) ring_.pop_front();
    ring_.push_back(frame);
  }
  if (is_speech) {
    post_speech_frames_ = 0;
    if (!in_speech_ && ++pre_speech_frames_ >= opts_.vad_startspeech) {
      pre_speech_frames_ = 0;
      in_speech_ = true;
    }
  } else {
    pre_speech_frames_ = 0;
    if (in_speech_ && ++post_speech_frames_ >= opts_.vad_postspeech) {
      post_speech_frames_ = 0;
      in_speech_ = false;
      ring_.clear();
    }
  }
}

void SphinxVad::push(bool is_speech, std::vector<int64_t>& keep) {
  const int64_t frame = next_frame_;
  update(is_speech);
  if (!in_speech_) return;
  if (ring_.empty()) {
    keep.push_back(frame);
  } else {
    // Speech has just started: the ring ends with this frame.
    keep.insert(keep.end(), ring_.begin(), ring_.end());
    ring_.clear();
  }
}

bool SphinxVad::push_state(bool is_speech) {
  update(is_speech);
  if (in_speech_) ring_.clear();  // push() would have released it
  return in_speech_;
}

std::vector<uint8_t> speech_states_after_hangover(const std::vector<uint8_t>& decisions,
                                                  const NoiseOptions& opts) {
  SphinxVad vad(opts);
  std::vector<uint8_t> states(decisions.size());
  for (size_t t = 0; t < decisions.size(); ++t)
    states[t] = vad.push_state(decisions[t] != 0) ? 1 : 0;
  return states;
}

void SphinxVad::push_final(bool is_speech, std::vector<int64_t>& keep) {
  const int64_t frame = next_frame_;
  update(is_speech);
  ring_.clear();
  if (in_speech_) keep.push_back(frame);
}

}  // namespace gpuspeech
