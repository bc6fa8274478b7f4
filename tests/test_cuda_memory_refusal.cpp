// A CUDA stream refused for lack of device memory (issue 14): the refusal
// says why, the streams already running go on, and a stream made once the
// memory is back decodes as before. The test takes all of the device's free
// memory, so meson runs it alone (is_parallel: false); without a CUDA
// device it skips (fails where GPUSPEECH_REQUIRE_BACKENDS names cuda).
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef GPUSPEECH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "common/engine/recognizer.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

using testing::BackendForTest;

// A stream that cannot get device memory is refused with an error that
// says so; the streams already running go on decoding what they decoded
// before, and once memory is back a new stream is made and agrees.
TEST(CudaMemoryRefusal, StreamRefusedForLackOfMemoryLeavesOthersDecoding) {
  const BackendForTest cuda = testing::backend_for_test("cuda");
  if (cuda.backend == nullptr) {
    if (cuda.required) FAIL() << cuda.problem;
    GTEST_SKIP() << cuda.problem;
  }
#ifdef GPUSPEECH_HAVE_CUDA
  const std::string root = testing::model_dir() + "/en-us";
  const std::string gram = testing::audio_dir() + "/goforward.gram";
  const std::string raw = testing::audio_dir() + "/goforward.raw";
  if (!std::ifstream(gram).good() || !std::ifstream(root + "/en-us/mdef").good())
    GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  RecognizerConfig c = RecognizerConfig::en_us_defaults(root);
  c.grammar_kind = GrammarKind::kJsgf;
  c.grammar = gram;
  c.cache_dir = "-";
  c.scoring_backend = "cuda";
  c.search_backend = "cuda";
  const AudioData audio = read_raw_s16le_file(raw, 16000);
  const int64_t n = static_cast<int64_t>(audio.samples.size());
  Recognizer running(c);
  const Hypothesis want = running.recognize(audio.samples.data(), n).best;
  ASSERT_FALSE(want.words.empty());

  // Take the device's free memory, in halving chunks down to 1 MiB.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<void*> taken;
  for (size_t chunk = size_t{1} << 34; chunk >= (size_t{1} << 20);) {
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) == cudaSuccess)
      taken.push_back(p);
    else
      chunk /= 2;
  }
  (void)cudaGetLastError();  // the failed attempts' error is expected
  std::string refusal;
  try {
    Recognizer refused(c);
    refused.recognize(audio.samples.data(), n);
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  // The refusal leaves no error behind for the thread's next launch check
  // to take as its own.
  const cudaError_t left = cudaPeekAtLastError();
  EXPECT_EQ(left, cudaSuccess) << cudaGetErrorName(left)
                               << " left behind by the refused stream (refusal: " << refusal << ")";
  (void)cudaGetLastError();
  // What the running stream needs is already in its hands.
  const Hypothesis again = running.recognize(audio.samples.data(), n).best;
  for (void* p : taken) cudaFree(p);

  EXPECT_FALSE(refusal.empty()) << "a stream was made and ran with no device memory free";
  EXPECT_TRUE(refusal.find("memory") != std::string::npos ||
              refusal.find("ALLOC") != std::string::npos)
      << "the refusal does not say it lacked memory: " << refusal;
  EXPECT_EQ(again.text(), want.text());
  EXPECT_EQ(again.cost, want.cost);
  Recognizer later(c);
  EXPECT_EQ(later.recognize(audio.samples.data(), n).best.text(), want.text());
#endif
}

}  // namespace
}  // namespace gpuspeech
