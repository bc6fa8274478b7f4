// What only the CUDA backend has: its two power-spectrum paths (the fused
// real-FFT kernel for 256..2048 points, cuFFT for every other size) against
// the CPU reference, FFT sizes test_backend_compare.cpp does not cover, and
// its error messages. On a machine without a CUDA device the device checks
// skip (fail if GPUSPEECH_REQUIRE_BACKENDS names cuda) and only the
// no-device message is checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/backends/backend_compare.h"
#include "common/backends/backend_registry.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

#ifdef GPUSPEECH_HAVE_CUDA

bool cuda_required() {
  for (const std::string& r : testing::required_backends())
    if (r == "cuda") return true;
  return false;
}

// The device backend, or a skip (a failure when cuda is required) with the
// reason the device is not usable.
BackendPtr open_cuda_or_skip(std::string* why) {
  try {
    return make_cuda_backend(0);
  } catch (const BackendError& e) {
    *why = e.what();
    return nullptr;
  }
}

#define CUDA_OR_SKIP(backend)                                                \
  std::string why_;                                                          \
  BackendPtr backend = open_cuda_or_skip(&why_);                             \
  if (!backend) {                                                            \
    if (cuda_required()) FAIL() << "cuda required but not usable: " << why_; \
    GTEST_SKIP() << "no usable CUDA device: " << why_;                       \
  }

const Tolerance kRel = Tolerance::relative(1e-4);

TEST(CudaBackend, UnusableDeviceSaysWhy) {
  std::string why;
  BackendPtr b = open_cuda_or_skip(&why);
  if (!b) {
    // No device here: the message must say so, and auto must not pick cuda.
    EXPECT_NE(why.find("CUDA"), std::string::npos) << why;
    std::string chose;
    BackendPtr a = open_backend("auto", 0, &chose);
    EXPECT_STRNE(a->name(), "cuda");
    EXPECT_NE(chose.find("cuda: "), std::string::npos) << chose;
    return;
  }
  try {
    make_cuda_backend(4096);
    FAIL() << "device-id 4096 accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("device-id 4096 out of range"), std::string::npos)
        << e.what();
  }
}

// Each power-spectrum path against the CPU on fresh random frames, with
// row counts that leave the fused kernel's last block part full.
void check_power_paths(const char* fft_env) {
  if (fft_env) setenv("GPUSPEECH_CUDA_FFT", fft_env, 1);
  else unsetenv("GPUSPEECH_CUDA_FFT");
  CUDA_OR_SKIP(cuda);
  BackendPtr cpu = make_cpu_backend();
  BackendComparison cmp(*cuda, *cpu);
  for (int fft : {8, 64, 128, 256, 512, 1024, 2048, 4096})
    for (int64_t rows : {int64_t(1), int64_t(17), int64_t(2053)})
      for (bool magnitude : {false, true}) {
        const Comparison c = cmp.power_spectrum(rows, fft, magnitude, kRel);
        EXPECT_TRUE(c.ok()) << c.report();
      }
}

TEST(CudaBackend, FusedPowerSpectrumMatchesCpu) { check_power_paths(nullptr); }
TEST(CudaBackend, CufftPowerSpectrumMatchesCpu) { check_power_paths("cufft"); }

TEST(CudaBackend, LongFramesUseFewerWarpsPerBlock) {
  // 4800-sample frames (100 ms at 48 kHz) leave room for one warp a block.
  CUDA_OR_SKIP(cuda);
  BackendPtr cpu = make_cpu_backend();
  BackendComparison cmp(*cuda, *cpu);
  FramingSpec s;
  s.num_utts = 2;
  s.valid_length = 48000;
  s.utt_stride = 48100;
  s.frame_length = 4800;
  s.frame_shift = 480;
  s.fft_size = 8192;
  s.frames_per_utt = 95;
  s.preemphasis = 0.97f;
  s.preemphasis_per_frame = true;
  s.remove_dc = true;
  const Comparison c = cmp.frame_signal(s, true, Tolerance::relative(1e-4, 0.05));
  EXPECT_TRUE(c.ok()) << c.report();
}

TEST(CudaBackend, ForeignAndShortBuffersAreErrors) {
  CUDA_OR_SKIP(cuda);
  BackendPtr cpu = make_cpu_backend();
  BufferPtr mine = cuda->alloc(16);
  BufferPtr theirs = cpu->alloc(16);
  float host[16] = {};
  EXPECT_THROW(cuda->upload(*theirs, host, 16), BackendError);
  EXPECT_THROW(cuda->upload(*mine, host, 16, 1), BackendError);
  EXPECT_THROW(cuda->download(*mine, host, 17), BackendError);
  EXPECT_THROW(cuda->power_spectrum(*mine, 1, 48, false, *mine), BackendError);
  EXPECT_THROW(cuda->gemm_nt(*mine, 2, 8, *mine, 4, *mine, 0, 9), BackendError);
}

#else

TEST(CudaBackend, NotCompiledInSaysSo) {
  try {
    open_backend("cuda");
    FAIL() << "cuda opened in a build without CUDA";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA support"), std::string::npos) << e.what();
  }
}

#endif

}  // namespace
}  // namespace gpuspeech
