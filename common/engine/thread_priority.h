// A stream's thread at a lower scheduling priority than the rest of the
// process (`--stream-nice` of gpuspeech-transcribe and gpuspeech-bench).
//
// Why: with the batched CUDA search each stream's thread hands its round
// to the batcher's pipeline threads and sleeps until they see the round's
// flag (common/search/cuda_round_batcher.h). With hundreds of streams on a
// 16-core host the streams' threads crowd the cores, and a pipeline thread
// that waits for a core delays every lane it has in flight. A process
// without privileges cannot raise its pipeline threads above the normal
// priority, but it can lower its own stream threads, which gives the
// pipeline threads the same lead inside the process. Measured in
// docs/benchmarks.md ("Wake-ups and priorities").
//
// Linux only: elsewhere set_thread_nice reports that it cannot.
#pragma once

#include <string>

namespace gpuspeech {

// Sets the calling thread's nice value to `nice` (0 to 19). Returns an
// empty string, or why it could not (a value out of range, one below the
// thread's current value: raising a priority needs privileges, or the
// system's refusal). Other threads keep theirs.
std::string set_thread_nice(int nice);

// The calling thread's nice value (0 where it cannot be read).
int thread_nice();

}  // namespace gpuspeech
