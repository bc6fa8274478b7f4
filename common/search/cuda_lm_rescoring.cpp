// Word-end rescoring's data on a CUDA device (cuda_lm_rescoring.h).
#include "common/search/cuda_lm_rescoring.h"

#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "kernels/cuda/lm_word_ends.cuh"

namespace gpuspeech {

using cuda_memory::check;

std::shared_ptr<const CudaLmRescoring> CudaLmRescoring::upload(const LmRescorer& rescorer,
                                                               int device_id) {
  if (rescorer.history_length() > kLmHistoryMaxWords)
    throw BackendError("cuda lm: rescoring on the device takes LMs of order 3 or less; " +
                       rescorer.full_lm().source() + " keeps " +
                       std::to_string(rescorer.history_length()) + " history words");
  std::shared_ptr<CudaLmRescoring> r(new CudaLmRescoring());
  r->device_ = device_id;
  r->full_ = CudaNgramModel::upload(rescorer.full_lm(), device_id);
  r->pruned_ = CudaNgramModel::upload(rescorer.pruned_lm(), device_id);
  check(cudaSetDevice(device_id), "cudaSetDevice");
  const std::vector<int32_t> full(rescorer.full_of_graph().begin(), rescorer.full_of_graph().end());
  const std::vector<int32_t> pruned(rescorer.pruned_of_graph().begin(), rescorer.pruned_of_graph().end());
  cuda_memory::upload(r->full_of_graph_, full, nullptr);
  cuda_memory::upload(r->pruned_of_graph_, pruned, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  r->view_.full = r->full_->view();
  r->view_.pruned = r->pruned_->view();
  r->view_.full_of_graph = r->full_of_graph_.get();
  r->view_.pruned_of_graph = r->pruned_of_graph_.get();
  r->view_.words = rescorer.history_length();
  r->view_.language_weight = rescorer.language_weight();
  r->bytes_ = r->full_->bytes() + r->pruned_->bytes() + (full.size() + pruned.size()) * sizeof(int32_t);
  // The start history as LmRescorer::reset makes it: <s> when it keeps
  // history words and both LMs have <s>, else none.
  const int fs = rescorer.full_lm().word_id("<s>");
  const int ps = rescorer.pruned_lm().word_id("<s>");
  if (rescorer.history_length() > 0 && fs != NgramModel::kNoWord && ps != NgramModel::kNoWord) {
    r->start_length_ = 1;
    r->start_full_ = fs;
    r->start_pruned_ = ps;
  }
  return r;
}

CudaLmHistoryTable::CudaLmHistoryTable(const CudaLmRescoring& rescoring, uint32_t capacity)
    : rescoring_(rescoring) {
  uint32_t c = 1;
  while (c < capacity && c < (1u << 30)) c <<= 1;
  keys_.resize(c);
  full_.resize(static_cast<size_t>(c) * kLmHistoryMaxWords);
  pruned_.resize(static_cast<size_t>(c) * kLmHistoryMaxWords);
  lengths_.resize(c);
  hashes_.resize(c);
  view_.keys = keys_.get();
  view_.full_words = full_.get();
  view_.pruned_words = pruned_.get();
  view_.lengths = lengths_.get();
  view_.hashes = hashes_.get();
  view_.capacity = c;
  const int32_t f = rescoring.start_full();
  start_ = static_cast<int32_t>(history_hash_of(&f, rescoring.start_length()) & (c - 1));
}

void CudaLmHistoryTable::reset(cudaStream_t stream) {
  check(cuda::lm_history_reset(view_, rescoring_.start_length(), rescoring_.start_full(),
                               rescoring_.start_pruned(), stream),
        "lm_history_reset");
}

}  // namespace gpuspeech
