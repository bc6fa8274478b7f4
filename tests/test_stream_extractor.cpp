// StreamingFeatureExtractor: the frames of a stream equal those of the whole
// utterance (compute_features), however the audio is cut, for every kind,
// flavour, CMN mode and delta layout; frames leave exactly latency_samples()
// after their first sample; flush/reset start clean utterances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/postprocess.h"
#include "common/features/stream_extractor.h"
#include "common/features/wav_reader.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

std::vector<float> speech(const std::string& name) {
  return read_wav_file(testing::audio_dir() + "/librivox/" + name).samples;
}

std::vector<float> noise(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 2000.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Feeds `audio` in pieces whose sizes come from `sizes` (cycled), then
// flushes.
FeatureMatrix stream(StreamingFeatureExtractor& ex, const std::vector<float>& audio,
                     const std::vector<size_t>& sizes) {
  FeatureMatrix out;
  size_t pos = 0, k = 0;
  while (pos < audio.size()) {
    const size_t n = std::min(sizes[k++ % sizes.size()], audio.size() - pos);
    ex.accept(audio.data() + pos, n, out);
    pos += n;
  }
  ex.flush(out);
  return out;
}

std::vector<size_t> random_sizes(uint32_t seed, size_t max) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<size_t> d(1, max);
  std::vector<size_t> v(257);
  for (size_t& x : v) x = d(gen);
  v[3] = 1;  // always some one-sample pieces
  v[4] = 1;
  v[100] = 0;  // and an empty call
  return v;
}

// The en-us model's -cmninit (its feat.params): where live CMN starts.
const std::vector<float> kEnUsCmnInit = {41.0f, -5.29f, -0.12f, 5.09f, 2.48f, -4.07f, -1.37f,
                                         -1.78f, -5.08f, -2.05f, -6.45f, -1.42f, 1.17f};

bool bitwise_equal(const FeatureMatrix& a, const FeatureMatrix& b) {
  return a.rows == b.rows && a.dim == b.dim && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// Largest |a-b| / max(1, |b|): relative where values are large, absolute
// near zero (CMN output crosses zero).
double max_rel_diff(const FeatureMatrix& a, const FeatureMatrix& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a.data[i]) - b.data[i]) /
                     std::max(1.0, std::fabs(static_cast<double>(b.data[i])));
    worst = std::max(worst, d);
  }
  return worst;
}

