// The hash of an LM history's words (lm_rescorer.h) that picks its slot
// among a state's K tokens (slot = hash % K), written once for the host's
// LmRescorer and for word-end rescoring on the device (docs/search-lanes-
// plan.md, S8): the slots, and so the search, must not depend on where the
// hash was taken.
#pragma once

#include <stdint.h>

#include "common/host_device.h"

namespace gpuspeech {

// FNV-1a over the ids' bytes (oldest word first, little-endian), then a
// murmur-style finaliser so that every bit of the result depends on every
// word (K is small).
GPUSPEECH_HOST_DEVICE uint32_t history_hash_of(const int* words, int n) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(words[i]);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xFFu;
      h *= 16777619u;
    }
  }
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

}  // namespace gpuspeech
