// Word-end rescoring's data on a CUDA device (cuda_lm_rescoring.h).
#include "common/search/cuda_lm_rescoring.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
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
  // Scores through the n-gram hashes where both LMs have one (the same
  // floats, shorter waits: S8 step 6). GPUSPEECH_CUDA_LM_LOOKUP=trie walks
  // the tries instead, for measuring one against the other.
  const char* lookup = std::getenv("GPUSPEECH_CUDA_LM_LOOKUP");
  const bool trie = lookup != nullptr && std::string(lookup) == "trie";
  if (!trie && r->full_->hash_view().slots != nullptr && r->pruned_->hash_view().slots != nullptr) {
    r->view_.full_hash = r->full_->hash_view();
    r->view_.pruned_hash = r->pruned_->hash_view();
  }
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

std::shared_ptr<const CudaLmRescoring> CudaLmRescoring::shared(const LmRescorer& rescorer,
                                                               const void* graph, int device_id) {
  // Keyed by what the upload holds: both LMs (objects that the streams'
  // rescorers share), the graph whose words it maps, the weight, the
  // device. Entries of uploads no one holds any more are dropped as
  // others are made.
  using Key = std::tuple<const void*, const void*, const void*, float, int>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const CudaLmRescoring>> uploads;
  const Key key{rescorer.full_lm_shared().get(), rescorer.pruned_lm_shared().get(), graph,
                rescorer.language_weight(), device_id};
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = uploads.begin(); it != uploads.end();) {
    if (it->second.expired() && it->first != key)
      it = uploads.erase(it);
    else
      ++it;
  }
  if (auto held = uploads[key].lock()) return held;
  std::shared_ptr<const CudaLmRescoring> made = upload(rescorer, device_id);
  uploads[key] = made;
  return made;
}

CudaLmHistoryTable::CudaLmHistoryTable(const CudaLmRescoring& rescoring, uint32_t capacity)
    : rescoring_(rescoring) {
  uint32_t c = 1;
  while (c < capacity && c < (1u << 30)) c <<= 1;
  allocate(c);
}

void CudaLmHistoryTable::allocate(uint32_t c) {
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
  view_.probe_limit = kProbeLimit;
  const int32_t f = rescoring_.start_full();
  start_ = static_cast<int32_t>(history_hash_of(&f, rescoring_.start_length()) & (c - 1));
}

size_t CudaLmHistoryTable::bytes() const {
  return static_cast<size_t>(view_.capacity) *
         (sizeof(unsigned long long) + 2 * kLmHistoryMaxWords * sizeof(int32_t) + sizeof(int32_t) +
          sizeof(uint32_t));
}

void CudaLmHistoryTable::grow(cudaStream_t stream, cuda_memory::DeviceArray<int32_t>& map) {
  if (view_.capacity >= (1u << 30)) throw BackendError("cuda lm: more than 2^30 LM histories in one utterance");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  // The old arrays stay alive until the rehash has read them.
  cuda_memory::DeviceArray<unsigned long long> keys = std::move(keys_);
  cuda_memory::DeviceArray<int32_t> full = std::move(full_), pruned = std::move(pruned_),
                                    lengths = std::move(lengths_);
  cuda_memory::DeviceArray<uint32_t> hashes = std::move(hashes_);
  const LmHistoryTable old = view_;
  allocate(old.capacity * 2);
  map.resize(old.capacity);
  cuda_memory::DeviceArray<unsigned int> failed(1);
  check(cudaMemsetAsync(failed.get(), 0, sizeof(unsigned int), stream), "cudaMemsetAsync");
  check(cuda::lm_history_rehash(old, view_, map.get(), failed.get(), stream), "lm_history_rehash");
  unsigned int lost = 0;
  check(cudaMemcpyAsync(&lost, failed.get(), sizeof(lost), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (lost != 0)
    throw BackendError("cuda lm: " + std::to_string(lost) + " LM histories found no slot in a table of " +
                       std::to_string(view_.capacity));
  // The start history keeps the id its hash gives in an empty table only
  // if nothing took that slot first: the tokens' ids are renamed by the
  // map, and start() is what a new utterance's start token gets after
  // reset(), which empties the table again.
}

void CudaLmHistoryTable::copy_words(cudaStream_t stream, std::vector<int32_t>& full, std::vector<int32_t>& pruned,
                                    std::vector<int32_t>& lengths, LmHistoryTable& host) const {
  const size_t c = view_.capacity;
  full.resize(c * kLmHistoryMaxWords);
  pruned.resize(c * kLmHistoryMaxWords);
  lengths.resize(c);
  check(cudaMemcpyAsync(full.data(), view_.full_words, full.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (history words)");
  check(cudaMemcpyAsync(pruned.data(), view_.pruned_words, pruned.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                        stream),
        "cudaMemcpyAsync (history words)");
  check(cudaMemcpyAsync(lengths.data(), view_.lengths, lengths.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                        stream),
        "cudaMemcpyAsync (history lengths)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  host = LmHistoryTable{};
  host.full_words = full.data();
  host.pruned_words = pruned.data();
  host.lengths = lengths.data();
  host.capacity = view_.capacity;
}

void CudaLmHistoryTable::reset(cudaStream_t stream) {
  check(cuda::lm_history_reset(view_, rescoring_.start_length(), rescoring_.start_full(),
                               rescoring_.start_pruned(), stream),
        "lm_history_reset");
}

}  // namespace gpuspeech
