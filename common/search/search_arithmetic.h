// The few numeric operations of token passing that the CPU and the CUDA
// searchers must evaluate bit for bit alike, so that both find the same best
// path on the same graph and scores. Included by common/search/*.cpp and by
// kernels/cuda/token_passing.cu (nvcc), hence no standard-library types.
//
// Exactness: every float operation here is a single IEEE operation rounded
// to nearest. On the device the _rn intrinsics keep nvcc from contracting a
// multiply and an add into one FMA; on the host the compiler targets SSE2
// without FMA (gcc and clang contract only when the target has FMA, which
// the default x86-64 target does not), so the same expressions round the
// same way.
//
// Ordering: a candidate token is the 64-bit value (cost key << 32) | arc,
// where the cost key is the float's bit pattern mapped to an unsigned integer
// of the same order. Smaller is better: lower cost, and between equal costs
// the lower arc index (the arc's position in the graph's CSR arrays). One
// atomicMin on this value per destination state picks the winner without
// races, and the CPU's plain minimum picks the same one.
#pragma once

#include <stdint.h>
#include <string.h>

#include "common/host_device.h"

namespace gpuspeech {
namespace search {

// The arc field of a token that no arc produced (the utterance's start).
constexpr uint32_t kNoArc = 0xFFFFFFFFu;
// An empty per-state slot: larger than every real candidate.
constexpr uint64_t kNoCandidate = 0xFFFFFFFFFFFFFFFFull;
// Graphs whose arc count reaches kNoArc cannot be searched.
constexpr int64_t kMaxArcs = 0xFFFFFFFFll;

GPUSPEECH_HOST_DEVICE uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
#endif
}

GPUSPEECH_HOST_DEVICE float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// Monotone map float -> uint32 (for non-NaN x): a < b  <=>  key(a) < key(b).
// Negative floats have their bits inverted, positive ones the sign set.
GPUSPEECH_HOST_DEVICE uint32_t cost_key(float cost) {
  const uint32_t u = float_bits(cost);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

GPUSPEECH_HOST_DEVICE float key_cost(uint32_t key) {
  return bits_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

GPUSPEECH_HOST_DEVICE uint64_t pack_candidate(float cost, uint32_t arc) {
  return (static_cast<uint64_t>(cost_key(cost)) << 32) | arc;
}

GPUSPEECH_HOST_DEVICE float candidate_cost(uint64_t c) {
  return key_cost(static_cast<uint32_t>(c >> 32));
}

GPUSPEECH_HOST_DEVICE uint32_t candidate_arc(uint64_t c) {
  return static_cast<uint32_t>(c & 0xFFFFFFFFu);
}

// A candidate exists only for a finite cost: +inf (a senone with zero
// likelihood, an infinite arc cost) and NaN never become tokens.
GPUSPEECH_HOST_DEVICE bool usable_cost(float c) {
  return c < 3.402823466e38f && c > -3.402823466e38f;
}

GPUSPEECH_HOST_DEVICE float add_cost(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// Cost after taking an emitting arc: (cost + arc_cost) - scale * loglik,
// rounded after each operation in that order.
GPUSPEECH_HOST_DEVICE float emitting_cost(float cost, float arc_cost,
                                          float acoustic_scale, float loglik) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(__fadd_rn(cost, arc_cost), __fmul_rn(acoustic_scale, loglik));
#else
  const float path = cost + arc_cost;
  const float acoustic = acoustic_scale * loglik;
  return path - acoustic;
#endif
}

// Whether a rescored word end is offered to its destination: a usable
// cost within `beam` of the emitting step's best. One beyond it is inert
// (it would neither relax, nor reach the word-end step, nor survive
// pruning, whose best is at most the emitting step's), but whether it
// would win its destination depends on candidates the emitting step's skip
// rule may or may not have offered there, which differs between searchers
// (the device's skip bound depends on timing). So no searcher offers it,
// and every searcher makes the same word records: the word-lattice pass
// reads all of them, not only those on live paths.
GPUSPEECH_HOST_DEVICE bool offer_in_beam(float cost, float best_emit, float beam) {
  return usable_cost(cost) && cost <= add_cost(best_emit, beam);
}

// The acoustic part of a token's cost after an emitting arc (the word-
// lattice pass): its source's part less the term emitting_cost subtracts,
// rounded the same way on every searcher.
GPUSPEECH_HOST_DEVICE float acoustic_after(float part, float acoustic_scale, float loglik) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(part, __fmul_rn(acoustic_scale, loglik));
#else
  const float acoustic = acoustic_scale * loglik;
  return part - acoustic;
#endif
}

// ln 10 as a double literal: the nearest double, which is what the host's
// std::log(10.0) returns (tests/test_lm_rescoring.cpp checks it), and a
// constant the device can use.
constexpr double kLn10 = 2.302585092994045684;

// Word-end rescoring's cost correction (lm_rescorer.h): the pruned LM's
// cost, which the graph charged, replaced by the full LM's, both log10,
// in double, rounded to float once: (lw * ln 10) * (pruned - full).
GPUSPEECH_HOST_DEVICE float word_end_delta(float language_weight, float pruned_log10,
                                           float full_log10) {
#ifdef __CUDA_ARCH__
  return __double2float_rn(__dmul_rn(__dmul_rn(static_cast<double>(language_weight), kLn10),
                                     __dsub_rn(static_cast<double>(pruned_log10),
                                               static_cast<double>(full_log10))));
#else
  const double scale = static_cast<double>(language_weight) * kLn10;
  const double diff = static_cast<double>(pruned_log10) - static_cast<double>(full_log10);
  return static_cast<float>(scale * diff);
#endif
}

// Max-active histogram bin of a token within the beam: bins of width
// beam / num_bins from the frame's best cost; bin_scale = num_bins / beam
// (computed once, in float, by the caller).
GPUSPEECH_HOST_DEVICE int histogram_bin(float cost, float best, float bin_scale,
                                        int num_bins) {
#ifdef __CUDA_ARCH__
  const float x = __fmul_rn(__fsub_rn(cost, best), bin_scale);
#else
  const float diff = cost - best;
  const float x = diff * bin_scale;
#endif
  if (!(x >= 0.0f)) return 0;
  if (x >= static_cast<float>(num_bins - 1)) return num_bins - 1;
  return static_cast<int>(x);
}

}  // namespace search
}  // namespace gpuspeech
