#include "common/dtw/dtw.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/dtw/dtw_region.h"

namespace gpuspeech {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Backtracking codes of a kItakura cell: where its sloped state came from.
enum : uint8_t { kFromFlat1 = 0, kFromSloped1 = 1, kFromFlat2 = 2, kFromSloped2 = 3 };
// kSymmetric: the step that reached the cell.
enum : uint8_t { kFromLeft = 0, kFromDiag = 1, kFromBelow = 2, kStart = 3 };

// Per-column step choices for backtracking, each column from its lo.
struct Trace {
  std::vector<int64_t> lo;
  std::vector<std::vector<uint8_t>> cells;
};

void trace_column(Trace* t, int64_t lo, int64_t hi) {
  if (!t) return;
  t->lo.push_back(lo);
  t->cells.emplace_back(static_cast<size_t>(std::max<int64_t>(hi - lo + 1, 0)), 0);
}

float itakura(const float* x, int64_t n, const float* y, int64_t m, int dim,
              const DtwOptions& opts, std::vector<std::pair<int64_t, int64_t>>* path) {
  int64_t lo = 0, hi = 0;
  if (!dtw_column_range(opts, n, m, 0, &lo, &hi) || lo != 0) return kInf;
  // flat[j] / sloped[j]: the current column's two accumulated costs.
  std::vector<float> flat(static_cast<size_t>(m), kInf), sloped(static_cast<size_t>(m), kInf);
  Trace trace_store;
  Trace* trace = path ? &trace_store : nullptr;
  sloped[0] = dtw_local_distance(x, y, dim, opts.distance);
  trace_column(trace, 0, 0);
  int64_t prev_lo = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (!dtw_column_range(opts, n, m, i, &lo, &hi)) return kInf;
    trace_column(trace, lo, hi);
    const float* xi = x + i * dim;
    for (int64_t j = hi; j >= lo; --j) {
      const float d = dtw_local_distance(xi, y + j * dim, dim, opts.distance);
      const float f = sloped[j] + d;  // previous column, same j (inf outside it)
      float best = kInf;
      uint8_t from = kFromSloped1;
      if (j >= 1) {
        if (flat[j - 1] < best) best = flat[j - 1], from = kFromFlat1;
        if (sloped[j - 1] < best) best = sloped[j - 1], from = kFromSloped1;
      }
      if (j >= 2) {
        if (flat[j - 2] < best) best = flat[j - 2], from = kFromFlat2;
        if (sloped[j - 2] < best) best = sloped[j - 2], from = kFromSloped2;
      }
      flat[j] = f;
      sloped[j] = best + d;
      if (trace) trace->cells.back()[static_cast<size_t>(j - lo)] = from;
    }
    // Cells the previous column had below this one's range leave it.
    for (int64_t j = prev_lo; j < lo; ++j) flat[j] = sloped[j] = kInf;
    prev_lo = lo;
  }
  const size_t last = static_cast<size_t>(m - 1);
  const float total = std::min(flat[last], sloped[last]);
  if (!(total < kInf)) return kInf;
  if (path) {
    path->clear();
    int64_t i = n - 1, j = m - 1;
    bool in_flat = flat[last] < sloped[last];
    while (true) {
      path->emplace_back(i, j);
      if (i == 0) break;
      if (in_flat) {
        in_flat = false;  // a flat step comes from the sloped state, same j
      } else {
        const uint8_t from = trace_store.cells[static_cast<size_t>(i)]
                                              [static_cast<size_t>(j - trace_store.lo[static_cast<size_t>(i)])];
        j -= (from == kFromFlat1 || from == kFromSloped1) ? 1 : 2;
        in_flat = from == kFromFlat1 || from == kFromFlat2;
      }
      --i;
    }
    std::reverse(path->begin(), path->end());
  }
  return opts.normalize ? total / static_cast<float>(n) : total;
}

