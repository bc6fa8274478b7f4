// Back-off n-gram scores on the device (ngram_scoring.cuh).
#include "kernels/cuda/ngram_scoring.cuh"

namespace gpuspeech {
namespace cuda {
namespace {

__global__ void ngram_score_kernel(NgramView lm, const int* __restrict__ recent, int stride,
                                   const int* __restrict__ ks, const int* __restrict__ words, int n,
                                   float* __restrict__ scores, int* __restrict__ matched) {
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x) {
    int length = 1;
    scores[q] = ngram_score_log10(lm, recent + static_cast<int64_t>(q) * stride, ks[q], words[q], &length);
    matched[q] = length;
  }
}

__global__ void ngram_hash_score_kernel(NgramHashView hash, const int* __restrict__ recent, int stride,
                                        const int* __restrict__ ks, const int* __restrict__ words, int n,
                                        float* __restrict__ scores, int* __restrict__ matched) {
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x) {
    int length = 1;
    scores[q] = ngram_hash_score_log10(hash, recent + static_cast<int64_t>(q) * stride, ks[q], words[q], &length);
    matched[q] = length;
  }
}

int query_blocks(int n, int threads) {
  return (n + threads - 1) / threads < 4096 ? (n + threads - 1) / threads : 4096;
}

}  // namespace

cudaError_t ngram_hash_score_queries(const NgramHashView& hash, const int* recent, int stride, const int* ks,
                                     const int* words, int n, float* scores, int* matched,
                                     cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  ngram_hash_score_kernel<<<query_blocks(n, kThreads), kThreads, 0, stream>>>(hash, recent, stride, ks, words, n,
                                                                            scores, matched);
  return cudaGetLastError();
}

cudaError_t ngram_score_queries(const NgramView& lm, const int* recent, int stride, const int* ks,
                                const int* words, int n, float* scores, int* matched,
                                cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  ngram_score_kernel<<<query_blocks(n, kThreads), kThreads, 0, stream>>>(lm, recent, stride, ks, words, n, scores, matched);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace gpuspeech
