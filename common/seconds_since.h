// Elapsed wall time for the stage timers (RecognizerTimings, SearchStats,
// the tools' reports): seconds on the steady clock since `t0`.
#pragma once

#include <chrono>

namespace gpuspeech {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace gpuspeech