float symmetric(const float* x, int64_t n, const float* y, int64_t m, int dim,
                const DtwOptions& opts, std::vector<std::pair<int64_t, int64_t>>* path) {
  int64_t lo = 0, hi = 0;
  if (!dtw_column_range(opts, n, m, 0, &lo, &hi) || lo != 0) return kInf;
  std::vector<float> g(static_cast<size_t>(m), kInf);
  Trace trace_store;
  Trace* trace = path ? &trace_store : nullptr;
  trace_column(trace, lo, hi);
  for (int64_t j = 0; j <= hi; ++j) {
    const float d = dtw_local_distance(x, y + j * dim, dim, opts.distance);
    g[j] = j == 0 ? 2.0f * d : g[j - 1] + d;
    if (trace) trace->cells.back()[static_cast<size_t>(j)] = j == 0 ? kStart : kFromBelow;
  }
  int64_t prev_lo = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (!dtw_column_range(opts, n, m, i, &lo, &hi)) return kInf;
    trace_column(trace, lo, hi);
    const float* xi = x + i * dim;
    float diag_prev = lo >= 1 ? g[lo - 1] : kInf;  // g(i-1, j-1), before it is overwritten
    for (int64_t j = lo; j <= hi; ++j) {
      const float d = dtw_local_distance(xi, y + j * dim, dim, opts.distance);
      const float left = g[j] + d;             // (i-1, j)
      const float diag = diag_prev + 2.0f * d;  // (i-1, j-1)
      const float below = j > lo ? g[j - 1] + d : kInf;  // (i, j-1)
      diag_prev = g[j];
      float best = left;
      uint8_t from = kFromLeft;
      if (diag < best) best = diag, from = kFromDiag;
      if (below < best) best = below, from = kFromBelow;
      g[j] = best;
      if (trace) trace->cells.back()[static_cast<size_t>(j - lo)] = from;
    }
    for (int64_t j = prev_lo; j < lo; ++j) g[j] = kInf;
    prev_lo = lo;
  }
  const float total = g[static_cast<size_t>(m - 1)];
  if (!(total < kInf)) return kInf;
  if (path) {
    path->clear();
    int64_t i = n - 1, j = m - 1;
    while (true) {
      path->emplace_back(i, j);
      const uint8_t from = trace_store.cells[static_cast<size_t>(i)]
                                            [static_cast<size_t>(j - trace_store.lo[static_cast<size_t>(i)])];
      if (from == kStart) break;
      if (from == kFromLeft) --i;
      else if (from == kFromDiag) --i, --j;
      else --j;
    }
    std::reverse(path->begin(), path->end());
  }
  return opts.normalize ? total / static_cast<float>(n + m) : total;
}

}  // namespace

bool dtw_column_range(const DtwOptions& opts, int64_t n, int64_t m, int64_t i, int64_t* lo,
                      int64_t* hi) {
  return dtw_region::column_range(opts.pattern == StepPattern::kItakura, opts.band, n, m, i, lo, hi);
}

float dtw_local_distance(const float* x, const float* y, int dim, LocalDistance kind) {
  float s = 0.0f;
  for (int k = kind == LocalDistance::kCepstral ? 1 : 0; k < dim; ++k) {
    const float t = x[k] - y[k];
    s += t * t;
  }
  return std::sqrt(s);
}

float dtw_distance(const float* test, int64_t n, const float* ref, int64_t m, int dim,
                   const DtwOptions& opts, std::vector<std::pair<int64_t, int64_t>>* path) {
  opts.validate();
  if (n < 1 || m < 1 || dim < 1)
    throw std::invalid_argument("dtw: sequences need >= 1 frame of >= 1 value (got " +
                                std::to_string(n) + " and " + std::to_string(m) + " frames of " +
                                std::to_string(dim) + ")");
  if (opts.distance == LocalDistance::kCepstral && dim < 2)
    throw std::invalid_argument("dtw: the cepstral distance needs >= 2 coefficients per frame");
  if (path) path->clear();
  return opts.pattern == StepPattern::kItakura ? itakura(test, n, ref, m, dim, opts, path)
                                               : symmetric(test, n, ref, m, dim, opts, path);
}

}  // namespace gpuspeech
