// Cross-backend tests: every usable device backend (opencl, cuda) against
// the CPU reference, op by op on random inputs of awkward sizes, then the
// whole FeatureExtractor for every kind and flavour on random audio.
//
// A backend with no usable device is skipped, unless the comma-separated
// env GPUSPEECH_REQUIRE_BACKENDS names it: then the test fails, so that CI
// (which sets it to "opencl" with pocl installed) cannot pass by skipping.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/backends/backend_compare.h"
#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_options.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

// Tolerances (see the issue: float backends agree within 1e-4 relative;
// log-domain features within 1e-3 absolute).
const Tolerance kRel = Tolerance::relative(1e-4);
// Frames: the rounding error of DC removal scales with the raw samples
// (DC + signal, both summed over the frame in float by the CPU reference),
// not with each windowed output, so the floor is 5 % of the largest output.
const Tolerance kFrames = Tolerance::relative(1e-4, 0.05);
const Tolerance kElementwise = Tolerance::relative(1e-5);
const Tolerance kLogDomain = Tolerance::absolute(1e-3);

class DeviceVsCpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const testing::BackendForTest b = testing::backend_for_test(GetParam());
    if (!b.backend) {
      if (b.required) FAIL() << b.problem;
      GTEST_SKIP() << b.problem;
    }
    device_ = b.backend;
    cpu_ = make_cpu_backend();
    cmp_.reset(new BackendComparison(*device_, *cpu_));
    RecordProperty("seed", static_cast<int>(cmp_->seed() & 0x7fffffff));
  }

  BackendComparison& cmp() { return *cmp_; }
  Backend& device() { return *device_; }

  Backend* device_ = nullptr;
  BackendPtr cpu_;
  std::unique_ptr<BackendComparison> cmp_;
};

// GPUSPEECH_COMPARE_VERBOSE=1 prints every comparison, passing or not.
bool verbose() {
  const char* env = std::getenv("GPUSPEECH_COMPARE_VERBOSE");
  return env && *env && *env != '0';
}

#define EXPECT_AGREES(comparison)                              \
  do {                                                         \
    const Comparison c_ = (comparison);                        \
    EXPECT_TRUE(c_.ok()) << c_.report();                       \
    if (verbose() && c_.ok()) std::printf("%s\n", c_.report().c_str()); \
  } while (0)

// --- operations ------------------------------------------------------------

TEST_P(DeviceVsCpu, FrameSignalContinuousPreemphasis) {
  // Sphinx-like: continuous pre-emphasis, frames running past the end of
  // the signal (zero padded), a non-zero first frame offset.
  FramingSpec s;
  s.num_utts = 1;
  s.valid_length = 16001;
  s.utt_stride = s.valid_length;
  s.frame_length = 410;
  s.frame_shift = 160;
  s.fft_size = 512;
  s.first_frame_offset = 7;
  s.frames_per_utt = 102;  // the last frames start beyond valid_length
  s.preemphasis = 0.97f;
  EXPECT_AGREES(cmp().frame_signal(s, false, kFrames));
  s.remove_dc = true;
  EXPECT_AGREES(cmp().frame_signal(s, true, kFrames));
  EXPECT_AGREES(cmp().frame_energy(s, kRel));
}

TEST_P(DeviceVsCpu, FrameSignalPerFrameBatch) {
  // Kaldi-like: DC removal, per-frame pre-emphasis, energy, three
  // utterances laid out with a gap that must read as zeros.
  FramingSpec s;
  s.num_utts = 3;
  s.valid_length = 5003;
  s.utt_stride = 5120;
  s.frame_length = 400;
  s.frame_shift = 160;
  s.fft_size = 512;
  s.frames_per_utt = 29;
  s.preemphasis = 0.97f;
  s.preemphasis_per_frame = true;
  s.remove_dc = true;
  EXPECT_AGREES(cmp().frame_signal(s, true, kFrames));
  EXPECT_AGREES(cmp().frame_energy(s, kRel));
  // 8 kHz geometry, no pre-emphasis, a negative first offset.
  s.frame_length = 205;
  s.frame_shift = 80;
  s.fft_size = 256;
  s.first_frame_offset = -3;
  s.frames_per_utt = 61;
  s.preemphasis = 0.0f;
  EXPECT_AGREES(cmp().frame_signal(s, true, kFrames));
  EXPECT_AGREES(cmp().frame_energy(s, kRel));
  // A frame as long as the FFT.
  s.frame_length = 1024;
  s.fft_size = 1024;
  s.frames_per_utt = 5;
  s.remove_dc = false;
  EXPECT_AGREES(cmp().frame_signal(s, true, kFrames));
  EXPECT_AGREES(cmp().frame_energy(s, kRel));
}

