// Sphinx noise removal and silence removal (sphinx_noise.h) against
// sphinx_fe run with its defaults (-remove_noise yes -remove_silence yes),
// the reference no one here wrote: the same frames kept, every coefficient
// within 1e-3 absolute, on every usable backend. The goforward case is
// checked against the goforward.mfc that pocketsphinx-testdata ships; the
// others come from tests/data/sphinx_fe/generate.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_writer.h"
#include "common/features/sphinx_noise.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

using testing::audio_dir;
using testing::data_dir;

// The en-us model's feat.params with sphinx_fe's default noise and silence
// removal (Debian sphinxbase 0.8+5prealpha+1: -vad_threshold 2.0
// -vad_prespeech 20 -vad_postspeech 50 -vad_startspeech 10).
FeatureOptions en_us_defaults() {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.noise.remove_noise = true;
  o.noise.remove_silence = true;
  o.noise.vad_threshold = 2.0f;
  o.noise.vad_prespeech = 20;
  o.noise.vad_postspeech = 50;
  o.noise.vad_startspeech = 10;
  return o;
}

struct Case {
  std::string name;
  std::string audio;
  std::string reference;
  FeatureOptions opts;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::string ref = data_dir() + "/sphinx_fe/";
  const std::string gf = audio_dir() + "/goforward.raw";
  // What pocketsphinx-testdata ships: sphinx_fe -argfile en-us/feat.params.
  out.push_back({"goforward-shipped", gf, audio_dir() + "/goforward.mfc", en_us_defaults()});
  out.push_back({"goforward", gf, ref + "goforward.nr.mfc", en_us_defaults()});
  for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
    const std::string base = std::string("sense_and_sensibility_01_austen_64kb-") + id;
    out.push_back({"librivox-" + std::string(id), audio_dir() + "/librivox/" + base + ".wav",
                   ref + base + ".nr.mfc", en_us_defaults()});
  }
  // The VAD ending and starting speech several times (see padded_goforward).
  out.push_back({"goforward-padded", "padded", ref + "goforward-padded.nr.mfc", en_us_defaults()});
  // feat-noise-only.params: noise removal, every frame kept.
  FeatureOptions noise_only = en_us_defaults();
  noise_only.noise.remove_silence = false;
  out.push_back({"goforward-noise-only", gf, ref + "goforward-noise-only.mfc", noise_only});
  // feat-vad.params: silence removal alone with a livelier VAD.
  FeatureOptions vad = en_us_defaults();
  vad.noise.remove_noise = false;
  vad.noise.vad_threshold = 1.5f;
  vad.noise.vad_prespeech = 8;
  vad.noise.vad_postspeech = 15;
  vad.noise.vad_startspeech = 3;
  out.push_back({"goforward-vad", gf, ref + "goforward-vad.mfc", vad});
  return out;
}

AudioData load(const std::string& path) {
  if (path.size() > 4 && path.substr(path.size() - 4) == ".raw")
    return read_raw_s16le_file(path, 16000);
  return read_wav_file(path);
}

// generate.sh's "padded" recording: faint noise, goforward, digital silence,
// noise, and goforward's first 1.5 s. The noise is the LCG
// x = (1103515245 x + 12345) mod 2^31 from x = 12345, sample
// ((x >> 16) mod 61) - 30, exactly as generate.sh writes it.
std::vector<float> padded_goforward() {
  const std::vector<float> gf = load(audio_dir() + "/goforward.raw").samples;
  uint32_t state = 12345;
  std::vector<float> out;
  auto noise = [&](int n) {
    for (int i = 0; i < n; ++i) {
      state = (1103515245u * state + 12345u) & 0x7fffffffu;
      out.push_back(static_cast<float>(static_cast<int>((state >> 16) % 61) - 30));
    }
  };
  noise(19200);
  out.insert(out.end(), gf.begin(), gf.end());
  out.insert(out.end(), 4800, 0.0f);
  noise(11200);
  out.insert(out.end(), gf.begin(), gf.begin() + 24000);
  return out;
}

