// Word-end rescoring's steps as kernels (common/search/lm_history_table.h
// on the device; docs/search-lanes-plan.md, S8): clearing a stream's
// history table with its start history, and a batch of word ends, each
// (history id, graph word) to its correction, next history and hash.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/search/lm_history_table.h"

namespace gpuspeech {
namespace cuda {

// Empties `table` and adds the start history (`length` words: 0 or the
// one word `full` / `pruned`). Asynchronous on `stream`.
cudaError_t lm_history_reset(const LmHistoryTable& table, int length, int32_t full, int32_t pruned,
                             cudaStream_t stream);

// Empties `to` (a larger table) and adds every history of `from` to it:
// map[i] = the new id of old id i (-1 for a free slot of `from`, and
// where `to` could not take it, each such counted in *failed, device
// memory). Asynchronous on `stream`.
cudaError_t lm_history_rehash(const LmHistoryTable& from, const LmHistoryTable& to, int32_t* map,
                              unsigned int* failed, cudaStream_t stream);

// out[q] = lm_word_end(rescoring, table, histories[q], words[q]) for q < n,
// all in one launch (one phase: every history named must have been added
// by an earlier launch). Asynchronous on `stream`.
cudaError_t lm_word_ends(const LmRescoringView& rescoring, const LmHistoryTable& table,
                         const int32_t* histories, const int32_t* words, int n, LmWordEnd* out,
                         cudaStream_t stream);

}  // namespace cuda
}  // namespace gpuspeech