struct Case {
  std::string name;
  FeatureOptions opts;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> out;
  {
    // The en-us front end as pocketsphinx runs it live.
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
    o.norm.cmn = NormOptions::Cmn::kLive;
    o.norm.cmn_init = {41.00f, -5.29f, -0.12f, 5.09f, 2.48f, -4.07f, -1.37f,
                       -1.78f, -5.08f, -2.05f, -6.45f, -1.42f, 1.17f};
    o.norm.live_window = 100;  // exercise the halving within the test audio
    out.push_back({"sphinx_mfcc_live_1s_c_d_dd", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    o.norm.cmn = NormOptions::Cmn::kBatch;
    o.norm.cvn = true;
    o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
    out.push_back({"sphinx_mfcc_batch_cvn", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kMfcc);
    o.delta.layout = DeltaOptions::Layout::kRegression;
    o.delta.order = 2;
    o.delta.window = 2;
    o.mfcc.use_energy = true;
    out.push_back({"kaldi_mfcc_energy_deltas", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kFbank);
    o.frame.dither = 1.0f;  // seeded dither: still independent of cutting
    o.frame.dither_seed = 7;
    out.push_back({"kaldi_fbank_dither", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kMfcc);
    o.norm.cmn = NormOptions::Cmn::kLive;  // first-frame start
    o.delta.layout = DeltaOptions::Layout::kRegression;
    o.delta.order = 1;
    o.delta.window = 3;
    out.push_back({"htk_mfcc_live_first_frame", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp);
    o.mel.vtln.warp = 1.1f;
    out.push_back({"htk_plp_vtln", o});
  }
  {
    // Live CMN from speech applies to mfcc and fbank; PLP and TRAPS (whose
    // blocks recompute context frames) learn from every frame.
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kTraps);
    o.traps.context = 5;
    o.traps.num_coeffs = 3;
    o.norm.cmn = NormOptions::Cmn::kLive;
    out.push_back({"sphinx_traps_live", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp);
    o.norm.cmn = NormOptions::Cmn::kLive;
    out.push_back({"htk_plp_live", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kFbank);
    o.norm.cmn = NormOptions::Cmn::kLive;  // from speech, noise subtraction off
    out.push_back({"sphinx_fbank_live_from_speech", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kTraps);
    o.traps.context = 10;
    o.traps.num_coeffs = 4;
    o.delta.layout = DeltaOptions::Layout::kRegression;
    o.delta.order = 1;
    out.push_back({"sphinx_traps_deltas", o});
  }
  {
    // Sphinx noise removal: trackers carried frame by frame.
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    o.noise.remove_noise = true;
    o.norm.cmn = NormOptions::Cmn::kLive;
    out.push_back({"sphinx_mfcc_remove_noise", o});
  }
  {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kFbank);
    o.norm.min_max = true;
    out.push_back({"sphinx_fbank_minmax", o});
  }
  return out;
}

class StreamCases : public ::testing::TestWithParam<Case> {};

TEST_P(StreamCases, PiecesEqualWholeAndComputeFeatures) {
  const Case& c = GetParam();
  BackendPtr cpu = make_cpu_backend();
  // A speech utterance whose length leaves a partial last frame.
  std::vector<float> audio = speech("sense_and_sensibility_01_austen_64kb-0880.wav");
  audio.resize(audio.size() - 37);

  const FeatureMatrix reference = compute_features(c.opts, *cpu, audio.data(), audio.size());
  FeatureExtractor fx(c.opts, *cpu);
  ASSERT_EQ(reference.rows, fx.num_frames(static_cast<int64_t>(audio.size())));
  ASSERT_EQ(reference.dim, c.opts.output_dim());

  StreamingFeatureExtractor ex(c.opts, *cpu);
  const FeatureMatrix whole = stream(ex, audio, {audio.size()});
  EXPECT_EQ(whole.rows, reference.rows);
  EXPECT_LE(max_rel_diff(whole, reference), 1e-5) << c.name;

  const std::vector<std::vector<size_t>> cuttings = {
      random_sizes(1, 3),        // mostly 1..3 samples
      random_sizes(2, 700),      // around a frame
      random_sizes(3, 20000),    // large blocks
      {160}, {1}, {409, 411}};   // shift-aligned, single samples, near-frame
  for (size_t i = 0; i < cuttings.size(); ++i) {
    const FeatureMatrix pieces = stream(ex, audio, cuttings[i]);
    EXPECT_TRUE(bitwise_equal(pieces, whole))
        << c.name << ": cutting " << i << " differs (rows " << pieces.rows
        << " vs " << whole.rows << ", max rel diff "
        << (pieces.rows == whole.rows ? max_rel_diff(pieces, whole) : -1.0) << ")";
  }

  // Small device blocks (forces block splitting and TRAPS context reuse).
  StreamingFeatureExtractor small(c.opts, *cpu);
  small.set_max_block_frames(3);
  EXPECT_TRUE(bitwise_equal(stream(small, audio, random_sizes(4, 5000)), whole)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, StreamCases, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Frames leave exactly latency_samples() after their first sample: not
// earlier (they would lack context) and not later.
TEST(StreamExtractor, FramesLeaveExactlyAtLatency) {
  BackendPtr cpu = make_cpu_backend();
  for (const Case& c : cases()) {
    StreamingFeatureExtractor ex(c.opts, *cpu);
    if (ex.buffers_utterance()) continue;
    const std::vector<float> audio = noise(6000, 11);
    FeatureMatrix out;
    int64_t expected_rows = 0;
    for (size_t i = 0; i < audio.size(); ++i) {
      ex.accept(&audio[i], 1, out);
      const int64_t have = static_cast<int64_t>(i + 1);
      // Frame t is out once have >= t * shift + latency.
      const int64_t due =
          have < ex.latency_samples()
              ? 0
              : (have - ex.latency_samples()) / ex.frame_shift() + 1;
      expected_rows = due;
      ASSERT_EQ(out.rows, expected_rows) << c.name << " after " << have << " samples";
    }
    EXPECT_EQ(ex.frames_emitted(), expected_rows);
  }
}

// Declipping holds samples back for at most Declipper::max_delay(), which
// latency_samples() counts; the stream's frames still equal the whole
// utterance's, on audio with clipped peaks (LibriVox 12 dB past full scale).
TEST(StreamExtractor, DeclippedStreamEqualsWholeUtterance) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.noise.remove_noise = true;
  o.declip.enabled = true;
  std::vector<float> audio = speech("sense_and_sensibility_01_austen_64kb-0880.wav");
  float peak = 0.0f;
  for (float v : audio) peak = std::max(peak, std::fabs(v));
  for (float& v : audio) v = std::max(-32768.0f, std::min(32767.0f, std::round(v * 4.0f * 32767.0f / peak)));
  int64_t clipped = 0;
  for (float v : audio) clipped += std::fabs(v) >= 32767.0f;
  ASSERT_GT(clipped, 1000);

  FeatureOptions plain = o;
  plain.declip.enabled = false;
  const FeatureMatrix reference = compute_features(o, *cpu, audio.data(), audio.size());
  const FeatureMatrix undeclipped = compute_features(plain, *cpu, audio.data(), audio.size());
  ASSERT_EQ(reference.rows, undeclipped.rows);
  EXPECT_GT(max_rel_diff(reference, undeclipped), 1e-2);  // the stage does something

  StreamingFeatureExtractor ex(o, *cpu);
  StreamingFeatureExtractor no_declip(plain, *cpu);
  EXPECT_GT(ex.latency_samples(), no_declip.latency_samples());
  const FeatureMatrix whole = stream(ex, audio, {audio.size()});
  EXPECT_EQ(whole.rows, reference.rows);
  EXPECT_LE(max_rel_diff(whole, reference), 1e-5);
  for (const auto& sizes : {random_sizes(1, 3), random_sizes(2, 700), std::vector<size_t>{1}}) {
    EXPECT_TRUE(bitwise_equal(stream(ex, audio, sizes), whole));
  }
  // Frames leave at latency_samples() at the latest, samples counted as
  // accepted whether or not the declipper still holds them.
  FeatureMatrix out;
  for (size_t i = 0; i < 20000; ++i) {
    ex.accept(&audio[i], 1, out);
    const int64_t have = static_cast<int64_t>(i + 1);
    ASSERT_EQ(ex.samples_accepted(), have);
    const int64_t due = have < ex.latency_samples()
                            ? 0
                            : (have - ex.latency_samples()) / ex.frame_shift() + 1;
    ASSERT_GE(out.rows, due) << "after " << have << " samples";
  }
  ex.reset();
}

TEST(StreamExtractor, LatencyFormula) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  StreamingFeatureExtractor plain(o, *cpu);
  EXPECT_EQ(plain.latency_samples(), o.frame.frame_length_samples());
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  StreamingFeatureExtractor deltas(o, *cpu);
  EXPECT_EQ(deltas.latency_samples(),
            o.frame.frame_length_samples() + 3 * o.frame.frame_shift_samples());
  o.kind = FeatureKind::kTraps;
  o.traps.context = 5;
  o.traps.num_coeffs = 4;
  StreamingFeatureExtractor traps(o, *cpu);
  EXPECT_EQ(traps.latency_samples(),
            o.frame.frame_length_samples() + 8 * o.frame.frame_shift_samples());
}

TEST(StreamExtractor, BatchModeHoldsFramesUntilFlush) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.norm.cmn = NormOptions::Cmn::kBatch;
  StreamingFeatureExtractor ex(o, *cpu);
  EXPECT_TRUE(ex.buffers_utterance());
  const std::vector<float> audio = noise(16000, 3);
  FeatureMatrix out;
  ex.accept(audio.data(), audio.size(), out);
  EXPECT_EQ(out.rows, 0);
  ex.flush(out);
  const FeatureMatrix ref = compute_features(o, *cpu, audio.data(), audio.size());
  EXPECT_TRUE(bitwise_equal(out, ref));
}

TEST(StreamExtractor, EmptyAndShortUtterances) {
  BackendPtr cpu = make_cpu_backend();
  for (const Case& c : cases()) {
    StreamingFeatureExtractor ex(c.opts, *cpu);
    FeatureExtractor fx(c.opts, *cpu);
    FeatureMatrix out;
    ex.flush(out);  // nothing at all
    EXPECT_EQ(out.rows, 0) << c.name;
    for (size_t n : {size_t{1}, size_t{100}, size_t{399}, size_t{401}}) {
      const std::vector<float> audio = noise(n, static_cast<uint32_t>(n));
      FeatureMatrix got = stream(ex, audio, {7});
      const FeatureMatrix ref = compute_features(c.opts, *cpu, audio.data(), n);
      EXPECT_EQ(got.rows, fx.num_frames(static_cast<int64_t>(n))) << c.name << " n=" << n;
      ASSERT_EQ(got.rows, ref.rows) << c.name << " n=" << n;
      EXPECT_LE(max_rel_diff(got, ref), 1e-5) << c.name << " n=" << n;
    }
  }
}

TEST(StreamExtractor, ResetAndFlushStartCleanUtterances) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = cases()[0].opts;  // live CMN + deltas: state to leak
  StreamingFeatureExtractor ex(o, *cpu);
  const std::vector<float> a = noise(9000, 5), b = noise(7000, 6);
  const FeatureMatrix ref_b = compute_features(o, *cpu, b.data(), b.size());

  FeatureMatrix junk;
  ex.accept(a.data(), a.size(), junk);  // an abandoned utterance
  EXPECT_GT(junk.rows, 0);
  ex.reset();
  EXPECT_EQ(ex.samples_accepted(), 0);
  EXPECT_TRUE(bitwise_equal(stream(ex, b, {333}), ref_b));

  // flush() ends utterance a; b then starts from scratch.
  FeatureMatrix first = stream(ex, a, {1000});
  EXPECT_EQ(first.rows, FeatureExtractor(o, *cpu).num_frames(9000));
  EXPECT_TRUE(bitwise_equal(stream(ex, b, {1000}), ref_b));
}

// Noise carry: flush() keeps Sphinx noise removal's trackers, so the next
// utterance's frames are those FeatureExtractor gives when its trackers
// run on through both utterances (compute_device carries them from call to
// call); reset() still restarts them, and without carry each utterance is
// compute_features() of its own audio.
TEST(StreamExtractor, NoiseCarryGoesOnFromTheLastUtterance) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.noise.remove_noise = true;
  o.norm.cmn = NormOptions::Cmn::kNone;  // the spectral frames alone
  o.delta.layout = DeltaOptions::Layout::kNone;
  o.frame.dither = 0.0f;
  const std::vector<float> a = noise(24000, 31);  // loud hiss: its noise estimate
  std::vector<float> b = speech("sense_and_sensibility_01_austen_64kb-0880.wav");
  b.resize(std::min<size_t>(b.size(), 40000));

  // The trackers run on from a's frames (its zero-padded last one included)
  // into b's.
  FeatureExtractor fx(o, *cpu);
  fx.reset_noise_state();
  FeatureMatrix ref_b;
  for (const std::vector<float>* audio : {&a, static_cast<const std::vector<float>*>(&b)}) {
    const int64_t n = static_cast<int64_t>(audio->size());
    const FramingSpec spec = fx.framing_for(1, n, n);
    BufferPtr signal = cpu->alloc(static_cast<size_t>(n));
    cpu->upload(*signal, audio->data(), static_cast<size_t>(n));
    BufferPtr out = cpu->alloc(static_cast<size_t>(spec.rows()) * fx.base_dim());
    fx.compute_device(*signal, spec, *out);
    ref_b.rows = spec.rows();
    ref_b.dim = fx.base_dim();
    ref_b.data.resize(out->size());
    cpu->download(*out, ref_b.data.data(), ref_b.data.size());
  }
  const FeatureMatrix alone_b = compute_features(o, *cpu, b.data(), b.size());
  ASSERT_EQ(ref_b.rows, alone_b.rows);
  EXPECT_GT(max_rel_diff(ref_b, alone_b), 0.1) << "a's hiss changes b's frames";

  StreamingFeatureExtractor ex(o, *cpu);
  EXPECT_FALSE(ex.noise_carry());  // the default
  stream(ex, a, {777});
  EXPECT_TRUE(bitwise_equal(stream(ex, b, {555}), alone_b));

  ex.set_noise_carry(true);
  stream(ex, a, {777});
  const FeatureMatrix carried = stream(ex, b, random_sizes(41, 2000));
  ASSERT_EQ(carried.rows, ref_b.rows);
  EXPECT_TRUE(bitwise_equal(carried, ref_b));

  // reset() starts the trackers afresh, carry or not.
  FeatureMatrix junk;
  ex.accept(a.data(), a.size(), junk);
  ex.reset();
  EXPECT_TRUE(bitwise_equal(stream(ex, b, {555}), alone_b));
}

TEST(StreamExtractor, RejectsMismatchedOutputMatrix) {
  BackendPtr cpu = make_cpu_backend();
  StreamingFeatureExtractor ex(
      FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc), *cpu);
  FeatureMatrix out;
  out.dim = 5;
  out.rows = 1;
  out.data.resize(5);
  const std::vector<float> audio = noise(100, 1);
  EXPECT_THROW(ex.accept(audio.data(), audio.size(), out), std::invalid_argument);
}

TEST(StreamExtractor, InvalidOptionsThrowNamingTheOption) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.norm.cvn = true;  // needs batch CMN
  try {
    StreamingFeatureExtractor ex(o, *cpu);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cvn"), std::string::npos) << e.what();
  }
}

TEST(StreamExtractor, RemoveSilenceIsRefused) {
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.noise.remove_silence = true;
  try {
    StreamingFeatureExtractor ex(o, *cpu);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("remove_silence"), std::string::npos) << e.what();
  }
}

// Live CMN started far from the truth (cmn_init = 0) converges to the batch
// mean over a long utterance: on the last quarter of ~25 s of speech the
// live-normalised c0 is within a small fraction of its initial offset from
// the batch-normalised one.
TEST(StreamExtractor, LiveCmnConvergesToBatchCmn) {
  BackendPtr cpu = make_cpu_backend();
  std::vector<float> audio;
  for (const char* f : {"sense_and_sensibility_01_austen_64kb-0870.wav",
                        "sense_and_sensibility_01_austen_64kb-0880.wav",
                        "sense_and_sensibility_01_austen_64kb-0890.wav",
                        "sense_and_sensibility_01_austen_64kb-0920.wav",
                        "sense_and_sensibility_01_austen_64kb-0930.wav"}) {
    const std::vector<float> s = speech(f);
    audio.insert(audio.end(), s.begin(), s.end());
  }
  FeatureOptions live = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  live.norm.cmn = NormOptions::Cmn::kLive;
  live.norm.cmn_init.assign(13, 0.0f);
  FeatureOptions batch = live;
  batch.norm.cmn = NormOptions::Cmn::kBatch;
  batch.norm.cmn_init.clear();

  StreamingFeatureExtractor ex(live, *cpu);
  const FeatureMatrix l = stream(ex, audio, random_sizes(9, 4000));
  const FeatureMatrix b = compute_features(batch, *cpu, audio.data(), audio.size());
  ASSERT_EQ(l.rows, b.rows);
  ASSERT_GT(l.rows, 2000);  // > 20 s

  // live - batch = batch mean - live mean, per frame and dimension.
  auto mean_abs_offset = [&](int64_t from, int64_t to, int d) {
    double s = 0.0;
    for (int64_t t = from; t < to; ++t) s += std::fabs(l.row(t)[d] - b.row(t)[d]);
    return s / static_cast<double>(to - from);
  };
  const double start = mean_abs_offset(0, 10, 0);
  const double end = mean_abs_offset(l.rows * 3 / 4, l.rows, 0);
  EXPECT_GT(start, 20.0);  // c0's mean is far from 0: a real test
  EXPECT_LT(end, 0.1 * start) << "start offset " << start << ", end " << end;
  // The other cepstra: the remaining mean offset is small against each
  // dimension's spread (it is what a 500-frame window cannot know about
  // the rest of the utterance).
  for (int d = 1; d < 13; ++d) {
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t t = 0; t < b.rows; ++t) {
      sum += b.row(t)[d];
      sum_sq += static_cast<double>(b.row(t)[d]) * b.row(t)[d];
    }
    const double sd = std::sqrt(sum_sq / b.rows - (sum / b.rows) * (sum / b.rows));
    EXPECT_LT(mean_abs_offset(l.rows * 3 / 4, l.rows, d), 0.25 * sd) << "c" << d;
  }
}

