// Uploading an n-gram model's trie to a CUDA device (cuda_ngram_model.h).
#include "common/search/cuda_ngram_model.h"

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/model/ngram_hash_table.h"

namespace gpuspeech {

using cuda_memory::check;

std::shared_ptr<const CudaNgramModel> CudaNgramModel::upload(const NgramModel& lm, int device_id) {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess)
    throw BackendError(std::string("cuda lm: no CUDA device: ") + cudaGetErrorString(st));
  if (device_id < 0 || device_id >= count)
    throw BackendError("cuda lm: device " + std::to_string(device_id) + " out of range (" +
                       std::to_string(count) + " devices)");
  if (lm.order() < 1 || lm.order() > kNgramViewMaxOrder)
    throw BackendError("cuda lm: " + lm.source() + " has order " + std::to_string(lm.order()));
  check(cudaSetDevice(device_id), "cudaSetDevice");
  std::shared_ptr<CudaNgramModel> m(new CudaNgramModel());
  m->device_ = device_id;
  const cuda_memory::ScopedStream scoped;  // goes however the uploads end
  const cudaStream_t stream = scoped.get();

  const NgramView host = lm.view();
  m->view_ = host;  // order and vocabulary; the pointers are replaced below
  for (int l = 0; l < lm.order(); ++l) {
    const NgramLevel& level = lm.levels()[l];
    Level& d = m->levels_[l];
    // An empty array stays null in the view, as on the host.
    if (!level.words.empty()) cuda_memory::upload(d.words, level.words, stream);
    if (!level.children.empty()) cuda_memory::upload(d.children, level.children, stream);
    cuda_memory::upload(d.log10_prob, level.log10_prob, stream);
    if (!level.log10_backoff.empty()) cuda_memory::upload(d.log10_backoff, level.log10_backoff, stream);
    NgramLevelView& v = m->view_.levels[l];
    v.words = level.words.empty() ? nullptr : d.words.get();
    v.children = level.children.empty() ? nullptr : d.children.get();
    v.log10_prob = d.log10_prob.get();
    v.log10_backoff = level.log10_backoff.empty() ? nullptr : d.log10_backoff.get();
    m->bytes_ += (level.words.size() + level.children.size()) * sizeof(uint32_t) +
                 (level.log10_prob.size() + level.log10_backoff.size()) * sizeof(float);
  }
  if (NgramHashTable::fits(lm)) {
    const NgramHashTable table(lm);
    cuda_memory::upload(m->hash_slots_, table.slots(), stream);
    m->hash_view_ = table.view();
    m->hash_view_.slots = m->hash_slots_.get();
    m->hash_view_.unigram_log10_prob = m->view_.levels[0].log10_prob;
    m->hash_view_.unigram_log10_backoff = m->view_.levels[0].log10_backoff;
    m->bytes_ += table.bytes();
    // The table's host memory goes when this scope ends: wait for the copy.
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return m;
}

}  // namespace gpuspeech
