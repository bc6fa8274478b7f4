// Placement of streams on devices (common/engine/device_placement.h), on
// simulated device lists: least-loaded first, lowest index among equals,
// leases give their device back, and a Recognizer asked for device -1 on
// the CPU runs (device 0) and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/engine/device_placement.h"

namespace gpuspeech {
namespace {

TEST(DevicePlacement, FillsTheLeastLoadedDeviceFirst) {
  DevicePlacement p(3);
  std::vector<int> got;
  for (int i = 0; i < 7; ++i) got.push_back(p.place());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{3, 2, 2}));
  p.release(1);
  p.release(1);
  EXPECT_EQ(p.place(), 1);  // now the emptiest
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{3, 1, 2}));
}

TEST(DevicePlacement, OneDeviceTakesEveryStream) {
  DevicePlacement p(1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.place(), 0);
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{5}));
}

TEST(DevicePlacement, RejectsNoDevicesAndUnbalancedReleases) {
  EXPECT_THROW(DevicePlacement(0), std::invalid_argument);
  DevicePlacement p(2);
  EXPECT_THROW(p.release(0), std::invalid_argument);  // nothing placed
  EXPECT_THROW(p.release(2), std::invalid_argument);  // no such device
  EXPECT_THROW(p.release(-1), std::invalid_argument);
}

// Random joins and leaves: every placement lands on a device with the
// fewest streams at that moment, and the counts always equal the leases.
TEST(DevicePlacement, RandomJoinsAndLeavesStayLeastLoaded) {
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (int devices : {1, 2, 3, 8}) {
    DevicePlacement p(devices);
    std::vector<DeviceLease> leases;
    for (int step = 0; step < 2000; ++step) {
      if (leases.empty() || rng() % 3 != 0) {
        const std::vector<int> before = p.streams_per_device();
        leases.emplace_back(p);
        const int d = leases.back().device();
        ASSERT_EQ(before[d], *std::min_element(before.begin(), before.end()))
            << "seed " << seed << " step " << step;
      } else {
        leases.erase(leases.begin() + static_cast<long>(rng() % leases.size()));
      }
      std::vector<int> count(static_cast<size_t>(devices), 0);
      for (const DeviceLease& l : leases) ++count[static_cast<size_t>(l.device())];
      ASSERT_EQ(p.streams_per_device(), count) << "seed " << seed << " step " << step;
    }
    leases.clear();
    EXPECT_EQ(p.streams_per_device(), std::vector<int>(static_cast<size_t>(devices), 0));
  }
}

TEST(DeviceLease, MovesAndReleasesOnce) {
  DevicePlacement p(2);
  DeviceLease a(p);
  EXPECT_TRUE(a.held());
  DeviceLease b(std::move(a));
  EXPECT_FALSE(a.held());
  EXPECT_EQ(b.device(), 0);
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{1, 0}));
  DeviceLease c(p);
  c = std::move(b);  // c's own device (1) goes back first
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{1, 0}));
  c.reset();
  EXPECT_EQ(p.streams_per_device(), (std::vector<int>{0, 0}));
}

TEST(DevicePlacement, ProcessPlacementIsOnePerBackend) {
  DevicePlacement& a = process_device_placement("test-backend", 4);
  EXPECT_EQ(&a, &process_device_placement("test-backend", 4));
  EXPECT_NE(&a, &process_device_placement("other-test-backend", 4));
  EXPECT_THROW(process_device_placement("test-backend", 3), std::logic_error);
}

}  // namespace
}  // namespace gpuspeech