// Two LibriVox readings in quiet Gaussian noise (20 in 16-bit units), with
// 1 s of that noise first and `pause_s` after each reading: speech with
// pauses for the detector and live CMN. Same seed, same samples.
std::vector<float> readings_in_hiss(uint32_t seed, double pause_s) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> hiss(0.0f, 20.0f);
  std::vector<float> audio;
  auto pause = [&](double seconds) {
    for (int i = 0; i < static_cast<int>(seconds * 16000); ++i) audio.push_back(hiss(gen));
  };
  auto say = [&](const char* f) {
    for (float x : speech(f)) audio.push_back(x + hiss(gen));
  };
  pause(1.0);
  say("sense_and_sensibility_01_austen_64kb-0870.wav");
  pause(pause_s);
  say("sense_and_sensibility_01_austen_64kb-0880.wav");
  pause(pause_s);
  return audio;
}

// NormOptions::live_from_speech: the running mean stands still while the
// VAD says silence (the pauses would pull it to the noise floor) and learns
// from speech; stream and whole utterance agree; turned off, the pauses
// move it. Speech with long pauses of quiet noise between.
TEST(StreamExtractor, LiveCmnLearnsOnlyFromSpeech) {
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> audio = readings_in_hiss(17, 3.0);

  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.delta.layout = DeltaOptions::Layout::kNone;
  o.noise.remove_noise = true;
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.norm.cmn_init = kEnUsCmnInit;
  ASSERT_TRUE(o.norm.live_from_speech);  // the default
  FeatureOptions raw_opts = o;
  raw_opts.norm.cmn = NormOptions::Cmn::kNone;
  FeatureOptions every = o;
  every.norm.live_from_speech = false;

  const FeatureMatrix raw = compute_features(raw_opts, *cpu, audio.data(), audio.size());
  const FeatureMatrix whole = compute_features(o, *cpu, audio.data(), audio.size());
  StreamingFeatureExtractor ex(o, *cpu);
  const FeatureMatrix streamed = stream(ex, audio, random_sizes(21, 3000));
  EXPECT_TRUE(bitwise_equal(streamed, whole));
  StreamingFeatureExtractor ex_every(every, *cpu);
  const FeatureMatrix learned_all = stream(ex_every, audio, random_sizes(22, 3000));
  ASSERT_EQ(raw.rows, whole.rows);
  ASSERT_EQ(learned_all.rows, whole.rows);

  FeatureExtractor fx(o, *cpu);
  fx.compute(audio.data(), static_cast<int64_t>(audio.size()));
  const std::vector<uint8_t> learn = fx.cmn_learn_rows();
  ASSERT_EQ(learn.size(), static_cast<size_t>(whole.rows));
  const int64_t learning = std::count(learn.begin(), learn.end(), 1);
  EXPECT_GT(learning, whole.rows / 4) << "the VAD finds the speech";
  EXPECT_LT(learning, whole.rows * 3 / 4) << "and the pauses";

  // The mean c0 was normalised by, frame by frame: raw - normalised.
  auto mean_c0 = [&](const FeatureMatrix& m, int64_t t) { return raw.row(t)[0] - m.row(t)[0]; };
  // The last pause: from where the VAD has declared silence to the end.
  int64_t from = whole.rows - 1;
  while (from > 0 && learn[static_cast<size_t>(from - 1)] == 0) --from;
  ASSERT_GT(whole.rows - from, 150) << "most of the last 3 s pause is silence";
  double moved_gated = 0.0, moved_every = 0.0;
  for (int64_t t = from + 1; t < whole.rows; ++t) {
    moved_gated = std::max<double>(moved_gated, std::fabs(mean_c0(whole, t) - mean_c0(whole, from)));
    moved_every = std::max<double>(moved_every,
                                   std::fabs(mean_c0(learned_all, t) - mean_c0(learned_all, from)));
  }
  EXPECT_LT(moved_gated, 1e-3) << "the mean learnt from a silent frame";
  EXPECT_GT(moved_every, 1.0) << "a pause should pull an ungated mean (else the test proves nothing)";
  // And over the speech the gated mean did move from its start.
  EXPECT_GT(std::fabs(mean_c0(whole, from) - o.norm.cmn_init[0]), 1.0);
}