TEST_P(DeviceVsCpu, PowerSpectrum) {
  for (int fft : {256, 512, 1024})
    for (int64_t rows : {int64_t(1), int64_t(37), int64_t(1001)})
      for (bool magnitude : {false, true}) {
        if (rows == 1001 && magnitude && fft != 512) continue;  // enough coverage
        EXPECT_AGREES(cmp().power_spectrum(rows, fft, magnitude, kRel));
      }
  // More rows than one clFFT call of the OpenCL backend takes (32768): the
  // batch goes through in chunks, the last one shorter.
  EXPECT_AGREES(cmp().power_spectrum(32768 + 37, 256, false, kRel));
}

// The fused spectral front end (framing, power spectrum, sparse filterbank,
// log or pow) against the CPU's row-by-row composition, on speech-like
// random audio, every framing mode and FFT size.
TEST_P(DeviceVsCpu, SpectralBands) {
  BandsSpec b;
  b.num_bands = 25;
  b.apply_op = true;
  b.op = UnaryOp::kLogOffset;
  b.op_param = 1e-4f;
  // Sphinx: continuous pre-emphasis, frames past the end of the signal, a
  // non-zero first offset, 102 rows (not a whole number of kernel blocks).
  FramingSpec s;
  s.num_utts = 1;
  s.valid_length = 16001;
  s.utt_stride = s.valid_length;
  s.frame_length = 410;
  s.frame_shift = 160;
  s.fft_size = 512;
  s.first_frame_offset = 7;
  s.frames_per_utt = 102;
  s.preemphasis = 0.97f;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));
  s.remove_dc = true;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));
  EXPECT_AGREES(cmp().spectral_bands(s, b, true, kRel));
  b.apply_op = false;  // raw band energies (the Sphinx noise stage's input)
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kRel));

  // Kaldi: per-frame pre-emphasis after DC removal, three utterances with
  // gaps of audio that must not leak in, 8 warps' worth of bands.
  s.num_utts = 3;
  s.valid_length = 5003;
  s.utt_stride = 5120;
  s.frame_length = 400;
  s.frames_per_utt = 29;
  s.first_frame_offset = 0;
  s.preemphasis_per_frame = true;
  b.apply_op = true;
  b.op = UnaryOp::kLogClamp;
  b.op_param = FLT_EPSILON;
  b.num_bands = 8 * 23;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));
  EXPECT_AGREES(cmp().spectral_bands(s, b, true, kRel));

  // 8 kHz: 256 points, no pre-emphasis, a negative first offset, magnitude.
  s.frame_length = 205;
  s.frame_shift = 80;
  s.fft_size = 256;
  s.first_frame_offset = -3;
  s.frames_per_utt = 61;
  s.preemphasis = 0.0f;
  b.num_bands = 31;
  b.magnitude = true;
  b.op = UnaryOp::kLogFloor;
  b.op_param = -10.0f;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));

  // PLP's cube root on 1024 points, a frame as long as the FFT.
  s.frame_length = 1024;
  s.fft_size = 1024;
  s.frame_shift = 300;
  s.frames_per_utt = 14;
  s.first_frame_offset = 0;
  s.preemphasis = 0.97f;
  s.remove_dc = false;
  b.magnitude = false;
  b.op = UnaryOp::kPow;
  b.op_param = 0.33f;
  b.num_bands = 21;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kRel));

  // 2048 points, continuous pre-emphasis with DC removal, energy.
  s.num_utts = 2;
  s.valid_length = 20011;
  s.utt_stride = 20480;
  s.frame_length = 1200;
  s.frame_shift = 441;
  s.fft_size = 2048;
  s.frames_per_utt = 44;
  s.preemphasis_per_frame = false;
  s.remove_dc = true;
  b.op = UnaryOp::kLogClamp;
  b.op_param = 1.0f;
  b.num_bands = 40;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));
  EXPECT_AGREES(cmp().spectral_bands(s, b, true, kRel));

  // 128 points: no fused kernel for this size (CUDA composes it).
  s.num_utts = 1;
  s.valid_length = 3001;
  s.utt_stride = 3001;
  s.frame_length = 100;
  s.frame_shift = 40;
  s.fft_size = 128;
  s.frames_per_utt = 73;
  b.num_bands = 12;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kLogDomain));
}

