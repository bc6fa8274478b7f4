// Double-precision reference implementations of the PLP and TRAPS pipelines,
// written independently of the Backend path: explicit loops, a direct DFT,
// the PLP curves evaluated from their formulas, the inverse DFT over the full
// circle, and linear prediction by Gaussian elimination of the normal
// equations rather than Levinson-Durbin. Only conventions that other tests
// pin down are shared with the library: the analysis window (make_window),
// the mel filterbank (mel_filterbank, checked against sphinx_fe by the MFCC
// tests), the VTLN warp (vtln_warp_hz) and the frame count (the caller
// passes FeatureExtractor::num_frames).
#pragma once

#include <cstdint>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {
namespace reference {

using Matrix = std::vector<std::vector<double>>;  // [frame][coefficient]

// Windowed frames, zero-padded to the FFT size, as FramingSpec defines them
// (frame t starts at t * shift, samples outside the signal are 0). Dither
// must be off. `energy` (optional) receives each frame's raw energy.
Matrix frames(const FeatureOptions& opts, const float* samples, int64_t n,
              int64_t num_frames, std::vector<double>* energy = nullptr);

// |X_k|^2 (or |X_k|) for k = 0..fft/2 of each frame, by a direct DFT.
Matrix spectrum(const FeatureOptions& opts, const Matrix& frames,
                bool magnitude);

// PLP cepstra (opts.plp) for one VTLN warp: num_frames x num_ceps.
Matrix plp(const FeatureOptions& opts, const float* samples, int64_t n,
           int64_t num_frames, double warp);

// TRAPS (opts.traps over opts.mel log energies) for one VTLN warp:
// num_frames x (num_filters * 2 * num_coeffs), FeatureExtractor's layout.
Matrix traps(const FeatureOptions& opts, const float* samples, int64_t n,
             int64_t num_frames, double warp);

// How far a float pipeline's output is from a reference. Elementwise
// |got - ref| / max(|ref|, rms_d), where rms_d is the RMS of reference
// dimension d over all frames: a relative error wherever the value is of
// its dimension's usual size, and an error in units of that size where the
// reference happens to pass near zero (a pure relative error would blow up
// there for no fault of the pipeline; a per-frame max would let c_0 or the
// first DCT coefficient hide errors in the small high-order ones).
struct Agreement {
  double worst = 0.0;  // the largest such error
  int64_t frame = -1;  // where it occurred
  int dim = -1;
  double got = 0.0, want = 0.0;
};
// `got` holds rows of `stride` floats; the reference's dimensions are
// compared with columns [col0, col0 + ref[0].size()).
Agreement compare(const Matrix& ref, const float* got, int stride, int col0);

// The LPC cepstrum of one autocorrelation r[0..order] by Gaussian
// elimination and the cepstral recursion (zeros when r[0] <= 0).
std::vector<double> lpc_cepstrum(const std::vector<double>& r, int num_ceps);

}  // namespace reference
}  // namespace gpuspeech