// Streams `audio` in pieces with live CMN's trace on, taking the trace
// after every call, as gpufeatures does.
FeatureMatrix stream_traced(StreamingFeatureExtractor& ex, const std::vector<float>& audio,
                            const std::vector<size_t>& sizes, CmnTrace& trace) {
  FeatureMatrix out;
  trace = CmnTrace{};
  CmnTrace piece;
  size_t pos = 0, k = 0;
  while (pos < audio.size()) {
    const size_t n = std::min(sizes[k++ % sizes.size()], audio.size() - pos);
    ex.accept(audio.data() + pos, n, out);
    ex.take_cmn_trace(piece);
    trace.append(piece);
    pos += n;
  }
  ex.flush(out);
  ex.take_cmn_trace(piece);
  trace.append(piece);
  return out;
}

double largest_difference(const FeatureMatrix& a, const FeatureMatrix& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
  return worst;
}

// Live CMN's trace (cmn_trace.h): each frame plus its offset is the frame
// computed with no CMN at all, deltas included (the deltas of the means
// over the same clamped window); its learn flags are the frames the VAD
// calls speech (and whose c0 the Sphinx rule keeps). Speech with pauses in
// quiet noise, the model's front end (noise removal, 1s_c_d_dd), random
// pieces.
TEST(StreamExtractor, CmnTraceGivesBackTheFeaturesWithoutCmn) {
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> audio = readings_in_hiss(31, 1.5);
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  o.noise.remove_noise = true;
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.norm.cmn_init = kEnUsCmnInit;
  FeatureOptions none = o;
  none.norm.cmn = NormOptions::Cmn::kNone;
  const FeatureMatrix raw = compute_features(none, *cpu, audio.data(), audio.size());

  StreamingFeatureExtractor ex(o, *cpu);
  ex.set_cmn_trace(true);
  CmnTrace trace;
  const FeatureMatrix live = stream_traced(ex, audio, random_sizes(33, 2500), trace);
  ASSERT_EQ(live.rows, raw.rows);
  ASSERT_EQ(trace.rows(), live.rows);
  ASSERT_EQ(trace.dim, live.dim);
  ASSERT_EQ(live.dim, 39);

  FeatureMatrix undone = live;
  for (size_t i = 0; i < undone.data.size(); ++i) undone.data[i] += trace.offsets[i];
  EXPECT_GT(largest_difference(live, raw), 10.0) << "live CMN moved the features (else no test)";
  EXPECT_LT(largest_difference(undone, raw), 2e-3);
  // The delta dims' offsets are not all zero: the mean moved during speech.
  double delta_offset = 0.0;
  for (int64_t t = 0; t < live.rows; ++t)
    for (int d = 13; d < 39; ++d)
      delta_offset = std::max(delta_offset, static_cast<double>(std::fabs(trace.offsets[t * 39 + d])));
  EXPECT_GT(delta_offset, 1e-3);

  FeatureExtractor fx(o, *cpu);
  fx.compute(audio.data(), static_cast<int64_t>(audio.size()));
  const std::vector<uint8_t> speech_rows = fx.cmn_learn_rows();
  ASSERT_EQ(speech_rows.size(), static_cast<size_t>(live.rows));
  int64_t learnt = 0;
  for (int64_t t = 0; t < live.rows; ++t) {
    const bool expect = speech_rows[static_cast<size_t>(t)] != 0 &&
                        !(o.cmn_skips_negative_c0() && raw.row(t)[0] < 0.0f);
    ASSERT_EQ(trace.learned[static_cast<size_t>(t)] != 0, expect) << "frame " << t;
    learnt += expect;
  }
  EXPECT_GT(learnt, live.rows / 2);
  EXPECT_LT(learnt, live.rows * 9 / 10);  // 4 s of the 14 s are pauses

  // Off by default, refused inside an utterance and without live CMN.
  StreamingFeatureExtractor quiet(o, *cpu);
  EXPECT_FALSE(quiet.cmn_trace_enabled());
  FeatureMatrix some;
  quiet.accept(audio.data(), 4000, some);
  EXPECT_THROW(quiet.set_cmn_trace(true), std::logic_error);
  StreamingFeatureExtractor no_live(none, *cpu);
  EXPECT_THROW(no_live.set_cmn_trace(true), std::logic_error);
}

