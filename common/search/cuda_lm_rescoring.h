// Word-end rescoring's data on one CUDA device (docs/search-lanes-plan.md,
// S8): both LMs' tries (CudaNgramModel), the graph words' ids in each, and
// the constants, shared by every stream on the device; and one stream's
// history table (lm_history_table.h), which a new utterance clears.
//
// Built only with CUDA (GPUSPEECH_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "common/search/cuda_memory.h"
#include "common/search/cuda_ngram_model.h"
#include "common/search/lm_history_table.h"
#include "common/search/lm_rescorer.h"

namespace gpuspeech {

class CudaLmRescoring {
 public:
  // Copies what `rescorer` rescores with to device `device_id`. Throws
  // BackendError for LMs of order above 3 (histories of more than two
  // words), no device, or no memory.
  static std::shared_ptr<const CudaLmRescoring> upload(const LmRescorer& rescorer, int device_id);
  // The upload for `rescorer`'s LMs, language weight and graph words
  // (`graph`, the graph the rescorer's word ids are of) on `device_id`,
  // shared by every caller in the process that asks for the same while
  // one holds it: hundreds of streams hold one copy of the LMs.
  static std::shared_ptr<const CudaLmRescoring> shared(const LmRescorer& rescorer, const void* graph,
                                                       int device_id);

  // For kernels: pointers into device memory.
  const LmRescoringView& view() const { return view_; }
  int device() const { return device_; }
  size_t bytes() const { return bytes_; }
  // The sentence start's words (full and pruned ids, 0 or 1 of them).
  int start_length() const { return start_length_; }
  int32_t start_full() const { return start_full_; }
  int32_t start_pruned() const { return start_pruned_; }

 private:
  CudaLmRescoring() = default;
  int device_ = 0;
  size_t bytes_ = 0;
  std::shared_ptr<const CudaNgramModel> full_, pruned_;
  cuda_memory::DeviceArray<int32_t> full_of_graph_, pruned_of_graph_;
  LmRescoringView view_;
  int start_length_ = 0;
  int32_t start_full_ = -1, start_pruned_ = -1;
};

// One stream's histories on the device.
class CudaLmHistoryTable {
 public:
  // `capacity` entries, rounded up to a power of two. An insertion probes
  // at most kProbeLimit slots before the table counts as full.
  CudaLmHistoryTable(const CudaLmRescoring& rescoring, uint32_t capacity);
  static constexpr uint32_t kProbeLimit = 128;
  // Clears the table and adds the sentence start's history (id start()
  // once the stream has run what is queued), asynchronously on `stream`.
  void reset(cudaStream_t stream);
  // The start history's id: the entry its words hash to (an empty table).
  int32_t start() const { return start_; }
  const LmHistoryTable& view() const { return view_; }
  uint32_t capacity() const { return view_.capacity; }
  size_t bytes() const;
  // Twice the entries, every history kept under a new id: map (device
  // memory, the old capacity's entries) gets new id by old id, -1 for free
  // slots, for renaming the tokens' histories (tp_remap_histories). Waits
  // for `stream`. Throws BackendError if memory runs out or a history
  // found no slot.
  void grow(cudaStream_t stream, cuda_memory::DeviceArray<int32_t>& map);
  // The words and lengths of every entry, to host memory (waits for
  // `stream`): lm_end_delta and the history's words on the host read
  // these. `host` gets pointers into the vectors (keys and hashes null).
  void copy_words(cudaStream_t stream, std::vector<int32_t>& full, std::vector<int32_t>& pruned,
                  std::vector<int32_t>& lengths, LmHistoryTable& host) const;

 private:
  void allocate(uint32_t capacity);
  const CudaLmRescoring& rescoring_;
  cuda_memory::DeviceArray<unsigned long long> keys_;
  cuda_memory::DeviceArray<int32_t> full_, pruned_, lengths_;
  cuda_memory::DeviceArray<uint32_t> hashes_;
  LmHistoryTable view_;
  int32_t start_ = 0;
};

}  // namespace gpuspeech
