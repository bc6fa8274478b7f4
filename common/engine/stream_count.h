// How many streams the tools decode with when not told (`--streams`):
// enough to keep what does the search busy. On the CPU that is a stream per
// core. On a CUDA device it is what the batched search needs to fill the
// device, as many as its free memory holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/engine/recognizer.h"

namespace gpuspeech {

// Streams per device the batched search gets by default. On the H100 with
// LibriVox, 256 streams decoded 280x real time and 64 streams 264x; 512
// streams were slower than 256 in the one run made (docs/benchmarks.md).
constexpr size_t kDefaultStreamsPerDevice = 256;
// Device memory counted per stream: 54 MiB measured after decoding LibriVox
// at max-active 30 000 (state tables, record staging, the scorer's blocks),
// rounded up to issue 14's budget of 64 MB.
constexpr int64_t kDeviceStreamBytes = int64_t{64} << 20;
// Device memory left free on each device: the driver's own, the scorer's
// library workspaces, and room for other processes.
constexpr int64_t kDeviceMemoryReserveBytes = int64_t{1} << 30;

// The device case: for each device, its free bytes (-1: unknown, counted
// as room for none) less the reserve, at kDeviceStreamBytes a stream and
// at most kDefaultStreamsPerDevice; summed over the devices. 0 when no
// device has room.
size_t device_stream_count(const std::vector<int64_t>& free_bytes);

// The default number of streams for `jobs` files, given the first stream
// made with `asked` (its device_id: one device, or -1 for every device of
// the backend). With the CUDA search: device_stream_count() over the
// streams' devices. Otherwise: one per core. Always between 1 and
// max(jobs, 1).
size_t default_stream_count(const Recognizer& first, const RecognizerConfig& asked, size_t jobs);

}  // namespace gpuspeech