// normalise_with_own_mean on a live stream's frames and trace equals batch
// CMN of the same audio (compute_features, cmn batch: statics normalised by
// the utterance's mean, then deltas), without a VAD, so that both take the
// mean over the same frames (live CMN learning from every frame; the Sphinx
// rule leaves out negative c0 in both). Two LibriVox readings, random
// pieces.
TEST(StreamExtractor, OwnMeanFromTheTraceEqualsBatchCmn) {
  BackendPtr cpu = make_cpu_backend();
  std::vector<float> audio = speech("sense_and_sensibility_01_austen_64kb-0870.wav");
  const std::vector<float> more = speech("sense_and_sensibility_01_austen_64kb-0880.wav");
  audio.insert(audio.end(), more.begin(), more.end());
  for (DeltaOptions::Layout layout : {DeltaOptions::Layout::kSphinx1sCDDd, DeltaOptions::Layout::kNone}) {
    FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    o.delta.layout = layout;
    o.norm.cmn = NormOptions::Cmn::kLive;
    o.norm.live_from_speech = false;
    o.norm.cmn_init = kEnUsCmnInit;
    FeatureOptions batch = o;
    batch.norm.cmn = NormOptions::Cmn::kBatch;
    batch.norm.cmn_init.clear();
    const FeatureMatrix expect = compute_features(batch, *cpu, audio.data(), audio.size());

    StreamingFeatureExtractor ex(o, *cpu);
    ex.set_cmn_trace(true);
    CmnTrace trace;
    FeatureMatrix own = stream_traced(ex, audio, random_sizes(41, 3000), trace);
    ASSERT_EQ(own.rows, expect.rows);
    const std::vector<uint8_t> statics = static_dims_of_layout(o.delta, o.base_dim());
    ASSERT_EQ(statics.size(), static_cast<size_t>(own.dim));
    EXPECT_EQ(std::count(statics.begin(), statics.end(), 1), 13);
    EXPECT_GT(largest_difference(own, expect), 1.0) << "live and batch CMN differ (else no test)";
    float moved = 0.0f;
    ASSERT_TRUE(normalise_with_own_mean(own.data.data(), own.rows, own.dim, trace, statics, &moved));
    EXPECT_GT(moved, 1.0f);
    EXPECT_LT(largest_difference(own, expect), 2e-3) << "layout " << static_cast<int>(layout);

    // A trace of other rows, or no frame learnt: refused, features kept.
    FeatureMatrix kept = own;
    CmnTrace short_trace = trace;
    short_trace.learned.pop_back();
    short_trace.offsets.resize(short_trace.offsets.size() - own.dim);
    EXPECT_FALSE(normalise_with_own_mean(kept.data.data(), kept.rows, kept.dim, short_trace, statics));
    CmnTrace silent = trace;
    std::fill(silent.learned.begin(), silent.learned.end(), 0);
    EXPECT_FALSE(normalise_with_own_mean(kept.data.data(), kept.rows, kept.dim, silent, statics));
    EXPECT_TRUE(bitwise_equal(kept, own));
  }
}

