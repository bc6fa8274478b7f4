// See stream_maker.h.
#include "common/engine/stream_maker.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace gpuspeech {

std::vector<std::unique_ptr<Recognizer>> make_streams(
    const std::shared_ptr<const RecognitionResources>& resources, const RecognizerConfig& config,
    size_t count, unsigned threads) {
  std::vector<std::unique_ptr<Recognizer>> out(count);
  std::vector<std::exception_ptr> errors(count);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(threads, count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < count; k = next++) {
      try {
        out[k] = std::make_unique<Recognizer>(resources, config);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  if (workers > 0) work();  // this thread is a worker too
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace gpuspeech
