// One way to run the same work on two backends and compare the numbers.
//
// Every device backend is checked against the CPU reference the same way:
// fresh random inputs (seeded from std::random_device, the seed reported on
// failure so a run can be repeated with GPUSPEECH_COMPARE_SEED), the same
// inputs uploaded to both backends, one operation or a whole FeatureExtractor
// run on each, the outputs downloaded and compared element by element.
//
// Output buffers are filled with random values before an operation runs, so
// a backend that leaves part of its output unwritten (or writes outside its
// range, for offset GEMMs) is caught too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "common/features/feature_options.h"

namespace gpuspeech {

// Element i passes when
//   |test_i - ref_i| <= abs + rel * max(|ref_i|, floor * max_j |ref_j|).
// The floor keeps elements that are near zero by cancellation (their error
// is set by the size of what was summed, not by the result) from failing a
// purely relative test.
struct Tolerance {
  double rel = 0.0;
  double abs = 0.0;
  double floor = 1e-2;

  static Tolerance relative(double rel, double floor = 1e-2) { return {rel, 0.0, floor}; }
  static Tolerance absolute(double abs) { return {0.0, abs, 0.0}; }
};

struct Comparison {
  std::string what;  // the operation and its sizes
  uint32_t seed = 0;
  Tolerance tol;
  size_t count = 0;         // elements compared
  size_t failures = 0;      // elements outside the tolerance
  double max_abs = 0.0;     // max |test - ref|
  double max_rel = 0.0;     // max |test - ref| / max(|ref|, floor * ref_max_abs)
  double ref_max_abs = 0.0; // max |ref|: the scale of the numbers compared
  size_t worst = 0;         // index of the element furthest outside (or
  float worst_test = 0.0f;  // closest to) its tolerance
  float worst_ref = 0.0f;
  std::string test_backend, ref_backend;

  // True when something was compared and every element passed.
  bool ok() const { return count > 0 && failures == 0; }
  // One paragraph for a test failure or a log: what, backends, seed, errors.
  std::string report() const;
};

// Compares two host arrays (test against reference). NaN equals NaN and an
// infinity equals the same infinity; any other non-finite value fails.
Comparison compare_values(const float* test, const float* ref, size_t n,
                          const Tolerance& tol);

// A seed from std::random_device, or GPUSPEECH_COMPARE_SEED when set (to
// replay a failure).
uint32_t fresh_seed();

class BackendComparison {
 public:
  BackendComparison(Backend& test, Backend& ref, uint32_t seed = fresh_seed());

  Backend& test() const { return test_; }
  Backend& ref() const { return ref_; }
  uint32_t seed() const { return seed_; }
  std::mt19937& rng() { return rng_; }

  // Uniform random floats in [lo, hi).
  std::vector<float> uniform(size_t n, float lo, float hi);
  // Speech-like random audio in 16-bit units: a few sinusoids with a
  // drifting pitch, a syllable-rate envelope, noise and a DC offset,
  // rounded and clipped to S16.
  std::vector<float> random_audio(int64_t num_samples);

  // The general form: `work` runs on one backend and returns what it
  // produced, on the host. It runs on test() and on ref(), and the results
  // are compared. Random inputs must be drawn before, not inside, `work`.
  Comparison run(const std::string& what, const Tolerance& tol,
                 const std::function<std::vector<float>(Backend&)>& work);

  // One operation each, on fresh random inputs of the given shape. The
  // comparison covers the whole output buffer.
  //
  // frame_signal compares the frames (with an energy output requested or
  // not); frame_energy compares the energy output of the same operation.
  Comparison frame_signal(const FramingSpec& spec, bool with_energy,
                          const Tolerance& tol);
  Comparison frame_energy(const FramingSpec& spec, const Tolerance& tol);
  Comparison power_spectrum(int64_t rows, int fft_size, bool magnitude,
                            const Tolerance& tol);
  // spectral_bands on fresh speech-like audio (random_audio over the whole
  // signal buffer, so the gaps between utterances hold samples that must
  // not leak into a frame), a random window and a random sparse filterbank
  // of spec-sized rows: b.num_bands rows, each non-zero (positive weights)
  // on a random run of bins, one row over every bin; the support is handed
  // over as the ranges. Compares the bands, or with compare_energy the
  // energy output (then requested). When b.projection_outputs > 0, a random
  // projection matrix (projection_outputs x projection_group, uniform in
  // [-1, 1), as a DCT's signs) is made and applied: the projected bands are
  // compared. b.projection itself is ignored.
  Comparison spectral_bands(const FramingSpec& spec, const BandsSpec& b, bool compare_energy,
                            const Tolerance& tol);
  Comparison gemm_nt(int64_t rows, int k, int m, size_t a_offset,
                     size_t c_offset, const Tolerance& tol);
  // Inputs uniform in [lo, hi).
  Comparison apply(UnaryOp op, float param, size_t n, float lo, float hi,
                   const Tolerance& tol);
  Comparison log_into_column(int64_t rows, float param, int dst_cols,
                             int dst_col, const Tolerance& tol);
  Comparison splice(int64_t num_utts, int64_t rows_per_utt, int cols, int left,
                    int right);
  // Feature-like rows (uniform in [-30, 30)); exact (one float multiply
  // each). The output is poisoned with NaN first: an output left unwritten
  // throws.
  Comparison extended_outer_products(int64_t rows, int dim);
  // Rows are autocorrelations of random signals (positive definite), plus
  // one row with r[0] <= 0 and one of all zeros, which must give zeros.
  Comparison lpc_to_cepstrum(int64_t rows, int order, int num_ceps,
                             const Tolerance& tol);
  // Random mixtures in CSR form over random log densities: rows of 0 to
  // max_row_len components (Gaussians drawn with repeats), a tenth of the
  // weights and a few densities -inf, some rows empty (so some senones score
  // -inf); the output lies at out_offset inside a larger buffer.
  Comparison senone_scores(int64_t frames, int num_gaussians, int senones,
                           int streams, int max_row_len, size_t out_offset,
                           const Tolerance& tol);

  // FeatureExtractor::compute on one utterance of random audio.
  Comparison features(const FeatureOptions& opts, const std::vector<float>& warps,
                      int64_t num_samples, const Tolerance& tol);
  // FeatureExtractor::compute_device on a batch of utterances laid out
  // `num_samples + gap` apart (the gap holds random samples that must not
  // leak into any frame).
  Comparison features_batch(const FeatureOptions& opts,
                            const std::vector<float>& warps, int64_t num_utts,
                            int64_t num_samples, int64_t gap,
                            const Tolerance& tol);

 private:
  Comparison framing(const FramingSpec& spec, bool with_energy,
                     bool compare_energy, const Tolerance& tol);

  Backend& test_;
  Backend& ref_;
  uint32_t seed_;
  std::mt19937 rng_;
};

}  // namespace gpuspeech
