// Sphinx-flavour MFCC against sphinx_fe (sphinxbase-utils), the reference
// no one here wrote: every coefficient of every frame within 1e-3 absolute,
// on every usable backend. The reference files come from
// tests/data/sphinx_fe/generate.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

using testing::audio_dir;
using testing::data_dir;

// A sphinx_fe .mfc file: int32 float count, then the floats, in either byte
// order (the count tells which).
std::vector<float> read_mfc(const std::string& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path);
  if (bytes.size() < 4) throw std::runtime_error(path + ": too short");
  uint32_t count;
  std::memcpy(&count, bytes.data(), 4);
  const size_t n = (bytes.size() - 4) / 4;
  bool swap = false;
  if (count != n) {
    count = __builtin_bswap32(count);
    swap = true;
    if (count != n) throw std::runtime_error(path + ": count does not match size");
  }
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + 4 + 4 * i, 4);
    if (swap) v = __builtin_bswap32(v);
    std::memcpy(&out[i], &v, 4);
  }
  return out;
}

FeatureOptions en_us() {
  // The en-us model's feat.params, as sphinx_fe ran with it.
  return FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
}

struct Case {
  std::string name;
  std::string audio;  // relative to audio_dir(), or absolute
  std::string reference;
  FeatureOptions opts;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::string ref = data_dir() + "/sphinx_fe/";
  out.push_back({"goforward", audio_dir() + "/goforward.raw", ref + "goforward.mfc", en_us()});
  for (const char* id : {"0870", "0880", "0890", "0920", "0930"}) {
    const std::string base = std::string("sense_and_sensibility_01_austen_64kb-") + id;
    out.push_back({"librivox-" + std::string(id), audio_dir() + "/librivox/" + base + ".wav",
                   ref + base + ".mfc", en_us()});
  }
  FeatureOptions k8 = en_us();
  k8.frame.sample_rate = 8000;
  k8.frame.fft_size = 256;
  k8.mel.num_filters = 31;
  k8.mel.low_freq = 200;
  k8.mel.high_freq = 3500;
  out.push_back({"goforward-8k", ref + "goforward-8k.raw", ref + "goforward-8k.mfc", k8});
  FeatureOptions legacy = en_us();
  legacy.mfcc.transform = CepstralTransform::kSphinxLegacy;
  legacy.mfcc.lifter = 0;
  out.push_back({"goforward-legacy", audio_dir() + "/goforward.raw",
                 ref + "goforward-legacy.mfc", legacy});
  return out;
}

AudioData load(const Case& c) {
  if (c.audio.size() > 4 && c.audio.substr(c.audio.size() - 4) == ".raw")
    return read_raw_s16le_file(c.audio, static_cast<int>(c.opts.frame.sample_rate));
  return read_wav_file(c.audio);
}

TEST(SphinxReference, MatchesSphinxFeOnEveryBackend) {
  const std::vector<std::string> backends = testing::backends_under_test();
  for (const Case& c : cases()) {
    AudioData audio = load(c);
    ASSERT_EQ(audio.sample_rate, static_cast<int>(c.opts.frame.sample_rate)) << c.name;
    const std::vector<float> ref = read_mfc(c.reference);
    const int dim = c.opts.mfcc.num_ceps;
    ASSERT_EQ(ref.size() % dim, 0u) << c.name;
    for (const std::string& name : backends) {
      SCOPED_TRACE(c.name + " on " + name);
      BackendPtr backend = open_backend(name);
      FeatureMatrix m = compute_features(c.opts, *backend, audio.samples.data(),
                                         static_cast<int64_t>(audio.samples.size()));
      ASSERT_EQ(m.dim, dim);
      ASSERT_EQ(static_cast<size_t>(m.rows), ref.size() / dim) << "frame count";
      double worst = 0;
      int64_t worst_at = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        const double err = std::fabs(static_cast<double>(m.data[i]) - ref[i]);
        if (!(err <= worst)) {
          worst = err;
          worst_at = static_cast<int64_t>(i);
        }
      }
      EXPECT_LE(worst, 1e-3) << "worst at frame " << worst_at / dim << " coefficient "
                             << worst_at % dim << ": ours " << m.data[worst_at]
                             << ", sphinx_fe " << ref[worst_at];
      std::printf("[ %s / %s ] %lld frames, max |error| %.2e (frame %lld, c%lld)\n", c.name.c_str(),
                  name.c_str(), static_cast<long long>(m.rows), worst,
                  static_cast<long long>(worst_at / dim), static_cast<long long>(worst_at % dim));
    }
  }
}

}  // namespace
}  // namespace gpuspeech