// spectral_bands with the linear map after the bands (MFCC's DCT, PLP's
// inverse DFT) that a device may apply on the chip: against the CPU's
// bands followed by its gemm_nt.
TEST_P(DeviceVsCpu, SpectralBandsProjected) {
  const Tolerance kProjectedLog = Tolerance::absolute(1e-2);
  BandsSpec b;
  b.apply_op = true;
  b.op = UnaryOp::kLogOffset;
  b.op_param = 1e-4f;
  // Sphinx: 40 bands to 13 cepstra, 16 kHz, continuous pre-emphasis.
  FramingSpec s;
  s.num_utts = 2;
  s.valid_length = 16001;
  s.utt_stride = 16400;
  s.frame_length = 410;
  s.frame_shift = 160;
  s.fft_size = 512;
  s.frames_per_utt = 101;
  s.preemphasis = 0.97f;
  b.num_bands = 40;
  b.projection_group = 40;
  b.projection_outputs = 13;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kProjectedLog));
  // The energy is still written when the bands are projected.
  EXPECT_AGREES(cmp().spectral_bands(s, b, true, kRel));
  // Three VTLN warps of 23 bands, each group mapped alone; more outputs
  // than a frame has threads.
  b.num_bands = 3 * 23;
  b.projection_group = 23;
  b.projection_outputs = 20;
  s.preemphasis_per_frame = true;
  s.remove_dc = true;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kProjectedLog));
  // PLP's cube root, 256 points; and 2048 points.
  b.op = UnaryOp::kPow;
  b.op_param = 0.33f;
  b.num_bands = 17;
  b.projection_group = 17;
  b.projection_outputs = 13;
  s.frame_length = 205;
  s.frame_shift = 80;
  s.fft_size = 256;
  s.frames_per_utt = 150;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kRel));
  s.frame_length = 1500;
  s.frame_shift = 441;
  s.fft_size = 2048;
  s.frames_per_utt = 30;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kRel));
  // More bands than the CUDA kernel takes: composed, then projected.
  b.op = UnaryOp::kLogClamp;
  b.op_param = FLT_EPSILON;
  b.num_bands = 8 * 23;
  b.projection_group = 23;
  b.projection_outputs = 13;
  s.frame_length = 400;
  s.frame_shift = 160;
  s.fft_size = 512;
  EXPECT_AGREES(cmp().spectral_bands(s, b, false, kProjectedLog));
}

TEST_P(DeviceVsCpu, GemmNt) {
  struct Case {
    int64_t rows;
    int k, m;
    size_t a_off, c_off;
  };
  const Case cases[] = {
      {37, 257, 23, 5, 3},      // filterbank-like, nothing a tile multiple
      {1001, 257, 40, 0, 0},
      {1, 1, 1, 0, 0},
      {333, 13, 13, 13 * 3, 17},  // DCT-like, offsets into a larger buffer
      {67, 1024, 17, 1, 2},
      {16, 16, 16, 0, 0},       // exactly one tile
      {5, 0, 3, 0, 0},          // k = 0: C is zero
      {129, 1275, 96, 0, 64},   // TRAPS-like: long k, wide output
  };
  for (const Case& c : cases)
    EXPECT_AGREES(cmp().gemm_nt(c.rows, c.k, c.m, c.a_off, c.c_off, kRel));
}

TEST_P(DeviceVsCpu, Apply) {
  const size_t n = 100003;
  EXPECT_AGREES(cmp().apply(UnaryOp::kLogFloor, -5.0f, n, -1.0f, 1e6f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kLogOffset, 1e-4f, n, 0.0f, 1e4f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kLogClamp, FLT_EPSILON, n, 0.0f, 1.0f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kLogClamp, 1.0f, n, 0.0f, 1e5f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kPow, 0.33f, n, -1.0f, 1e6f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kSqrt, 0.0f, n, -1.0f, 1e6f, kElementwise));
  EXPECT_AGREES(cmp().apply(UnaryOp::kSqrt, 0.0f, 1, 0.0f, 10.0f, kElementwise));
}

