// Kaldi-flavour MFCC and fbank against torchaudio.compliance.kaldi, the
// reference no one here wrote: every value of every frame within 1e-3
// relative, on every usable backend.
//
// The configurations (torchaudio keyword arguments) are read from
// tests/data/kaldi/configs.txt, the same file gen_kaldi_refs.py ran
// torchaudio with; the references are that script's .f32 files. "Relative"
// is |ours - ref| <= 1e-3 * max(|ref|, 1): log energies and cepstra near 0
// are compared to the unit of the log domain rather than to themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
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

constexpr double kRelTol = 1e-3;

struct Config {
  std::string name;
  FeatureKind kind = FeatureKind::kMfcc;
  std::map<std::string, std::string> args;  // torchaudio keyword -> value
};

std::vector<Config> read_configs(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<Config> out;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    Config c;
    std::string kind;
    if (!(fields >> c.name)) continue;
    if (!(fields >> kind)) throw std::runtime_error(path + ": " + c.name + ": no kind");
    c.kind = parse_feature_kind(kind);
    std::string item;
    while (fields >> item) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) throw std::runtime_error(path + ": bad item " + item);
      c.args[item.substr(0, eq)] = item.substr(eq + 1);
    }
    out.push_back(c);
  }
  return out;
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  throw std::runtime_error(key + ": expected true or false, got " + v);
}

// FeatureOptions for torchaudio's keyword arguments, starting from our Kaldi
// defaults (which must equal torchaudio's for every keyword not given). A
// keyword this mapping does not know fails the test rather than being
// silently ignored.
FeatureOptions options_for(const Config& c) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kKaldi, c.kind);
  for (const auto& [key, v] : c.args) {
    const double x = std::atof(v.c_str());
    if (key == "dither") o.frame.dither = static_cast<float>(x);
    else if (key == "frame_length") o.frame.frame_length_ms = static_cast<float>(x);
    else if (key == "frame_shift") o.frame.frame_shift_ms = static_cast<float>(x);
    else if (key == "sample_frequency") o.frame.sample_rate = static_cast<float>(x);
    else if (key == "preemphasis_coefficient") o.frame.preemphasis = static_cast<float>(x);
    else if (key == "remove_dc_offset") o.frame.remove_dc = parse_bool(key, v);
    else if (key == "snip_edges") o.frame.snip_edges = parse_bool(key, v);
    else if (key == "window_type") o.frame.window = parse_window(v);
    else if (key == "num_mel_bins") o.mel.num_filters = std::atoi(v.c_str());
    else if (key == "low_freq") o.mel.low_freq = static_cast<float>(x);
    else if (key == "high_freq") o.mel.high_freq = static_cast<float>(x);
    else if (key == "use_power") o.mel.use_power = parse_bool(key, v);
    else if (key == "vtln_warp") o.mel.vtln.warp = static_cast<float>(x);
    else if (key == "vtln_low") o.mel.vtln.low_cutoff = static_cast<float>(x);
    else if (key == "vtln_high") o.mel.vtln.high_cutoff = static_cast<float>(x);
    else if (key == "num_ceps") o.mfcc.num_ceps = std::atoi(v.c_str());
    else if (key == "cepstral_lifter") o.mfcc.lifter = std::atoi(v.c_str());
    else if (key == "use_energy") o.mfcc.use_energy = parse_bool(key, v);
    else if (key == "energy_floor") o.mfcc.energy_floor = static_cast<float>(x);
    else
      throw std::runtime_error(c.name + ": torchaudio keyword '" + key +
                               "' has no mapping in test_kaldi_reference.cpp");
  }
  return o;
}

struct Reference {
  int rows = 0, cols = 0;
  std::vector<float> data;
};

