// Estimating a feature-space MLLR transform from FmllrStats (fmllr_stats.h):
// maximise
//   Q(W) = beta ln|det A| + sum_i ( w_i k_iᵀ - ½ w_i G_i w_iᵀ )
// row by row (Gales 1998). With the other rows fixed, ln|det A| depends on
// row i only through w_i pᵀ, p = [c_i 0] with c_i row i of the cofactors of
// A; any multiple of p will do, and row i of A⁻ᵀ (the cofactors over det A)
// keeps the numbers in range. Setting the gradient to zero,
//   w_i = (alpha p + k_i) G_i⁻¹,   alpha = beta / (w_i pᵀ),
// and with a = p G_i⁻¹ pᵀ > 0 and e = k_i G_i⁻¹ pᵀ this is the quadratic
//   a alpha² + e alpha - beta = 0,
// whose two real roots (one positive, one negative) give
//   Q_i(alpha) = beta ln|alpha a + e| - ½ alpha² a + const;
// the larger one is the row's exact maximum, so Q never decreases from one
// row update to the next. One iteration updates every row once; several
// iterations converge (Q is concave in each row).
//
// Guards, each reported in FmllrEstimate::message:
//  - beta below FmllrOptions::min_frames: the start transform is kept;
//  - a G_i that is not positive definite or whose condition number exceeds
//    max_condition gets ridge * trace(G_i) / (d+1) added to its diagonal
//    (this is the objective then maximised, and the one reported);
//  - a G_i still not positive definite (zero or non-finite statistics), or a
//    result that is not finite or whose |ln det A| exceeds max_log_det: the
//    start transform is kept (refused).
// Never returns NaN.
//
// A prior for the full and block updates (FmllrOptions::prior_frames =
// tau > 0): the objective maximised is
//   Q(W) - tau/2 sum_i (w_i - v_i) (G_i / beta) (w_i - v_i)ᵀ,
// V = [A b] the diagonal estimate from the same statistics. G_i / beta is
// one average frame's G_i, so the prior weighs as tau frames that favour the
// diagonal transform, whatever the scale of the features; it changes only
// the statistics (G_i by (1 + tau / beta), k_i by tau / beta v_i G_i), and
// the row updates stay exact. tau = 0 is the plain full estimate; as beta
// grows past tau the data outweigh the prior. Why: the 2d parameters of the
// diagonal transform are well determined by a few seconds of speech, the
// d (d+1) of the full one are not, and on real speech the full one
// nevertheless does better than the diagonal one even from one utterance
// (docs/benchmarks.md); the prior lets a full transform move from the
// diagonal one only as far as the data support.
#pragma once

#include <string>
#include <vector>

#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"

namespace gpuspeech {

// Which part of W = [A b] is estimated (Kaldi's fmllr-update-type):
//  - kFull: all d (d+1) entries, by the row updates above;
//  - kDiag: A diagonal and b, 2d parameters: each row's (a_ii, b_i) is the
//    same row maximum restricted to those two entries, exact in one pass
//    (the rows do not interact when A is diagonal);
//  - kBlock: A block-diagonal in three equal blocks, and b: d (d/3 + 1)
//    parameters (546 for d = 39). The blocks are the static, delta and
//    acceleration parts of the feature vector (Sphinx's 1s_c_d_dd and
//    Kaldi's add-deltas lay them out so); each row's update is the full
//    update restricted to its block's columns and the offset, starting from
//    the diagonal estimate. Why: HTK's CMLLR does this by default for
//    cepstra with deltas; the three parts are nearly uncorrelated, so the
//    blocks keep most of what a full transform buys with a third of its
//    parameters. Needs d divisible by 3 (refused otherwise);
//  - kOffset: A = I, b alone (d parameters): b_i = (k_i[d] - G_i[d][i]) / G_i[d][d].
// The diag and offset estimates do not depend on the start transform (as in
// Kaldi); the start is still what is kept when no update is made. Fewer
// parameters need less data: a full transform is 1560 parameters for
// d = 39, a diagonal one 78.
enum class FmllrUpdateType { kFull, kDiag, kOffset, kBlock };
const char* to_string(FmllrUpdateType type);
// kBlock's blocks: static, delta, acceleration.
constexpr int kFmllrBlocks = 3;
// "full", "block", "diag", "offset"; false for anything else.
bool parse_fmllr_update_type(const std::string& name, FmllrUpdateType* type);

struct FmllrOptions {
  FmllrUpdateType update = FmllrUpdateType::kFull;
  int iterations = 10;  // sweeps of the full update
  // Minimum beta (frames of speech, posterior-weighted) to estimate at all:
  // a full 39 x 40 transform has 1560 parameters; Kaldi's recipes use a
  // similar few seconds.
  double min_frames = 300.0;
  // The statistics are summed in float32 on the device (relative rounding
  // around 1e-7 of the largest entries), so a condition number beyond ~1e6
  // cannot be told from a singular G_i. Real speech is far below: G_i of the
  // en-us model on LibriVox have condition numbers around 1e3.
  double max_condition = 1e6;
  // Added to an ill-conditioned G_i's diagonal, times trace(G_i) / (d+1):
  // above the float32 rounding, small against any real eigenvalue.
  double ridge = 1e-5;
  double max_log_det = 50.0;
  // Frames of the prior towards the diagonal estimate (full and block
  // updates; 0: none). See the top of this file.
  double prior_frames = 0.0;
};

enum class FmllrOutcome { kUpdated, kTooFewFrames, kRefused };
const char* to_string(FmllrOutcome outcome);

struct FmllrEstimate {
  FmllrTransform transform;  // the estimate, or the start transform if not updated
  FmllrOutcome outcome = FmllrOutcome::kUpdated;
  std::string message;       // why not updated; regularised dimensions
  // Q / beta at the start and after each iteration (empty if not updated).
  std::vector<double> objective;
  int regularised_dims = 0;
};

// `start`: the transform to begin from (identity when null); throws
// std::invalid_argument for a start transform of the wrong dimension or
// with non-finite entries.
FmllrEstimate estimate_fmllr(const FmllrStats& stats, const FmllrOptions& options = {},
                             const FmllrTransform* start = nullptr);

// One row of the diagonal update in closed form: (a, b) maximising
//   beta ln|a| + a ki + b kd - ½ [a b] [[gii gid] [gid gdd]] [a b]ᵀ,
// the part of Q that row i's diagonal entry and offset move when the other
// entries of the row are 0 (gii, gid, gdd: G_i at (i, i), (i, d), (d, d);
// ki, kd: k_i at i and d). False, and *a and *b untouched, when that 2 x 2
// block is not positive definite. The kDiag estimate is this for every row;
// linear VTLN (vtln_choice.h) uses it on statistics seen through a warp.
bool diagonal_row_estimate(double beta, double gii, double gid, double gdd, double ki, double kd, double* a,
                           double* b);

// Q(W) as above with the statistics as given (no regularisation).
double fmllr_objective(const FmllrStats& stats, const FmllrTransform& t);

}  // namespace gpuspeech