TEST(SphinxNoise, MatchesSphinxFeDefaultsOnEveryBackend) {
  const std::vector<std::string> backends = testing::backends_under_test();
  for (const Case& c : cases()) {
    AudioData audio;
    if (c.audio == "padded") {
      audio.samples = padded_goforward();
      audio.sample_rate = 16000;
    } else {
      audio = load(c.audio);
    }
    ASSERT_EQ(audio.sample_rate, 16000) << c.name;
    const int dim = c.opts.mfcc.num_ceps;
    const FeatureMatrix ref = read_sphinx_mfc(c.reference, dim);
    for (const std::string& name : backends) {
      SCOPED_TRACE(c.name + " on " + name);
      BackendPtr backend = open_backend(name);
      FeatureExtractor fx(c.opts, *backend);
      const int64_t n = static_cast<int64_t>(audio.samples.size());
      const FeatureMatrix m = fx.compute(audio.samples.data(), n);
      ASSERT_EQ(m.dim, dim);
      ASSERT_EQ(m.rows, ref.rows) << "frames kept (of " << fx.num_frames(n) << ")";
      double worst = 0;
      size_t worst_at = 0;
      for (size_t i = 0; i < ref.data.size(); ++i) {
        const double err = std::fabs(static_cast<double>(m.data[i]) - ref.data[i]);
        if (!(err <= worst)) {
          worst = err;
          worst_at = i;
        }
      }
      EXPECT_LE(worst, 1e-3) << "worst at frame " << worst_at / dim << " c" << worst_at % dim
                             << ": ours " << m.data[worst_at] << ", sphinx_fe "
                             << ref.data[worst_at];
      std::printf("[ %s / %s ] %lld of %lld frames kept, max |error| %.2e (frame %zu, c%zu)\n",
                  c.name.c_str(), name.c_str(), static_cast<long long>(m.rows),
                  static_cast<long long>(fx.num_frames(n)), worst, worst_at / dim,
                  worst_at % dim);
    }
  }
}