Reference read_reference(const std::string& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path);
  Reference r;
  if (bytes.size() < 12 || std::memcmp(bytes.data(), "GSKR", 4) != 0)
    throw std::runtime_error(path + ": not a GSKR reference file");
  std::memcpy(&r.rows, bytes.data() + 4, 4);
  std::memcpy(&r.cols, bytes.data() + 8, 4);
  const size_t n = static_cast<size_t>(r.rows) * r.cols;
  if (r.rows < 0 || r.cols <= 0 || bytes.size() != 12 + 4 * n)
    throw std::runtime_error(path + ": size does not match its header");
  r.data.resize(n);
  std::memcpy(r.data.data(), bytes.data() + 12, 4 * n);
  return r;
}

struct Utterance {
  std::string name;
  std::string path;
};

const std::vector<Utterance>& utterances() {
  static const std::vector<Utterance> u = {
      {"goforward", audio_dir() + "/goforward.raw"},
      {"librivox-0880", audio_dir() + "/librivox/sense_and_sensibility_01_austen_64kb-0880.wav"},
      {"librivox-0930", audio_dir() + "/librivox/sense_and_sensibility_01_austen_64kb-0930.wav"},
  };
  return u;
}

AudioData load(const std::string& path) {
  if (path.size() > 4 && path.substr(path.size() - 4) == ".raw")
    return read_raw_s16le_file(path, 16000);
  return read_wav_file(path);
}

TEST(KaldiReference, ConfigsMapToOptions) {
  const std::vector<Config> configs = read_configs(data_dir() + "/kaldi/configs.txt");
  ASSERT_GE(configs.size(), 4u);
  for (const Config& c : configs) {
    SCOPED_TRACE(c.name);
    FeatureOptions o;
    ASSERT_NO_THROW(o = options_for(c));
    EXPECT_NO_THROW(o.validate());
  }
}

TEST(KaldiReference, MatchesTorchaudioOnEveryBackend) {
  const std::vector<std::string> backends = testing::backends_under_test();
  const std::vector<Config> configs = read_configs(data_dir() + "/kaldi/configs.txt");
  for (const Utterance& u : utterances()) {
    const AudioData audio = load(u.path);
    ASSERT_EQ(audio.sample_rate, 16000) << u.path;
    for (const Config& c : configs) {
      const FeatureOptions opts = options_for(c);
      const Reference ref =
          read_reference(data_dir() + "/kaldi/" + c.name + "__" + u.name + ".f32");
      for (const std::string& bname : backends) {
        SCOPED_TRACE(c.name + " / " + u.name + " on " + bname);
        BackendPtr backend = open_backend(bname);
        FeatureMatrix m = compute_features(opts, *backend, audio.samples.data(),
                                           static_cast<int64_t>(audio.samples.size()));
        ASSERT_EQ(m.dim, ref.cols) << "feature dimension";
        ASSERT_EQ(m.rows, ref.rows) << "frame count";
        double worst = 0.0;  // error / allowed
        size_t worst_at = 0, failures = 0;
        for (size_t i = 0; i < ref.data.size(); ++i) {
          const double r = ref.data[i];
          const double err = std::fabs(static_cast<double>(m.data[i]) - r);
          const double ratio = err / (kRelTol * std::max(std::fabs(r), 1.0));
          if (!(ratio <= 1.0)) ++failures;
          if (!(ratio <= worst)) {
            worst = ratio;
            worst_at = i;
          }
        }
        EXPECT_EQ(failures, 0u)
            << failures << " of " << ref.data.size() << " values off; worst at frame "
            << worst_at / ref.cols << " column " << worst_at % ref.cols << ": ours "
            << m.data[worst_at] << ", torchaudio " << ref.data[worst_at];
        std::printf("[ %s / %s / %s ] %d x %d, max |error| / max(|ref|,1) = %.2e "
                    "(frame %zu, col %zu)\n",
                    c.name.c_str(), u.name.c_str(), bname.c_str(), ref.rows, ref.cols,
                    worst * kRelTol, worst_at / ref.cols, worst_at % ref.cols);
      }
    }
  }
}

}  // namespace
}  // namespace gpuspeech
