// Dynamic time warping of one test utterance against one template on the
// host: the reference every device engine (dtw_engine.h) is checked
// against. The step patterns, the global region and the normalisation are
// defined in dtw_options.h.
//
// Memory: one column of accumulated costs per template, updated in place
// (kItakura sweeps each column from the top so that the cells j-1 and j-2
// of the previous column are still there when cell j needs them; kSymmetric
// sweeps from the bottom and keeps the one overwritten diagonal value in a
// scalar). Only the cells of dtw_column_range() are computed.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/dtw/dtw_options.h"

namespace gpuspeech {

// The cells [lo, hi] of column i (0-based) that the pattern's global region
// and the band allow, for a test of n frames and a template of m frames.
// Returns false when the column has none (lo > hi). For kItakura lo and hi
// never decrease with i; for kSymmetric the same holds.
bool dtw_column_range(const DtwOptions& opts, int64_t n, int64_t m, int64_t i, int64_t* lo,
                      int64_t* hi);

// The local distance of dtw_options.h between two frames of `dim` floats,
// summed over k in ascending order (the device kernels use the same order).
float dtw_local_distance(const float* x, const float* y, int dim, LocalDistance kind);

// The DTW distance between `test` (n x dim, row-major) and `ref`
// (m x dim): the least path cost, divided by the path weight when
// opts.normalize. +inf when no path satisfies the constraints (lengths too
// different for kItakura, or a band too narrow). With `path`, also the
// best path's cells (i, j) from (0,0) to (n-1,m-1) (kept per column while
// sweeping: n x band-width bytes); empty when the distance is +inf.
// Throws std::invalid_argument when n, m or dim is < 1 or opts is bad.
float dtw_distance(const float* test, int64_t n, const float* ref, int64_t m, int dim,
                   const DtwOptions& opts,
                   std::vector<std::pair<int64_t, int64_t>>* path = nullptr);

}  // namespace gpuspeech
