// Many streams' blocking loops on a few threads (issue 14): each task runs
// as a fiber (its own stack, switched in user space) on one of a few
// worker threads. A fiber that must wait for the device (the CUDA
// batcher's run(), common/search/cuda_round_batcher.h) suspends itself
// and its worker runs another fiber; whoever finishes the wait resumes it.
//
// Why: with a thread per stream, every round of every stream is an
// operating-system sleep and wake-up, and at 256 streams on 16 cores the
// woken threads queue for cores (docs/benchmarks.md, "Wake-ups and
// priorities"). Kaldi's batched pipeline has a few worker threads serve
// many channels for the same reason; fibers give that shape without
// turning each stream's frame loop inside out.
//
// A fiber stays on its worker thread for its whole life, so per-thread
// state (the CUDA runtime's current device) is the worker's: every fiber
// of a pool should use the same device. A fiber must not suspend while it
// holds a lock that another fiber of its worker may take.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace gpuspeech {

class Fiber;

// Runs every task as a fiber, task k on worker k % threads (threads >= 1),
// and returns when all have finished: for each task, the exception it
// threw, or null. `stack_bytes` is each fiber's stack (a guard page below
// it turns an overflow into a crash, not a corruption).
std::vector<std::exception_ptr> run_fibers(std::vector<std::function<void()>> tasks, int threads,
                                           size_t stack_bytes = size_t{4} << 20);

// The fiber running on the calling thread, or null on a plain thread.
Fiber* current_fiber();

// Gives the calling fiber's thread to its worker's other fibers until
// resume_fiber() is called for it. A resume that comes first (from another
// thread, between the caller's hand-off and this call) is kept: the fiber
// then goes on at its worker's next turn.
void suspend_fiber();

// Lets the worker's other ready fibers run, then goes on (at once if
// there are none): for a fiber that polls for something, such as a CUDA
// stream's end, instead of blocking its thread.
void yield_fiber();

// Makes `f` ready again; callable from any thread. After it returns the
// caller must not touch what `f`'s stack holds: the fiber may already run.
void resume_fiber(Fiber* f);

// Runs `work` and returns when it has, rethrowing what it threw. On a
// fiber, `work` runs on one of a few shared helper threads (as many as the
// machine has cores, started at the first call) while the fiber gives its
// worker thread to the worker's other fibers; on a plain thread it runs
// here. For host work long enough that the worker's other fibers, each a
// stream waiting to hand the device its next round, would otherwise stall
// behind it: the word-lattice pass at an utterance's end takes tens of
// milliseconds, hundreds of rounds' time (docs/benchmarks.md).
void run_off_fiber(const std::function<void()>& work);

}  // namespace gpuspeech
