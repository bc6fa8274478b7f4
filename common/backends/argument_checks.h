// Argument rules that every backend applies to an operation before it
// touches a buffer, written once so that the backends accept and refuse
// the same calls with the same words (tests/test_gaussian_scoring_devices.cpp
// checks each backend refuses them).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "common/backends/backend.h"

namespace gpuspeech {

// Backend::floor_densities: frames >= 0, rows_per_stream and streams >= 1,
// a finite floor > 0. `who` begins the message ("cuda", "opencl", ...).
inline void check_floor_densities_args(const char* who, int64_t frames, int rows_per_stream,
                                       int streams, float floor) {
  if (frames >= 0 && rows_per_stream >= 1 && streams >= 1 && std::isfinite(floor) &&
      floor > 0.0f)
    return;
  throw BackendError(std::string(who) +
                     ": floor_densities: need frames >= 0, rows_per_stream and streams >= 1 "
                     "and a finite floor > 0 (got " +
                     std::to_string(frames) + ", " + std::to_string(rows_per_stream) + ", " +
                     std::to_string(streams) + ", " + std::to_string(floor) + ")");
}

}  // namespace gpuspeech
