// gpuspeech-bench decode (tools/bench_decode.cpp): many streams decoding
// at once, in batch or fed at real time.
#pragma once

namespace gpuspeech {

// argv[1] is "decode"; returns the exit status (2 on bad usage, after a
// message; 1 if a stream failed).
int bench_decode(int argc, char** argv);

}  // namespace gpuspeech