TEST_P(DeviceVsCpu, LogIntoColumn) {
  EXPECT_AGREES(cmp().log_into_column(1001, FLT_EPSILON, 14, 0, kElementwise));
  EXPECT_AGREES(cmp().log_into_column(1001, 1.0f, 14, 13, kElementwise));
  EXPECT_AGREES(cmp().log_into_column(3, 1.0f, 39, 26, kElementwise));
}

TEST_P(DeviceVsCpu, Splice) {
  EXPECT_AGREES(cmp().splice(3, 37, 23, 25, 25));  // context wider than the utterance
  EXPECT_AGREES(cmp().splice(1, 5, 7, 0, 3));
  EXPECT_AGREES(cmp().splice(2, 101, 40, 4, 0));
}

TEST_P(DeviceVsCpu, ExtendedOuterProducts) {
  EXPECT_AGREES(cmp().extended_outer_products(1024, 39));  // an fMLLR block, en-us
  EXPECT_AGREES(cmp().extended_outer_products(37, 13));
  EXPECT_AGREES(cmp().extended_outer_products(1, 1));
  EXPECT_AGREES(cmp().extended_outer_products(300, 120));
}

TEST_P(DeviceVsCpu, LpcToCepstrum) {
  EXPECT_AGREES(cmp().lpc_to_cepstrum(1001, 12, 13, kElementwise));
  EXPECT_AGREES(cmp().lpc_to_cepstrum(37, 20, 25, kElementwise));  // ceps beyond order
  EXPECT_AGREES(cmp().lpc_to_cepstrum(5, 1, 5, kElementwise));
}

TEST_P(DeviceVsCpu, RejectsMisuse) {
  Backend& dev = device();
  BufferPtr a = dev.alloc(100), c = dev.alloc(10);
  BufferPtr foreign = cpu_->alloc(100);
  EXPECT_THROW(dev.gemm_nt(*foreign, 10, 10, *a, 1, *c), BackendError);
  EXPECT_THROW(dev.gemm_nt(*a, 10, 10, *a, 2, *c), BackendError);  // C too small
  EXPECT_THROW(dev.apply(UnaryOp::kSqrt, 0.0f, *c, 11), BackendError);
  std::vector<float> host(20);
  EXPECT_THROW(dev.upload(*c, host.data(), 5, 6), BackendError);
  EXPECT_THROW(dev.download(*c, host.data(), 11), BackendError);
  EXPECT_THROW(dev.power_spectrum(*a, 1, 100, false, *c), BackendError);  // not pow2
  EXPECT_THROW(dev.extended_outer_products(*a, 10, 3, *c), BackendError);   // out too small
  EXPECT_THROW(dev.extended_outer_products(*a, 1, 0, *a), BackendError);    // dim 0
  // spectral_bands: 2 rows of 4 bands need 8 floats of bands; 10 is fine,
  // 7 is not; fft 100 is no power of two; zero bands.
  FramingSpec fs;
  fs.valid_length = 100;
  fs.utt_stride = 100;
  fs.frames_per_utt = 2;
  fs.frame_length = 16;
  fs.frame_shift = 16;
  fs.fft_size = 16;
  BandsSpec bs;
  bs.num_bands = 4;
  BufferPtr fb = dev.alloc(4 * 9), ranges = dev.alloc(8), small = dev.alloc(7);
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *small, nullptr), BackendError);
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *small, *c, nullptr), BackendError);
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *foreign, *ranges, *c, nullptr), BackendError);
  bs.num_bands = 0;
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr), BackendError);
  bs.num_bands = 4;
  fs.fft_size = 100;
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr), BackendError);
  // A projection: groups of 3 do not divide 4 bands; a 2 x 4 matrix needs 8
  // floats (7 given); raw energies are never projected.
  fs.fft_size = 16;
  bs.apply_op = true;
  bs.projection = fb.get();
  bs.projection_group = 3;
  bs.projection_outputs = 2;
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr), BackendError);
  bs.projection_group = 4;
  bs.projection = small.get();
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr), BackendError);
  bs.projection = fb.get();
  bs.apply_op = false;
  EXPECT_THROW(dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr), BackendError);
  bs.apply_op = true;
  dev.spectral_bands(*a, fs, *a, bs, *fb, *ranges, *c, nullptr);  // 2 rows x 2 outputs: fits
}

