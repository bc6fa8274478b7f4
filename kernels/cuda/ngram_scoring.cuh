// Back-off n-gram scores on the device (common/model/ngram_view.h's
// ngram_score_log10, the function NgramModel::score_log10 runs on the
// host), for word-end rescoring on the device (docs/search-lanes-plan.md,
// S8) and for checking a device copy of a model against the host; and the
// same scores through the model's n-gram hash (ngram_hash.h, S8 step 6).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/model/ngram_hash.h"
#include "common/model/ngram_view.h"

namespace gpuspeech {
namespace cuda {

// For each query q < n: scores[q] = log10 P(words[q] | history) and
// matched[q] = the n-gram length used, where the history is the ks[q]
// words recent[q * stride .. q * stride + ks[q]), most recent first
// (ks[q] <= lm.order - 1, every id below lm.vocabulary). `lm` points into
// device memory (CudaNgramModel::view); the query arrays are device
// arrays. Asynchronous on `stream`.
cudaError_t ngram_score_queries(const NgramView& lm, const int* recent, int stride, const int* ks,
                                const int* words, int n, float* scores, int* matched,
                                cudaStream_t stream);

// The same queries scored through `hash` (CudaNgramModel::hash_view,
// ngram_hash_score_log10): the same floats and lengths.
cudaError_t ngram_hash_score_queries(const NgramHashView& hash, const int* recent, int stride, const int* ks,
                                     const int* words, int n, float* scores, int* matched,
                                     cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
