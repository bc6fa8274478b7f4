// Every eigenvalue and eigenvector of a small symmetric matrix, for the
// offline learner of a DTW feature projection (projection_learner.h).
//
// How: the cyclic Jacobi method. It is slower than a Householder reduction
// (fmllr/symmetric_eigen_range.h uses one for the two extremes it needs),
// but it gives orthonormal vectors directly and is accurate to a few units
// of rounding times the matrix's norm; the learner calls it twice per
// projection, at load time or in a tool, on matrices of at most a few
// hundred rows.
#pragma once

#include <vector>

namespace gpuspeech {

struct SymmetricEigen {
  std::vector<double> values;   // n, largest first
  std::vector<double> vectors;  // n x n, row-major; column j belongs to values[j]
};

// `a`: n x n, row-major, symmetric (only its lower triangle is read).
// Throws std::invalid_argument when n < 1, the size is not n * n, or an
// entry is not finite.
SymmetricEigen symmetric_eigen(const std::vector<double>& a, int n);

}  // namespace gpuspeech
