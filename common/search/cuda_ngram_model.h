// An n-gram model's trie in one CUDA device's memory (the arrays of
// NgramModel::view, ngram_view.h), and, for models it fits (order 3 or
// less), its n-gram hash (ngram_hash.h), for word-end rescoring on the
// device (docs/search-lanes-plan.md, S8). Immutable once uploaded, so every stream
// on the device can read one copy, as with CudaSearchGraph.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>

#include "common/model/ngram_hash.h"
#include "common/model/ngram_model.h"
#include "common/model/ngram_view.h"
#include "common/search/cuda_memory.h"

namespace gpuspeech {

class CudaNgramModel {
 public:
  // Copies `lm`'s trie to device `device_id` and waits for the copies.
  // Throws BackendError when no such device answers or memory runs out.
  static std::shared_ptr<const CudaNgramModel> upload(const NgramModel& lm, int device_id);

  int device() const { return device_; }
  // The trie with device pointers: for kernels only.
  const NgramView& view() const { return view_; }
  // The hash with device pointers (the unigrams are the trie's), or a
  // view with null slots where the model does not fit one.
  const NgramHashView& hash_view() const { return hash_view_; }
  // Device bytes held.
  size_t bytes() const { return bytes_; }

 private:
  CudaNgramModel() = default;

  struct Level {
    cuda_memory::DeviceArray<uint32_t> words, children;
    cuda_memory::DeviceArray<float> log10_prob, log10_backoff;
  };
  int device_ = 0;
  size_t bytes_ = 0;
  Level levels_[kNgramViewMaxOrder];
  NgramView view_;
  cuda_memory::DeviceArray<NgramHashEntry> hash_slots_;
  NgramHashView hash_view_;
};

}  // namespace gpuspeech
