// A stream thread's nice value (common/engine/thread_priority.h): set on
// the calling thread alone, never lowered, range checked.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "common/engine/thread_priority.h"

namespace gpuspeech {
namespace {

TEST(ThreadPriority, RaisesTheCallingThreadsNiceValueAlone) {
  const int mine = thread_nice();
  if (mine >= 19) GTEST_SKIP() << "this test already runs at nice 19";
  const int wanted = mine + 3 > 19 ? 19 : mine + 3;
  int seen = -100;
  std::string error = "not run";
  std::thread other([&] {
    error = set_thread_nice(wanted);
    seen = thread_nice();
  });
  other.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(seen, wanted);
  EXPECT_EQ(thread_nice(), mine) << "another thread's nice value moved this one's";
}

TEST(ThreadPriority, NeverLowersAndChecksTheRange) {
  std::string same, lower, below, above;
  int after = -100, wanted = -100;
  std::thread other([&] {
    const int start = thread_nice();
    wanted = start < 19 ? start + 1 : 19;
    same = set_thread_nice(start);
    ASSERT_EQ(set_thread_nice(wanted), "");
    lower = wanted > 0 ? set_thread_nice(wanted - 1) : "refused";
    below = set_thread_nice(-1);
    above = set_thread_nice(20);
    after = thread_nice();
  });
  other.join();
  EXPECT_EQ(same, "");
  EXPECT_NE(lower.find("privileges"), std::string::npos) << lower;
  EXPECT_NE(below.find("0 to 19"), std::string::npos) << below;
  EXPECT_NE(above.find("0 to 19"), std::string::npos) << above;
  EXPECT_EQ(after, wanted) << "a refused call changed the thread's nice value";
}

}  // namespace
}  // namespace gpuspeech
