// Restoring clipped peaks before feature extraction (DeclipOptions in
// feature_options.h).
//
// Why: a level pushed past full scale flattens every peak of the waveform
// into a run of equal samples. The spectrum of the flattened wave is far
// from anything the acoustic model saw; on the degraded set's clipped
// condition (12 dB past full scale) recognition goes from about 7 % WER
// on the clean audio to about 50 %, for us and for pocketsphinx alike
// (docs/benchmarks.md, "Restoring clipped peaks").
//
// What counts as clipped: a run of 2 to max_run samples of one sign whose
// magnitudes are within level_tolerance of its first's, that magnitude
// being at least min_level and at least peak_fraction of the largest
// magnitude before the run. (Not exactly equal: converters and sox leave
// the negative side of a clipped wave at both -32768 and -32767.) Runs
// longer than max_run are left as they are, all of them. And a plateau
// must recur: a run is restored only when it and the min_plateau_runs - 1
// runs of its sign before it lie at one level (within level_tolerance of
// the first of them). Speech that was not clipped has a few flat tops
// near its peak (a handful a minute in LibriVox recordings), but not at
// one level again and again, so it passes unchanged.
//
// How a run is redrawn: the cubic through the samples at i-2, i-1, j+1,
// j+2 (the run being i..j; the input's values, whether or not they were
// themselves restored) is evaluated at each sample of the run. A restored
// sample keeps the run's sign and lies between the run's level (its
// largest magnitude) and max_gain times it: the clipped sample was at least that large, and a
// cubic over a long gap can overshoot. A run without two samples on each
// side (at the stream's very start or end) is kept as it is.
//
// Streaming: accept() takes samples in pieces of any size and returns the
// samples that are final; the output is the same sequence however the
// input was cut, and sample for sample as long as the input (flush() gives
// the rest). A sample is held back at most max_run + 2 samples
// (max_delay()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

class Declipper {
 public:
  // Throws std::invalid_argument on bad options (FeatureOptions::validate's
  // rules for DeclipOptions).
  Declipper(const DeclipOptions& options, float sample_rate);

  // Appends `n` samples (16-bit units) and appends to `out` those now final.
  void accept(const float* samples, size_t n, std::vector<float>& out);
  // End of stream: appends every sample still held and starts afresh.
  void flush(std::vector<float>& out);
  // Forgets everything (a new stream).
  void reset();

  // The most samples accept() may hold back.
  int max_delay() const { return max_run_ + 2; }
  // Runs restored since construction.
  int64_t runs_restored() const { return runs_restored_; }

 private:
  // Releases what can be decided from held_ (at_end: nothing more comes).
  void process(bool at_end, std::vector<float>& out);
  void release(float original, float value, std::vector<float>& out);
  // Whether sample x continues a run that began with `first`.
  bool in_run(float x, float first) const;

  DeclipOptions options_;
  int max_run_ = 2;
  std::vector<float> held_;  // input not yet released, in order
  size_t next_ = 0;          // first sample of held_ not yet decided
  // The input's last two samples released (before[1] the latest), and how
  // many there are (0-2).
  float before_[2] = {0.0f, 0.0f};
  int num_before_ = 0;
  float peak_ = 0.0f;  // largest magnitude released so far
  // A run too long to restore is being passed over: its value.
  bool in_long_run_ = false;
  float long_run_value_ = 0.0f;  // its first sample
  // Per sign (0: positive, 1: negative), the level of the latest plateau
  // and how many runs in a row were at it.
  float plateau_level_[2] = {0.0f, 0.0f};
  int plateau_runs_[2] = {0, 0};
  int64_t runs_restored_ = 0;
};

// The whole-signal form: the same as accept() on all of it, then flush().
std::vector<float> declip(const DeclipOptions& options, float sample_rate, const float* samples,
                          int64_t n);

}  // namespace gpuspeech
