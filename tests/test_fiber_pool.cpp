// Fibers on a few worker threads (common/engine/fiber_pool.h): every task
// runs once, errors come back per task, a fiber keeps its thread, and the
// hand-off the CUDA batcher makes (a request to another thread, a suspend,
// a resume from that thread, possibly before the suspend) loses nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/engine/fiber_pool.h"

namespace gpuspeech {
namespace {

TEST(FiberPool, RunsEveryTaskOnceAndReportsErrorsPerTask) {
  constexpr int kTasks = 37;
  std::vector<std::atomic<int>> runs(kTasks);
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < kTasks; ++k)
    tasks.push_back([&runs, k] {
      ++runs[k];
      if (k % 5 == 3) throw std::runtime_error("task " + std::to_string(k));
    });
  const std::vector<std::exception_ptr> errors = run_fibers(std::move(tasks), 3);
  ASSERT_EQ(errors.size(), static_cast<size_t>(kTasks));
  for (int k = 0; k < kTasks; ++k) {
    EXPECT_EQ(runs[k].load(), 1) << k;
    if (k % 5 == 3) {
      ASSERT_TRUE(errors[k]) << k;
      try {
        std::rethrow_exception(errors[k]);
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "task " + std::to_string(k));
      }
    } else {
      EXPECT_FALSE(errors[k]) << k;
    }
  }
}

TEST(FiberPool, OnlyFibersHaveAFiberToSuspend) {
  EXPECT_EQ(current_fiber(), nullptr);
  EXPECT_THROW(suspend_fiber(), std::logic_error);
  EXPECT_THROW(yield_fiber(), std::logic_error);
  std::vector<Fiber*> seen(4, nullptr);
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < 4; ++k) tasks.push_back([&seen, k] { seen[k] = current_fiber(); });
  run_fibers(std::move(tasks), 2);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NE(seen[k], nullptr);
    for (int j = 0; j < k; ++j) EXPECT_NE(seen[j], seen[k]);
  }
}

// A fiber that yields lets the others of its thread run in turn, and goes
// on at once when it is alone.
TEST(FiberPool, YieldingTakesTurns) {
  std::vector<int> order;  // one worker: no lock needed
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < 3; ++k)
    tasks.push_back([&order, k] {
      for (int i = 0; i < 3; ++i) {
        order.push_back(k);
        yield_fiber();
      }
    });
  tasks.push_back([&order] {
    order.push_back(9);
  });
  const std::vector<std::exception_ptr> errors = run_fibers(std::move(tasks), 1);
  for (const std::exception_ptr& e : errors) EXPECT_FALSE(e);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 9, 0, 1, 2, 0, 1, 2}));
}

// The batcher's shape: a fiber hands a request to a server thread and
// suspends; the server answers into the request (on the fiber's stack) and
// resumes the fiber, sometimes at once (before the fiber has suspended),
// sometimes after others.
TEST(FiberPool, HandOffsToAnotherThreadLoseNothing) {
  struct Request {
    uint64_t question = 0;
    uint64_t answer = 0;
    Fiber* fiber = nullptr;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Request*> queue;
  bool stop = false;
  std::thread server([&] {
    std::mt19937 rng(7);
    std::vector<Request*> held;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex);
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty() && stop) break;
      while (!queue.empty()) {
        held.push_back(queue.front());
        queue.pop_front();
      }
      lock.unlock();
      // Answer in a shuffled order, some at once and some later.
      std::shuffle(held.begin(), held.end(), rng);
      const size_t answer_now = rng() % (held.size() + 1);
      for (size_t i = 0; i < answer_now; ++i) {
        Request* r = held.back();
        held.pop_back();
        r->answer = r->question * 3 + 1;
        resume_fiber(r->fiber);  // r may be gone from here on
      }
      if (!held.empty()) {
        lock.lock();
        if (queue.empty()) {  // nothing new: answer the rest now
          lock.unlock();
          for (Request* r : held) {
            r->answer = r->question * 3 + 1;
            resume_fiber(r->fiber);
          }
          held.clear();
        }
      }
    }
  });
  constexpr int kFibers = 64, kRounds = 200;
  std::vector<int> wrong(kFibers, 0), moved(kFibers, 0);
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < kFibers; ++k)
    tasks.push_back([&, k] {
      const std::thread::id home = std::this_thread::get_id();
      for (int i = 0; i < kRounds; ++i) {
        Request r;
        r.question = static_cast<uint64_t>(k) * 1000003u + static_cast<uint64_t>(i);
        r.fiber = current_fiber();
        {
          std::lock_guard<std::mutex> lock(mutex);
          queue.push_back(&r);
          cv.notify_one();
        }
        suspend_fiber();
        if (r.answer != r.question * 3 + 1) ++wrong[k];
        if (std::this_thread::get_id() != home) ++moved[k];
      }
    });
  const std::vector<std::exception_ptr> errors = run_fibers(std::move(tasks), 4, 256 << 10);
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
    cv.notify_one();
  }
  server.join();
  for (int k = 0; k < kFibers; ++k) {
    EXPECT_FALSE(errors[k]) << k;
    EXPECT_EQ(wrong[k], 0) << "fiber " << k << " read a wrong answer";
    EXPECT_EQ(moved[k], 0) << "fiber " << k << " changed threads";
  }
}

// Work run off a fiber frees its worker: with one worker thread, fiber A's
// off-fiber work waits for fiber B to have run, which it can only do if A's
// thread is B's to run on (else the wait gives up after 20 s and the test
// fails). What the work throws comes back to the fiber; on a plain thread
// the work runs on that thread.
TEST(FiberPool, WorkOffTheFiberLetsItsWorkerRunOthers) {
  std::mutex mutex;
  std::condition_variable cv;
  bool b_ran = false, a_saw_b = false, a_caught = false;
  std::thread::id worker, work_thread;
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] {
    worker = std::this_thread::get_id();
    run_off_fiber([&] {
      work_thread = std::this_thread::get_id();
      std::unique_lock<std::mutex> lock(mutex);
      a_saw_b = cv.wait_for(lock, std::chrono::seconds(20), [&] { return b_ran; });
    });
    EXPECT_EQ(std::this_thread::get_id(), worker);  // back on its own thread
    try {
      run_off_fiber([] { throw std::runtime_error("off the fiber"); });
    } catch (const std::runtime_error& e) {
      a_caught = std::string(e.what()) == "off the fiber";
    }
  });
  tasks.push_back([&] {
    std::lock_guard<std::mutex> lock(mutex);
    b_ran = true;
    cv.notify_all();
  });
  const std::vector<std::exception_ptr> errors = run_fibers(std::move(tasks), 1);
  EXPECT_FALSE(errors[0]);
  EXPECT_FALSE(errors[1]);
  EXPECT_TRUE(a_saw_b);
  EXPECT_TRUE(a_caught);
  EXPECT_NE(work_thread, worker);

  std::thread::id here;
  run_off_fiber([&] { here = std::this_thread::get_id(); });
  EXPECT_EQ(here, std::this_thread::get_id());
}

}  // namespace
}  // namespace gpuspeech
