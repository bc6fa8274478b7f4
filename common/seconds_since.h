// The stage timers (RecognizerTimings, SearchStats, the tools' reports):
// elapsed wall time, and the calling thread's CPU time beside it (with
// hundreds of stream threads on a few cores, wall time overstates what a
// stage costs the host; its thread's CPU time does not).
#pragma once

#include <time.h>

#include <chrono>

namespace gpuspeech {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds the calling thread has used (user and system), for
// differences: thread_cpu_seconds() - c0.
inline double thread_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace gpuspeech
