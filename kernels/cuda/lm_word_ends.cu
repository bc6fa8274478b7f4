// Word-end rescoring's steps as kernels (lm_word_ends.cuh).
#include "kernels/cuda/lm_word_ends.cuh"

namespace gpuspeech {
namespace cuda {
namespace {

constexpr int kThreads = 256;

__global__ void lm_history_clear_kernel(LmHistoryTable t) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < t.capacity; i += gridDim.x * blockDim.x)
    t.keys[i] = 0ull;
}

__global__ void lm_history_start_kernel(LmHistoryTable t, int length, int32_t full, int32_t pruned) {
  lm_history_intern(t, &full, &pruned, length, history_hash_of(&full, length));
}

__global__ void lm_word_ends_kernel(LmRescoringView v, LmHistoryTable t, const int32_t* __restrict__ histories,
                                    const int32_t* __restrict__ words, int n, LmWordEnd* __restrict__ out) {
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x)
    out[q] = lm_word_end(v, t, histories[q], words[q]);
}

__global__ void lm_history_rehash_kernel(LmHistoryTable from, LmHistoryTable to, int32_t* __restrict__ map,
                                         unsigned int* __restrict__ failed) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < from.capacity; i += gridDim.x * blockDim.x) {
    if (from.keys[i] == 0ull) {
      map[i] = -1;
      continue;
    }
    const int32_t id = lm_history_intern(to, from.full_words + i * kLmHistoryMaxWords,
                                         from.pruned_words + i * kLmHistoryMaxWords, from.lengths[i],
                                         from.hashes[i]);
    map[i] = id;
    if (id < 0) atomicAdd(failed, 1u);
  }
}

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

}  // namespace

cudaError_t lm_history_reset(const LmHistoryTable& table, int length, int32_t full, int32_t pruned,
                             cudaStream_t stream) {
  lm_history_clear_kernel<<<blocks_for(table.capacity), kThreads, 0, stream>>>(table);
  lm_history_start_kernel<<<1, 1, 0, stream>>>(table, length, full, pruned);
  return cudaGetLastError();
}

cudaError_t lm_history_rehash(const LmHistoryTable& from, const LmHistoryTable& to, int32_t* map,
                              unsigned int* failed, cudaStream_t stream) {
  lm_history_clear_kernel<<<blocks_for(to.capacity), kThreads, 0, stream>>>(to);
  lm_history_rehash_kernel<<<blocks_for(from.capacity), kThreads, 0, stream>>>(from, to, map, failed);
  return cudaGetLastError();
}

cudaError_t lm_word_ends(const LmRescoringView& rescoring, const LmHistoryTable& table,
                         const int32_t* histories, const int32_t* words, int n, LmWordEnd* out,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  lm_word_ends_kernel<<<blocks_for(n), kThreads, 0, stream>>>(rescoring, table, histories, words, n, out);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