// A VAD with small counts, fed by hand: startspeech 2, prespeech 1 (a ring
// of 2 frames), postspeech 2.
TEST(SphinxVad, HangoverAndPreSpeechRing) {
  NoiseOptions o;
  o.vad_startspeech = 2;
  o.vad_prespeech = 1;
  o.vad_postspeech = 2;
  SphinxVad vad(o);
  EXPECT_EQ(vad.held_frames_max(), 2);
  // frame:  0  1  2  3  4  5  6  7  8  9  10 11 12
  // speech: n  s  n  n  s  s  s  n  s  n  n  s  s
  const bool speech[] = {false, true, false, false, true, true, true,
                         false, true, false, false, true, true};
  std::vector<std::vector<int64_t>> released;
  std::vector<bool> state;
  for (bool s : speech) {
    std::vector<int64_t> keep;
    vad.push(s, keep);
    released.push_back(keep);
    state.push_back(vad.in_speech());
  }
  EXPECT_EQ(state, (std::vector<bool>{false, false, false, false, false, true, true, true,
                                      true, true, false, false, true}));
  // 0-3: silence, no two speech frames in a row: nothing released.
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(released[t].empty()) << t;
  // 5 completes two in a row: the ring (frames 4, 5) is released.
  EXPECT_TRUE(released[4].empty());
  EXPECT_EQ(released[5], (std::vector<int64_t>{4, 5}));
  // In speech every frame passes, one non-speech frame is tolerated...
  EXPECT_EQ(released[6], (std::vector<int64_t>{6}));
  EXPECT_EQ(released[7], (std::vector<int64_t>{7}));
  EXPECT_EQ(released[8], (std::vector<int64_t>{8}));
  EXPECT_EQ(released[9], (std::vector<int64_t>{9}));
  // ...the second in a row ends speech and is itself dropped.
  EXPECT_TRUE(released[10].empty());
  // 11 is held, 12 starts speech again with ring {11, 12}.
  EXPECT_TRUE(released[11].empty());
  EXPECT_EQ(released[12], (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(vad.held_frames(), 0);
  EXPECT_EQ(vad.frames_seen(), 13);

  // The ring keeps only the newest prespeech + 1 frames, and the final
  // (fe_end_utt) frame releases only itself.
  vad.reset();
  EXPECT_EQ(vad.frames_seen(), 0);
  EXPECT_FALSE(vad.in_speech());
  o.vad_startspeech = 3;
  SphinxVad late(o);
  std::vector<int64_t> keep;
  late.push(false, keep);
  late.push(true, keep);
  late.push(true, keep);
  late.push_final(true, keep);
  EXPECT_EQ(keep, (std::vector<int64_t>{3}));
  SphinxVad early(o);
  keep.clear();
  for (int t = 0; t < 6; ++t) early.push(t >= 1, keep);
  EXPECT_EQ(keep, (std::vector<int64_t>{2, 3, 4, 5}));  // 1 fell out of the ring

  o.vad_postspeech = -1;
  EXPECT_THROW(SphinxVad bad(o), std::invalid_argument);
}

std::vector<float> random_bands(std::mt19937& gen, int frames, int bands) {
  // Log-uniform energies over six decades, like mel energies of speech.
  std::uniform_real_distribution<float> exponent(0.0f, 6.0f);
  std::vector<float> v(static_cast<size_t>(frames) * bands);
  for (float& x : v) x = std::pow(10.0f, exponent(gen));
  return v;
}

TEST(SphinxNoiseRemover, OffPassesThroughAndSilenceOnlyKeepsEnergies) {
  std::mt19937 gen(7);
  const int bands = 25, frames = 40;
  const std::vector<float> in = random_bands(gen, frames, bands);
  NoiseOptions off;
  SphinxNoiseRemover none(bands, off);
  NoiseOptions vad_only;
  vad_only.remove_silence = true;
  SphinxNoiseRemover vad(bands, vad_only);
  NoiseOptions nr;
  nr.remove_noise = true;
  SphinxNoiseRemover remover(bands, nr);
  int changed = 0;
  for (int t = 0; t < frames; ++t) {
    std::vector<float> a(in.begin() + t * bands, in.begin() + (t + 1) * bands);
    std::vector<float> b = a, c = a;
    EXPECT_TRUE(none.process(a.data()));
    vad.process(b.data());
    EXPECT_TRUE(remover.process(c.data())) << "remove_silence off: always speech";
    for (int i = 0; i < bands; ++i) {
      EXPECT_EQ(a[i], in[t * bands + i]);
      EXPECT_EQ(b[i], in[t * bands + i]);
      // Gains stay within [1/20, 20].
      const float ratio = c[i] / in[t * bands + i];
      EXPECT_GE(ratio, 0.05f * (1 - 1e-6f));
      EXPECT_LE(ratio, 20.0f * (1 + 1e-6f));
      changed += c[i] != in[t * bands + i];
    }
  }
  EXPECT_GT(changed, frames * bands / 2);
  EXPECT_THROW(SphinxNoiseRemover(0, nr), std::invalid_argument);
}

// The first frame initialises the trackers with power = E, noise = floor =
// E / 20 and no peak, so its gains follow in closed form: power = E,
// noise = 0.995 E/20 + 0.005 E, signal = max(1, power - noise), floor =
// 0.995 E/20 + 0.005 signal, no masking, gain = max(signal, floor) / E.
TEST(SphinxNoiseRemover, FirstFrameInClosedForm) {
  const int bands = 12;
  std::vector<float> e(bands);
  for (int i = 0; i < bands; ++i) e[i] = 50.0f * (i + 1) * (i % 3 + 1);
  NoiseOptions o;
  o.remove_noise = true;
  SphinxNoiseRemover r(bands, o);
  std::vector<float> got = e;
  r.process(got.data());
  std::vector<double> gain(bands);
  for (int i = 0; i < bands; ++i) {
    const double E = e[i];
    const double noise = 0.995 * E / 20 + 0.005 * E;
    const double signal = std::max(1.0, E - noise);
    const double floor = 0.995 * E / 20 + 0.005 * signal;
    gain[i] = std::min(20.0, std::max(0.05, std::max(signal, floor) / E));
  }
  for (int i = 0; i < bands; ++i) {
    const int lo = std::max(0, i - 4), hi = std::min(bands - 1, i + 4);
    double g = 0;
    for (int j = lo; j <= hi; ++j) g += gain[j];
    EXPECT_NEAR(got[i], e[i] * g / (hi - lo + 1), 1e-6 * e[i]) << i;
  }
}

// NoiseOptions::start_at_first_sound: digital silence before a stream's
// first sound leaves the trackers unset (the zeros pass as they are, as
// non-speech), so the stream behaves as if it began at the sound; and the
// noise estimate starts at that sound's energy, so that noise alone after
// the zeros is not taken for speech, which the default start (energy / 20,
// 0 after zeros, rising at 0.5 % a frame) does for many frames.
TEST(SphinxNoiseRemover, StartAtFirstSoundSkipsDigitalSilence) {
  const int bands = 25, zeros = 30, frames = 120;
  std::mt19937 gen(11);
  // Steady noise: every band within +-30 % of its own level.
  std::uniform_real_distribution<float> jitter(0.7f, 1.3f);
  std::vector<float> noise(static_cast<size_t>(frames) * bands);
  for (int t = 0; t < frames; ++t)
    for (int i = 0; i < bands; ++i) noise[t * bands + i] = 1e4f * (i + 1) * jitter(gen);
  NoiseOptions first_sound;
  first_sound.remove_noise = true;
  first_sound.start_at_first_sound = true;
  NoiseOptions first_frame = first_sound;
  first_frame.start_at_first_sound = false;

  SphinxNoiseRemover after_zeros(bands, first_sound), alone(bands, first_sound), sphinx(bands, first_frame);
  std::vector<float> zero(bands, 0.0f);
  for (int t = 0; t < zeros; ++t) {
    std::vector<float> a = zero, c = zero;
    EXPECT_FALSE(after_zeros.process(a.data())) << t;
    EXPECT_EQ(a, zero) << t;
    sphinx.process(c.data());
  }
  int speech_first_sound = 0, speech_sphinx = 0;
  for (int t = 0; t < frames; ++t) {
    std::vector<float> a(noise.begin() + t * bands, noise.begin() + (t + 1) * bands);
    std::vector<float> b = a, c = a;
    const bool sa = after_zeros.process(a.data());
    const bool sb = alone.process(b.data());
    EXPECT_EQ(sa, sb) << t;
    EXPECT_EQ(a, b) << "the zeros before changed nothing, frame " << t;
    speech_first_sound += sa;
    speech_sphinx += sphinx.process(c.data());
  }
  // From 0 the default estimate reaches E / e^2 (the detector's threshold,
  // ln(power / noise) = 2) after k frames with 1 - 0.995^k = 0.135: k = 29.
  EXPECT_LE(speech_first_sound, 6);
  EXPECT_GE(speech_sphinx, 20);
}

// compute_device carries the trackers from call to call: an utterance cut
// in two blocks gives what compute() gives in one.
TEST(SphinxNoise, StateCarriesAcrossComputeDeviceCalls) {
  const AudioData audio = load(audio_dir() + "/goforward.raw");
  FeatureOptions o = en_us_defaults();
  o.noise.remove_silence = false;
  BackendPtr cpu = open_backend("cpu");
  FeatureExtractor fx(o, *cpu);
  const int64_t n = static_cast<int64_t>(audio.samples.size());
  const FeatureMatrix whole = fx.compute(audio.samples.data(), n);
  ASSERT_GT(whole.rows, 100);

  fx.reset_noise_state();
  BufferPtr signal = cpu->alloc(static_cast<size_t>(n));
  cpu->upload(*signal, audio.samples.data(), static_cast<size_t>(n));
  const int64_t split = 100;
  std::vector<float> got;
  std::vector<uint8_t> flags;
  for (int part = 0; part < 2; ++part) {
    FramingSpec spec = fx.framing_for(1, n, n);
    spec.first_frame_offset = part == 0 ? 0 : split * fx.frame_shift();
    spec.frames_per_utt = part == 0 ? split : whole.rows - split;
    BufferPtr out = cpu->alloc(static_cast<size_t>(spec.frames_per_utt) * whole.dim);
    fx.compute_device(*signal, spec, *out);
    std::vector<float> block(out->size());
    cpu->download(*out, block.data(), block.size());
    got.insert(got.end(), block.begin(), block.end());
    flags.insert(flags.end(), fx.speech_flags().begin(), fx.speech_flags().end());
  }
  ASSERT_EQ(got.size(), whole.data.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], whole.data[i]) << i;
  EXPECT_EQ(flags.size(), static_cast<size_t>(whole.rows));

  // Batches of utterances cannot share one tracker.
  FramingSpec batch = fx.framing_for(2, 4000, 4000);
  BufferPtr out = cpu->alloc(static_cast<size_t>(batch.rows()) * whole.dim);
  EXPECT_THROW(fx.compute_device(*signal, batch, *out), std::invalid_argument);
}

TEST(SphinxNoise, OptionsAreChecked) {
  BackendPtr cpu = open_backend("cpu");
  FeatureOptions plp = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kPlp);
  plp.noise.remove_noise = true;
  EXPECT_THROW(plp.validate(), std::invalid_argument);
  FeatureOptions o = en_us_defaults();
  o.noise.vad_startspeech = 40000;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = en_us_defaults();
  o.noise.vad_threshold = NAN;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = en_us_defaults();
  o.mel.vtln.low_cutoff = 300;
  o.mel.vtln.high_cutoff = 5000;
  EXPECT_THROW(FeatureExtractor(o, *cpu, {0.9f, 1.0f}), std::invalid_argument);
  // Off by default: the plain Sphinx MFCC keeps every frame.
  const FeatureOptions plain = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  EXPECT_FALSE(plain.noise.remove_noise);
  EXPECT_FALSE(plain.noise.remove_silence);
  EXPECT_FALSE(FeatureExtractor(plain, *cpu).has_noise_stage());
}

}  // namespace
}  // namespace gpuspeech
