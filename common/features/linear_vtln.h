// VTLN done on the cepstra: the matrix that takes a frame's MFCCs computed
// without a warp to (approximately) the MFCCs the same front end computes
// with a piecewise-linear VTLN warp (mel_filterbank.h), so that a decoder
// can try many warps on features it already has, as a linear feature
// transform (the form of an fMLLR transform, fmllr_transform.h).
//
// Why it is linear. A warped filterbank's filter i lies where the unwarped
// filterbank's fractional filter index x_i(warp) lies: the warp moves the
// filters' edges in Hz (vtln_warp_hz), and the unwarped filters' centres
// are evenly spaced on the mel scale. The cepstra are a DCT-II of the log
// filterbank energies; read as a cosine series, they give the log energy
// at any fractional index, so the warped filters' log energies are the
// series evaluated at the x_i, and their DCT the warped cepstra:
//   c_w = D Phi(x(warp)) (D Phi(0..N-1))^-1 c
// with D the front end's cepstral matrix (num_ceps x N, lifter included,
// cepstral_transform.h) and Phi(x) the N x num_ceps cosine basis
// cos(pi k (x_i + 0.5) / N) evaluated at the filter positions x. This is
// linear VTLN in the sense of Pitz & Ney (2005) and Panchapagesan & Alwan
// (2009): the cepstral truncation smooths the spectrum the warp moves, so
// it approximates the warped front end rather than equals it (measured on
// degraded speech, the residual is 9-28 % of what the warp changes;
// docs/benchmarks.md, "VTLN on the cepstra").
//
// With CMN the matrix applies as well before as after the mean is taken
// away (both are linear), and the Sphinx and regression deltas of the
// warped cepstra are the same matrix applied to the deltas: a feature
// vector [c, d, dd] is warped by the block-diagonal matrix of three copies.
//
// MFCC only (the warp of PLP's critical bands is another construction). A
// frame's log energy in place of C0 (use_energy) does not move with a warp:
// its row and column are the identity's.
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// The base_dim() x base_dim() matrix (row-major) for `warp` and the front
// end `options` (its mel filterbank, VTLN knees, cepstral transform,
// lifter and sample rate). Throws std::invalid_argument for a kind other
// than MFCC or a warp check_vtln refuses.
std::vector<double> linear_vtln_matrix(const FeatureOptions& options, double warp);

// How many copies of that matrix a delivered frame holds (output_dim() /
// base_dim(): 1 without deltas, 3 for 1s_c_d_dd or regression deltas of
// order 2), or 0 when the layout mixes the cepstra otherwise (s2_4x) and
// linear VTLN does not apply.
int linear_vtln_blocks(const FeatureOptions& options);

}  // namespace gpuspeech
