#include "common/engine/fiber_pool.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define GPUSPEECH_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUSPEECH_FIBER_ASAN 1
#endif
#endif
#ifdef GPUSPEECH_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace gpuspeech {

namespace {

struct Worker {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Fiber*> ready;  // under mutex
  ucontext_t home;           // the worker's own context, between fibers
  // The worker thread's stack, for AddressSanitizer's switch annotations
  // (learnt when its first fiber starts).
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
};

}  // namespace

class Fiber {
 public:
  ucontext_t context;
  Worker* worker = nullptr;
  std::function<void()> task;
  std::exception_ptr error;
  bool done = false;
  void* mapping = nullptr;  // guard page + stack
  size_t mapping_bytes = 0;
  void* stack = nullptr;
  size_t stack_bytes = 0;
  void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
};

namespace {

thread_local Fiber* t_current = nullptr;

// Around every switch AddressSanitizer must be told which stack comes
// next, or it takes the other stack's frames for overflows.
void start_switch(void** fake_stack_save, const void* bottom, size_t size) {
#ifdef GPUSPEECH_FIBER_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
#ifdef GPUSPEECH_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

void fiber_entry() {
  Fiber* f = t_current;
  Worker* w = f->worker;
  finish_switch(nullptr, &w->stack_bottom, &w->stack_size);
  try {
    f->task();
  } catch (...) {
    f->error = std::current_exception();
  }
  f->task = nullptr;  // its captures die on the fiber's own stack's watch
  f->done = true;
  start_switch(nullptr, w->stack_bottom, w->stack_size);  // null: this fiber ends
  setcontext(&w->home);
}

void make_stack(Fiber& f, size_t stack_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = (stack_bytes + page - 1) / page * page;
  void* m = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("fibers: cannot map a stack of " + std::to_string(bytes) + " bytes");
  mprotect(m, page, PROT_NONE);  // the guard: stacks grow down into it
  f.mapping = m;
  f.mapping_bytes = bytes + page;
  f.stack = static_cast<char*>(m) + page;
  f.stack_bytes = bytes;
}

// Apart from run_fibers, whose locals getcontext (which "returns twice"
// in the compiler's eyes) would otherwise put at risk.
__attribute__((noinline)) void prepare_context(Fiber& f) {
  if (getcontext(&f.context) != 0) throw std::runtime_error("fibers: getcontext failed");
  f.context.uc_stack.ss_sp = f.stack;
  f.context.uc_stack.ss_size = f.stack_bytes;
  f.context.uc_link = nullptr;  // fiber_entry leaves by setcontext
  makecontext(&f.context, fiber_entry, 0);
}

void work(Worker& w, std::vector<Fiber*> mine) {
  size_t unfinished = mine.size();
  while (unfinished > 0) {
    Fiber* f = nullptr;
    {
      std::unique_lock<std::mutex> lock(w.mutex);
      w.cv.wait(lock, [&] { return !w.ready.empty(); });
      f = w.ready.front();
      w.ready.pop_front();
    }
    t_current = f;
    void* fake = nullptr;
    start_switch(&fake, f->stack, f->stack_bytes);
    swapcontext(&w.home, &f->context);
    finish_switch(fake, nullptr, nullptr);
    t_current = nullptr;
    if (f->done) {
      munmap(f->mapping, f->mapping_bytes);
      f->mapping = nullptr;
      --unfinished;
    }
  }
}

// run_off_fiber's helper threads and their queue of jobs.
class HelperThreads {
 public:
  struct Job {
    const std::function<void()>* work = nullptr;
    Fiber* fiber = nullptr;
    std::exception_ptr error;
  };
  void submit(Job* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (threads_.empty()) {
      const unsigned n = std::max(1u, std::thread::hardware_concurrency());
      for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { serve(); });
    }
    jobs_.push_back(job);
    cv_.notify_one();
  }
  ~HelperThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

 private:
  void serve() {
    for (;;) {
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = jobs_.front();
        jobs_.pop_front();
      }
      try {
        (*job->work)();
      } catch (...) {
        job->error = std::current_exception();
      }
      // The job lives on the fiber's stack: not touched after the resume.
      Fiber* f = job->fiber;
      resume_fiber(f);
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job*> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

HelperThreads& helper_threads() {
  static HelperThreads helpers;
  return helpers;
}

}  // namespace

Fiber* current_fiber() { return t_current; }

void run_off_fiber(const std::function<void()>& work) {
  Fiber* f = t_current;
  if (f == nullptr) {
    work();
    return;
  }
  HelperThreads::Job job;
  job.work = &work;
  job.fiber = f;
  helper_threads().submit(&job);
  suspend_fiber();  // a resume that came first is kept (suspend_fiber)
  if (job.error) std::rethrow_exception(job.error);
}

void suspend_fiber() {
  Fiber* f = t_current;
  if (f == nullptr) throw std::logic_error("suspend_fiber: not on a fiber");
  Worker* w = f->worker;
  start_switch(&f->fake_stack, w->stack_bottom, w->stack_size);
  swapcontext(&f->context, &w->home);
  finish_switch(f->fake_stack, &w->stack_bottom, &w->stack_size);
}

void yield_fiber() {
  Fiber* f = t_current;
  if (f == nullptr) throw std::logic_error("yield_fiber: not on a fiber");
  resume_fiber(f);  // behind the fibers already ready
  suspend_fiber();
}

void resume_fiber(Fiber* f) {
  Worker* w = f->worker;
  // Notified under the lock: once it is let go the worker may run the
  // fiber to its end and the pool may be gone.
  std::lock_guard<std::mutex> lock(w->mutex);
  w->ready.push_back(f);
  w->cv.notify_one();
}

std::vector<std::exception_ptr> run_fibers(std::vector<std::function<void()>> tasks, int threads,
                                           size_t stack_bytes) {
  if (threads < 1) throw std::invalid_argument("run_fibers: threads must be at least 1");
  const size_t n = tasks.size();
  const size_t t = std::min(static_cast<size_t>(threads), std::max<size_t>(n, 1));
  std::vector<Fiber> fibers(n);
  std::vector<Worker> workers(t);
  std::vector<std::vector<Fiber*>> mine(t);
  struct Unmap {  // the stacks, if setting up fails half way
    std::vector<Fiber>& fibers;
    bool armed = true;
    ~Unmap() {
      if (armed)
        for (Fiber& f : fibers)
          if (f.mapping != nullptr) munmap(f.mapping, f.mapping_bytes);
    }
  } unmap{fibers};
  for (size_t k = 0; k < n; ++k) {
    Fiber& f = fibers[k];
    f.task = std::move(tasks[k]);
    f.worker = &workers[k % t];
    make_stack(f, stack_bytes);
    prepare_context(f);
    mine[k % t].push_back(&f);
    workers[k % t].ready.push_back(&f);
  }
  unmap.armed = false;  // each worker unmaps its fibers' stacks as they end
  std::vector<std::thread> pool;
  for (size_t w = 0; w < t; ++w) pool.emplace_back(work, std::ref(workers[w]), mine[w]);
  for (std::thread& th : pool) th.join();
  std::vector<std::exception_ptr> errors(n);
  for (size_t k = 0; k < n; ++k) errors[k] = fibers[k].error;
  return errors;
}

}  // namespace gpuspeech
