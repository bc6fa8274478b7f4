// Whether a recording passed through a narrow channel: audio that was
// 8 kHz (a telephone, a narrow-band codec) and was resampled to 16 kHz
// has almost nothing above 4 kHz, while every wide-band voice has some
// (fricatives, the upper formants of vowels). Matched against wide-band
// templates, such a test lacks a whole region of the filterbank the
// templates fill, and the distances then favour words whose templates are
// weak there, whatever was said: on the cross-speaker benchmark
// (docs/dtw.md) the 8 kHz voice's "down" came out "back" every time.
// Comparing like with like, both sides' features cut at the test's band
// edge, fixes that (WordRecognizerOptions::band_match).
//
// The measure: the power of the 4.3-7.6 kHz band over that of the 0.3-3.7
// kHz band, summed over the recording (Hann-windowed 512-sample frames, a
// hop of 256), in dB. On the benchmark the 8 kHz voice lay at -54 to -82 dB
// (its quiet copies highest, their quantisation noise being relatively
// louder), the wide-band voices at -47 to -10 dB; white noise added after
// resampling lifts it to about -30 dB, and such a recording counts as wide
// band (the noise is).
#pragma once

#include <cstdint>

namespace gpuspeech {

struct BandLimitOptions {
  float low_band_hz[2] = {300.0f, 3700.0f};
  float high_band_hz[2] = {4300.0f, 7600.0f};
  // Below this ratio (dB) the recording counts as band-limited.
  float threshold_db = -50.0f;
  // The band edge both sides' features are cut at then (the filterbank's
  // upper frequency).
  float edge_hz = 4000.0f;
};

// The ratio in dB; 0 when the low band holds no power (silence: no
// evidence of a narrow channel), -inf (the lowest double) when only the
// high band is empty. `sample_rate` must reach the high band (else 0).
double high_band_ratio_db(const float* samples, int64_t n, float sample_rate,
                          const BandLimitOptions& opts = {});

bool is_band_limited(const float* samples, int64_t n, float sample_rate, const BandLimitOptions& opts = {});

}  // namespace gpuspeech
