// The tools' default stream count (common/engine/stream_count.h): the
// device arithmetic on simulated free memory (reserve, per-stream bytes,
// the cap per device, unknown devices, several devices). The defaults of
// real recognizers are in test_resource_sharing.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/engine/stream_count.h"

namespace gpuspeech {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(DeviceStreamCount, FreeMemoryLessTheReserveAtABudgetAStream) {
  EXPECT_EQ(device_stream_count({kDeviceMemoryReserveBytes + 10 * kDeviceStreamBytes}), 10u);
  // A part of a stream's budget is not a stream.
  EXPECT_EQ(device_stream_count({kDeviceMemoryReserveBytes + 10 * kDeviceStreamBytes - 1}), 9u);
  // 8 GiB free: (8 - 1) GiB / 64 MiB.
  EXPECT_EQ(device_stream_count({8 * kGiB}), static_cast<size_t>((7 * kGiB) / (64 * kMiB)));
}

TEST(DeviceStreamCount, NoRoomOrUnknownGivesNone) {
  EXPECT_EQ(device_stream_count({}), 0u);
  EXPECT_EQ(device_stream_count({-1}), 0u);
  EXPECT_EQ(device_stream_count({0}), 0u);
  EXPECT_EQ(device_stream_count({kDeviceMemoryReserveBytes}), 0u);
  EXPECT_EQ(device_stream_count({kDeviceMemoryReserveBytes + kDeviceStreamBytes - 1}), 0u);
}

TEST(DeviceStreamCount, CappedPerDeviceAndSummedOverDevices) {
  EXPECT_EQ(device_stream_count({80 * kGiB}), kDefaultStreamsPerDevice);
  EXPECT_EQ(device_stream_count({80 * kGiB, 80 * kGiB}), 2 * kDefaultStreamsPerDevice);
  // A full device and an unknown one add nothing to a roomy one.
  EXPECT_EQ(device_stream_count({80 * kGiB, 0, -1}), kDefaultStreamsPerDevice);
  EXPECT_EQ(device_stream_count({80 * kGiB, kDeviceMemoryReserveBytes + 3 * kDeviceStreamBytes}),
            kDefaultStreamsPerDevice + 3);
}

}  // namespace
}  // namespace gpuspeech