// vad_silence_start(): where the detector's silence began, as its states
// after the hangover (what live CMN learns from) say. Speech between pauses
// of quiet noise: 0 before the first speech, -1 in speech, then the first
// frame of the non-speech run that ended each speech (the run of
// vad_postspeech frames that flipped the state), reported once flipped;
// streamed in random pieces, the same values in the same order.
TEST(StreamExtractor, ReportsWhereTheDetectorsSilenceBegan) {
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> audio = readings_in_hiss(23, 2.0);
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.noise.remove_noise = true;
  o.norm.cmn = NormOptions::Cmn::kLive;
  ASSERT_TRUE(o.norm.live_from_speech);

  FeatureExtractor fx(o, *cpu);
  fx.compute(audio.data(), static_cast<int64_t>(audio.size()));
  const std::vector<uint8_t> learn = fx.cmn_learn_rows();
  // Expected: the value after each frame, from the states alone.
  std::vector<int64_t> expected(learn.size());
  int64_t value = 0;
  for (size_t t = 0; t < learn.size(); ++t) {
    if (learn[t]) value = -1;
    else if (t > 0 && learn[t - 1]) value = std::max<int64_t>(0, static_cast<int64_t>(t) - o.noise.vad_postspeech + 1);
    expected[t] = value;
  }
  std::vector<int64_t> changes{0};
  for (int64_t v : expected)
    if (v != changes.back()) changes.push_back(v);
  // Silence, speech, silence, ... (a reader's own pauses add turns),
  // ending in the last pause.
  ASSERT_GE(changes.size(), 5u);
  ASSERT_EQ(changes.size() % 2, 1u);
  for (size_t i = 1; i < changes.size(); ++i) {
    if (i % 2) EXPECT_EQ(changes[i], -1) << i;
    else EXPECT_GT(changes[i], i > 2 ? changes[i - 2] : 0) << i;
  }
  EXPECT_GT(changes.back(), static_cast<int64_t>(learn.size()) - 300)
      << "the last 2 s pause, with the reading's own quiet end";

  StreamingFeatureExtractor ex(o, *cpu);
  EXPECT_EQ(ex.vad_silence_start(), 0);
  const std::vector<size_t> sizes = random_sizes(24, 2000);
  std::vector<int64_t> seen{ex.vad_silence_start()};
  FeatureMatrix out;
  size_t pos = 0, k = 0;
  while (pos < audio.size()) {
    const size_t n = std::min(sizes[k++ % sizes.size()], audio.size() - pos);
    ex.accept(audio.data() + pos, n, out);
    pos += n;
    if (ex.vad_silence_start() != seen.back()) seen.push_back(ex.vad_silence_start());
  }
  EXPECT_EQ(seen, changes);
  ex.reset();
  EXPECT_EQ(ex.vad_silence_start(), 0) << "a new utterance starts in silence";

  // Without the detector (live CMN learning from every frame): always -1.
  FeatureOptions every = o;
  every.norm.live_from_speech = false;
  StreamingFeatureExtractor plain(every, *cpu);
  plain.accept(audio.data(), audio.size(), out);
  EXPECT_EQ(plain.vad_silence_start(), -1);
}

// GPU backends: streaming matches the whole utterance on the same backend
// (not bitwise: block sizes may change the GEMM's summation order).
TEST(StreamExtractor, OtherBackendsMatchWholeUtterance) {
  for (const std::string& name : testing::backends_under_test()) {
    if (name == "cpu") continue;
    BackendPtr be = open_backend(name);
    for (const Case& c : cases()) {
      const std::vector<float> audio = noise(24000, 21);
      const FeatureMatrix ref = compute_features(c.opts, *be, audio.data(), audio.size());
      StreamingFeatureExtractor ex(c.opts, *be);
      const FeatureMatrix got = stream(ex, audio, random_sizes(8, 3000));
      ASSERT_EQ(got.rows, ref.rows) << name << " " << c.name;
      EXPECT_LE(max_rel_diff(got, ref), 1e-4) << name << " " << c.name;
    }
  }
}

}  // namespace
}  // namespace gpuspeech
