// Mel filterbanks as matrices: num_filters rows x (fft_size/2 + 1) columns,
// so that filterbank energies = power spectrum x matrix^T (one GEMM).
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// The mel scales. Sphinx: 2595 log10(1 + f/700). HTK/Kaldi: 1127 ln(1 + f/700).
double mel_sphinx(double hz);
double mel_sphinx_inverse(double mel);
double mel_htk(double hz);
double mel_htk_inverse(double mel);

// Piecewise-linear VTLN warp of frequency `hz` by factor `warp` (Kaldi's
// and HTK's form): between the two knees it is hz / warp; below the lower
// knee and above the upper knee it is linear so that low_cutoff-ish
// frequencies and the Nyquist frequency map to themselves. `low_freq` and
// `high_freq` bound the filterbank. Identity when warp == 1.
double vtln_warp_hz(double hz, double warp, double low_freq, double high_freq,
                    double nyquist, const VtlnOptions& vtln);

// Throws std::invalid_argument unless `warp` is in (0.5, 2) and, when it is
// not 1, both VTLN knees fall strictly inside the filterbank's band (outside
// it the piecewise-linear warp would be discontinuous).
void check_vtln(const MelOptions& mel, double sample_rate, double warp);

// The Sphinx filterbank (sphinxbase fe_build_melfilters): filter edges
// equally spaced on the Sphinx mel scale from low to high, rounded to DFT
// bins unless mel.round_filters is false, unit-area triangles (area 1 over
// the continuous edges, whether or not rounded). VTLN warps the edge
// frequencies.
// The HTK/Kaldi filterbank: triangles of peak 1 on the 1127-ln mel axis,
// evaluated at each bin's (warped) mel; Kaldi leaves out the Nyquist bin.
// Which one is built follows mel.scale; `warp` overrides mel.vtln.warp.
std::vector<float> mel_filterbank(const MelOptions& mel, int fft_size,
                                  float sample_rate, float warp,
                                  bool include_nyquist = true);

// high_freq as configured, resolving <= 0 as an offset from Nyquist.
double resolve_high_freq(double high_freq, double sample_rate);

}  // namespace gpuspeech
