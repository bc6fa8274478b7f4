// See stream_count.h.
#include "common/engine/stream_count.h"

#include <algorithm>
#include <string>
#include <thread>

#include "common/backends/backend_registry.h"

namespace gpuspeech {

size_t device_stream_count(const std::vector<int64_t>& free_bytes) {
  size_t total = 0;
  for (int64_t free : free_bytes) {
    if (free <= kDeviceMemoryReserveBytes) continue;
    const auto fits = static_cast<size_t>((free - kDeviceMemoryReserveBytes) / kDeviceStreamBytes);
    total += std::min(fits, kDefaultStreamsPerDevice);
  }
  return total;
}

size_t default_stream_count(const Recognizer& first, const RecognizerConfig& asked, size_t jobs) {
  size_t n = 0;
  if (std::string(first.search_backend()) == "cuda") {
    std::vector<int64_t> free;
    if (asked.device_id < 0) {
      for (int d = 0; d < backend_device_count("cuda"); ++d)
        free.push_back(backend_device_memory("cuda", d).free);
    } else {
      free.push_back(backend_device_memory("cuda", first.config().device_id).free);
    }
    n = device_stream_count(free);
  } else {
    n = std::thread::hardware_concurrency();
  }
  return std::clamp<size_t>(n, 1, std::max<size_t>(jobs, 1));
}

}  // namespace gpuspeech