// --- whole feature pipelines ------------------------------------------------

FeatureOptions opts_for(Flavour flavour, FeatureKind kind) {
  return FeatureOptions::for_flavour(flavour, kind);
}

TEST_P(DeviceVsCpu, MfccSphinx) {
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kSphinx, FeatureKind::kMfcc), {}, 21937,
                               kLogDomain));
}

TEST_P(DeviceVsCpu, MfccSphinx8k) {
  FeatureOptions o = opts_for(Flavour::kSphinx, FeatureKind::kMfcc);
  o.frame.sample_rate = 8000.0f;
  o.frame.fft_size = 256;
  o.mel.num_filters = 31;
  o.mel.low_freq = 200.0f;
  o.mel.high_freq = 3500.0f;
  EXPECT_AGREES(cmp().features(o, {}, 11111, kLogDomain));
}

TEST_P(DeviceVsCpu, MfccKaldiWithEnergy) {
  FeatureOptions o = opts_for(Flavour::kKaldi, FeatureKind::kMfcc);
  o.mfcc.use_energy = true;
  EXPECT_AGREES(cmp().features(o, {}, 21937, kLogDomain));
}

TEST_P(DeviceVsCpu, MfccHtk) {
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kHtk, FeatureKind::kMfcc), {}, 21937,
                               kLogDomain));
}

TEST_P(DeviceVsCpu, Fbank) {
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kKaldi, FeatureKind::kFbank), {}, 21937,
                               kLogDomain));
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kSphinx, FeatureKind::kFbank), {}, 16003,
                               kLogDomain));
}

TEST_P(DeviceVsCpu, Plp) {
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kHtk, FeatureKind::kPlp), {}, 21937,
                               kLogDomain));
  FeatureOptions o = opts_for(Flavour::kKaldi, FeatureKind::kPlp);
  o.plp.use_energy = true;
  EXPECT_AGREES(cmp().features(o, {}, 16003, kLogDomain));
}

TEST_P(DeviceVsCpu, Traps) {
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kSphinx, FeatureKind::kTraps), {}, 21937,
                               kLogDomain));
}

TEST_P(DeviceVsCpu, VtlnWarps) {
  const std::vector<float> warps = {0.85f, 0.94f, 1.0f, 1.07f, 1.15f};
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kKaldi, FeatureKind::kMfcc), warps, 16003,
                               kLogDomain));
  // Sphinx's filters are snapped to FFT bins, which a strong warp can
  // squeeze below one bin: a milder range.
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kSphinx, FeatureKind::kMfcc),
                               {0.94f, 1.0f, 1.06f}, 16003, kLogDomain));
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kHtk, FeatureKind::kPlp), {0.9f, 1.1f},
                               16003, kLogDomain));
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kKaldi, FeatureKind::kFbank), {0.9f, 1.1f},
                               16003, kLogDomain));
  EXPECT_AGREES(cmp().features(opts_for(Flavour::kSphinx, FeatureKind::kTraps),
                               {0.95f, 1.05f}, 12007, kLogDomain));
}

TEST_P(DeviceVsCpu, BatchOnDevice) {
  EXPECT_AGREES(cmp().features_batch(opts_for(Flavour::kSphinx, FeatureKind::kMfcc), {}, 3,
                                     8001, 123, kLogDomain));
  EXPECT_AGREES(cmp().features_batch(opts_for(Flavour::kKaldi, FeatureKind::kMfcc), {}, 4,
                                     6007, 0, kLogDomain));
  EXPECT_AGREES(cmp().features_batch(opts_for(Flavour::kSphinx, FeatureKind::kTraps), {}, 2,
                                     7001, 99, kLogDomain));
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceVsCpu, ::testing::Values("opencl", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param;
                         });

// --- the registry's errors --------------------------------------------------

TEST(BackendRegistry, RequiredBackendsAreKnown) {
  std::set<std::string> known;
  for (const BackendInfo& i : testing::backend_infos()) known.insert(i.name);
  for (const std::string& name : testing::required_backends())
    EXPECT_TRUE(known.count(name)) << "GPUSPEECH_REQUIRE_BACKENDS names unknown backend '"
                                   << name << "'";
}

