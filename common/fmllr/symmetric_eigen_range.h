// The smallest and largest eigenvalues of a small symmetric matrix, for
// the condition number fMLLR's estimate checks on each G_i
// (fmllr_estimate.cpp) before it trusts a Cholesky solve with it.
//
// How: Householder reduction to a tridiagonal matrix with the same
// eigenvalues (about 4/3 n^3 flops), then bisection with Sturm counts for
// the two extremes (O(n) a step). The cyclic Jacobi method it replaces
// computed every eigenvalue and took ten times as long: at an utterance's
// end the check of 39 matrices of 40 x 40 was three quarters of the
// estimate's time (docs/benchmarks.md, "Where an adapting stream's host
// time goes"). Both are accurate to a few units of rounding times the
// matrix's norm, which is what a condition number up to 1e6 needs.
#pragma once

#include <vector>

namespace gpuspeech {

// `a`: n x n, row-major, symmetric (only its lower triangle is read).
// Sets `lo` and `hi` to its smallest and largest eigenvalue. A matrix with
// a non-finite entry gives NaN for both; n < 1 is std::invalid_argument.
void symmetric_eigen_range(const std::vector<double>& a, int n, double& lo, double& hi);

}  // namespace gpuspeech
