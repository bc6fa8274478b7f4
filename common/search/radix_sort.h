// Sorting (key, index) pairs by key with a least-significant-digit radix
// sort.
//
// Why not std::sort: word-end rescoring (token_passing.cpp) puts a frame's
// few hundred events in a canonical order every frame, by 64-bit keys in
// no particular order; a comparison sort then mispredicts about every
// other branch, and on the GPU machine's host that sort was a large part
// of the rescorer's time, which the device waits for.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpuspeech {

using KeyIndex = std::pair<uint64_t, uint32_t>;

// Sorts `items` by key (.first), stable: pairs with equal keys keep their
// order, so for indices that increase through `items` the result equals
// std::sort's on the pairs. Byte by byte from the least significant,
// skipping bytes in which every key agrees. `scratch` is working space
// (resized as needed, kept by the caller between calls).
void radix_sort_by_key(std::vector<KeyIndex>& items, std::vector<KeyIndex>& scratch);

}  // namespace gpuspeech