TEST(BackendRegistry, OpenclDeviceOutOfRangeIsClearError) {
  try {
    open_backend("opencl", 99);
    FAIL() << "open_backend(\"opencl\", 99) did not throw";
  } catch (const BackendError& e) {
    const std::string msg = e.what();
    // Either the device index is out of range, or OpenCL is not there at
    // all; both must say so in words.
    const bool clear = msg.find("out of range") != std::string::npos ||
                       msg.find("not available") != std::string::npos ||
                       msg.find("no OpenCL") != std::string::npos;
    EXPECT_TRUE(clear) << msg;
    EXPECT_NE(msg.find("opencl"), std::string::npos) << msg;
  }
}

TEST(BackendRegistry, UnknownBackendThrows) {
  try {
    open_backend("bogus");
    FAIL() << "open_backend(\"bogus\") did not throw";
  } catch (const BackendError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
    EXPECT_NE(msg.find(backend_choices()), std::string::npos) << msg;
  }
}

#ifdef GPUSPEECH_HAVE_OPENCL
TEST(BackendRegistry, OpenclGpuOnlyNamesWhatItFound) {
  // auto asks for OpenCL GPUs only: with pocl alone there is none, and the
  // error must list what was found instead.
  try {
    BackendPtr b = make_opencl_backend(0, /*gpu_only=*/true);
    EXPECT_FALSE(b->device_name().empty());
  } catch (const BackendError& e) {
    const std::string msg = e.what();
    const bool clear = msg.find("no OpenCL GPU device (found: ") == 0 ||
                       msg.find("no OpenCL platform") == 0;
    EXPECT_TRUE(clear) << msg;
  }
}
#endif

// --- the comparison machinery itself ---------------------------------------

TEST(BackendCompare, CpuAgainstItselfIsExact) {
  BackendPtr a = make_cpu_backend(), b = make_cpu_backend();
  BackendComparison cmp(*a, *b);
  const Tolerance exact = Tolerance::absolute(0.0);
  EXPECT_AGREES(cmp.gemm_nt(37, 257, 23, 5, 3, exact));
  EXPECT_AGREES(cmp.features(FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kMfcc),
                             {0.9f, 1.1f}, 8000, exact));
}

TEST(BackendCompare, DetectsDifferences) {
  std::vector<float> ref = {1.0f, -2.0f, 100.0f, 0.0f};
  std::vector<float> test = ref;
  EXPECT_TRUE(compare_values(test.data(), ref.data(), 4, Tolerance::relative(1e-4)).ok());
  test[1] = -2.001f;  // 5e-4 relative
  Comparison c = compare_values(test.data(), ref.data(), 4, Tolerance::relative(1e-4));
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.failures, 1u);
  EXPECT_EQ(c.worst, 1u);
  EXPECT_NEAR(c.max_abs, 1e-3, 1e-6);
  // Near-zero elements are judged against the floor (1 % of the largest).
  test = ref;
  test[3] = 5e-5f;
  EXPECT_TRUE(compare_values(test.data(), ref.data(), 4, Tolerance::relative(1e-4)).ok());
  test[3] = 5e-3f;
  EXPECT_FALSE(compare_values(test.data(), ref.data(), 4, Tolerance::relative(1e-4)).ok());
  // Non-finite values only match themselves.
  test = ref;
  test[0] = NAN;
  EXPECT_FALSE(compare_values(test.data(), ref.data(), 4, Tolerance::absolute(1.0)).ok());
  ref[0] = NAN;
  EXPECT_TRUE(compare_values(test.data(), ref.data(), 4, Tolerance::absolute(1.0)).ok());
  // Nothing compared is not a pass.
  EXPECT_FALSE(compare_values(nullptr, nullptr, 0, Tolerance::absolute(1.0)).ok());
}

TEST(BackendCompare, RandomAudioIsSpeechLike) {
  BackendPtr a = make_cpu_backend();
  BackendComparison cmp(*a, *a);
  const std::vector<float> audio = cmp.random_audio(16000);
  double energy = 0.0;
  float peak = 0.0f;
  for (float v : audio) {
    energy += double(v) * v;
    peak = std::max(peak, std::fabs(v));
    ASSERT_EQ(v, std::round(v));  // whole 16-bit values
  }
  EXPECT_GT(energy / audio.size(), 1e5);  // not silence
  EXPECT_LE(peak, 32768.0f);
}

}  // namespace
}  // namespace gpuspeech
