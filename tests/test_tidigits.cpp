// TIDIGITS with its own model and grammar (suite 'reference'), from
// pocketsphinx-testdata's tidigits/: a semi-continuous Sphinx-II model whose
// feat.params asks for the s2_4x four-stream features, -cmn current and
// -round_filters no; 31 utterances as 13-dim cepstra (*.mfc) with their
// references (tidigits.lsn) and pocketsphinx's own output on them
// (test-tidigits-fsg.match); one raw recording, dhd.2934z.raw.
//
//   - the model's front end: s2_4x, unrounded filters, streams that fit the
//     model's codebooks;
//   - the unrounded Sphinx filterbank against sphinx_fe -round_filters no
//     (tests/data/sphinx_fe/dhd.2934z.mfc, from generate.sh), on every
//     usable backend;
//   - the s2_4x layout against its definition in sphinxbase's feat.c;
//   - decoding every .mfc file with tidigits.fsg, scoring on the CPU backend
//     (and every other usable one, which must find the same words): word
//     error rate against tidigits.lsn no higher than pocketsphinx_batch's on
//     the same files (its shipped .match, and a fresh pocketsphinx_batch run
//     when the program is installed);
//   - dhd.2934z.raw decoded from audio.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_writer.h"
#include "common/features/mel_filterbank.h"
#include "common/model/acoustic_model.h"
#include "common/features/postprocess.h"
#include "common/engine/recognizer.h"
#include "common/features/stream_extractor.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

std::string tidigits() { return testing::audio_dir() + "/tidigits"; }
std::string hmm_dir() { return tidigits() + "/hmm"; }

bool have_file(const std::string& path) { return std::ifstream(path).good(); }

#define REQUIRE_TIDIGITS()                                                   \
  do {                                                                       \
    if (!have_file(hmm_dir() + "/mdef") || !have_file(tidigits() + "/tidigits.ctl")) \
      GTEST_SKIP() << "pocketsphinx-testdata's tidigits/ not installed";     \
  } while (0)

// ------------------------------------------------------------- front end

TEST(TidigitsFrontEnd, FeatParamsGiveS2_4xWithUnroundedFilters) {
  REQUIRE_TIDIGITS();
  const AcousticModel m = AcousticModel::load(hmm_dir());
  ASSERT_TRUE(m.has_feature_options());
  const FeatureOptions& o = m.feature_options();
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(o.delta.layout, DeltaOptions::Layout::kSphinxS2_4x);
  EXPECT_FALSE(o.mel.round_filters);
  EXPECT_EQ(o.mel.num_filters, 20);
  EXPECT_FLOAT_EQ(o.mel.low_freq, 1.0f);
  EXPECT_FLOAT_EQ(o.mel.high_freq, 4000.0f);
  EXPECT_EQ(o.frame.frame_length_samples(), 400);
  EXPECT_TRUE(o.frame.remove_dc);
  EXPECT_EQ(o.norm.cmn, NormOptions::Cmn::kBatch);  // -cmn current
  EXPECT_EQ(o.base_dim(), 13);
  EXPECT_EQ(o.output_dim(), 51);
  EXPECT_EQ(o.stream_dims(), (std::vector<int>{12, 24, 3, 12}));
  // The codebooks are over exactly these streams, in this order.
  const GaussianMixtures& g = m.mixtures();
  ASSERT_EQ(g.stream_components.size(), 4u);
  int next = 0;
  for (size_t t = 0; t < 4; ++t) {
    ASSERT_EQ(static_cast<int>(g.stream_components[t].size()), o.stream_dims()[t]);
    for (int c : g.stream_components[t]) EXPECT_EQ(c, next++);
  }
}

// The tidigits front end's spectral stage (no CMN, no deltas, no dither:
// what sphinx_fe writes) on dhd.2934z.raw.
FeatureOptions tidigits_cepstra_options() {
  FeatureOptions o = AcousticModel::load(hmm_dir()).feature_options();
  o.frame.dither = 0.0f;
  o.norm.cmn = NormOptions::Cmn::kNone;
  o.norm.cmn_init.clear();
  o.delta.layout = DeltaOptions::Layout::kNone;
  return o;
}

struct Worst {
  double error = 0.0;
  int64_t at = 0;
};

Worst worst_error(const FeatureMatrix& ours, const FeatureMatrix& ref) {
  Worst w;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    const double e = std::fabs(static_cast<double>(ours.data[i]) - ref.data[i]);
    if (!(e <= w.error)) {
      w.error = e;
      w.at = static_cast<int64_t>(i);
    }
  }
  return w;
}

TEST(TidigitsFrontEnd, UnroundedFilterbankMatchesSphinxFe) {
  REQUIRE_TIDIGITS();
  const std::string raw = tidigits() + "/dhd.2934z.raw";
  const std::string ref_path = testing::data_dir() + "/sphinx_fe/dhd.2934z.mfc";
  const AudioData audio = read_raw_s16le_file(raw, 16000);
  const FeatureMatrix ref = read_sphinx_mfc(ref_path, 13);
  const FeatureOptions opts = tidigits_cepstra_options();
  for (const std::string& name : testing::backends_under_test()) {
    SCOPED_TRACE(name);
    BackendPtr backend = open_backend(name);
    const FeatureMatrix m = compute_features(opts, *backend, audio.samples.data(),
                                             static_cast<int64_t>(audio.samples.size()));
    ASSERT_EQ(m.dim, 13);
    ASSERT_EQ(m.rows, ref.rows) << "frame count";
    const Worst w = worst_error(m, ref);
    EXPECT_LE(w.error, 1e-3) << "frame " << w.at / 13 << " c" << w.at % 13 << ": ours "
                             << m.data[w.at] << ", sphinx_fe " << ref.data[w.at];
    std::printf("[ dhd.2934z / %s ] %lld frames, max |error| %.2e against sphinx_fe "
                "-round_filters no\n",
                name.c_str(), static_cast<long long>(m.rows), w.error);
  }
  // The option matters on this configuration: rounded edges are far off.
  FeatureOptions rounded = opts;
  rounded.mel.round_filters = true;
  BackendPtr cpu = open_backend("cpu");
  const FeatureMatrix r = compute_features(rounded, *cpu, audio.samples.data(),
                                           static_cast<int64_t>(audio.samples.size()));
  ASSERT_EQ(r.rows, ref.rows);
  const Worst w = worst_error(r, ref);
  EXPECT_GT(w.error, 1e-2) << "rounded and unrounded filters give the same cepstra";
  std::printf("[ dhd.2934z / cpu, rounded filters ] max |error| %.2e\n", w.error);
}

TEST(TidigitsFrontEnd, UnroundedFilterEdgesAreTheMelSpacedOnes) {
  // Filter i spans mel edges i and i + 2 exactly: its weight at a bin is
  // the unit-area triangle over those unrounded frequencies.
  MelOptions mel;
  mel.num_filters = 20;
  mel.low_freq = 1.0f;
  mel.high_freq = 4000.0f;
  mel.round_filters = false;
  const int fft = 512, bins = fft / 2 + 1;
  const float rate = 16000.0f;
  const std::vector<float> fb = mel_filterbank(mel, fft, rate, 1.0f);
  const double lo = mel_sphinx(1.0), hi = mel_sphinx(4000.0), step = (hi - lo) / 21.0;
  for (int i = 0; i < 20; ++i) {
    const double f0 = mel_sphinx_inverse(lo + i * step);
    const double f1 = mel_sphinx_inverse(lo + (i + 1) * step);
    const double f2 = mel_sphinx_inverse(lo + (i + 2) * step);
    for (int b = 0; b < bins; ++b) {
      const double hz = b * rate / fft;
      double want = 0.0;
      if (hz >= f0 && hz <= f2)
        want = std::min((hz - f0) / (f1 - f0), (f2 - hz) / (f2 - f1)) * 2.0 / (f2 - f0);
      EXPECT_NEAR(fb[static_cast<size_t>(i) * bins + b], want, 1e-6 + 1e-4 * want)
          << "filter " << i << " bin " << b;
    }
  }
  // Rounded, the first filter's left edge (1 Hz) snaps to bin 0.
  mel.round_filters = true;
  const std::vector<float> rounded = mel_filterbank(mel, fft, rate, 1.0f);
  EXPECT_NE(rounded, fb);
}

// ------------------------------------------------------------- s2_4x layout

// sphinxbase's feat_s2_4x_cep2feat on a buffer padded with 4 copies of the
// first and last frame (as feat_s2mfc2feat_live pads an utterance).
std::vector<float> s2_4x_by_definition(const FeatureMatrix& c) {
  const int64_t n = c.rows;
  std::vector<std::vector<float>> pad;
  for (int k = 0; k < 4; ++k) pad.emplace_back(c.row(0), c.row(0) + 13);
  for (int64_t t = 0; t < n; ++t) pad.emplace_back(c.row(t), c.row(t) + 13);
  for (int k = 0; k < 4; ++k) pad.emplace_back(c.row(n - 1), c.row(n - 1) + 13);
  std::vector<float> out;
  for (int64_t t = 0; t < n; ++t) {
    const auto m = [&](int dt) -> const std::vector<float>& { return pad[t + 4 + dt]; };
    std::vector<float> cep, dcep, pow, d2cep;
    for (int i = 1; i < 13; ++i) cep.push_back(m(0)[i]);
    for (int i = 1; i < 13; ++i) dcep.push_back(m(2)[i] - m(-2)[i]);
    for (int i = 1; i < 13; ++i) dcep.push_back(m(4)[i] - m(-4)[i]);
    pow = {m(0)[0], m(2)[0] - m(-2)[0], (m(3)[0] - m(-1)[0]) - (m(1)[0] - m(-3)[0])};
    for (int i = 1; i < 13; ++i) d2cep.push_back((m(3)[i] - m(-1)[i]) - (m(1)[i] - m(-3)[i]));
    for (const auto* s : {&cep, &dcep, &pow, &d2cep}) out.insert(out.end(), s->begin(), s->end());
  }
  return out;
}

FeatureMatrix random_cepstra(int64_t rows, unsigned seed) {
  FeatureMatrix c;
  c.rows = rows;
  c.dim = 13;
  uint32_t state = seed;
  for (int64_t i = 0; i < rows * 13; ++i) {
    state = state * 1664525u + 1013904223u;
    c.data.push_back(static_cast<float>((state >> 8) % 20001) / 1000.0f - 10.0f);
  }
  return c;
}

TEST(S2_4x, MatchesSphinxDefinitionIncludingEdges) {
  DeltaOptions d;
  d.layout = DeltaOptions::Layout::kSphinxS2_4x;
  EXPECT_EQ(delta_context(d), 4);
  for (int64_t rows : {1, 2, 5, 9, 40}) {
    SCOPED_TRACE(rows);
    const FeatureMatrix c = random_cepstra(rows, static_cast<unsigned>(rows));
    const FeatureMatrix f = add_deltas(c, d);
    ASSERT_EQ(f.rows, rows);
    ASSERT_EQ(f.dim, 51);
    EXPECT_EQ(f.data, s2_4x_by_definition(c));
  }
}

TEST(S2_4x, ClosedFormOnAQuadraticTrajectory) {
  // c_i[t] = (i + 1) t^2 + i: away from the edges
  //   d2 = 8t(i + 1), d4 = 16t(i + 1), dd = 16(i + 1).
  FeatureMatrix c;
  c.rows = 20;
  c.dim = 13;
  for (int t = 0; t < 20; ++t)
    for (int i = 0; i < 13; ++i) c.data.push_back(static_cast<float>((i + 1) * t * t + i));
  DeltaOptions d;
  d.layout = DeltaOptions::Layout::kSphinxS2_4x;
  const FeatureMatrix f = add_deltas(c, d);
  for (int t = 4; t < 16; ++t) {
    const float* o = f.row(t);
    for (int i = 1; i < 13; ++i) {
      EXPECT_EQ(o[i - 1], c.row(t)[i]);
      EXPECT_EQ(o[12 + i - 1], 8.0f * t * (i + 1));
      EXPECT_EQ(o[24 + i - 1], 16.0f * t * (i + 1));
      EXPECT_EQ(o[39 + i - 1], 16.0f * (i + 1));
    }
    EXPECT_EQ(o[36], c.row(t)[0]);
    EXPECT_EQ(o[37], 8.0f * t);
    EXPECT_EQ(o[38], 16.0f);
  }
}

TEST(S2_4x, WindowedRowsEqualTheWholeUtterance) {
  // What the streaming extractor relies on: rows computed from a window
  // with delta_context() frames either side equal the whole-utterance rows.
  DeltaOptions d;
  d.layout = DeltaOptions::Layout::kSphinxS2_4x;
  const FeatureMatrix c = random_cepstra(30, 7);
  const FeatureMatrix whole = add_deltas(c, d);
  const int ctx = delta_context(d);
  for (int64_t first = 0; first < 30; first += 7) {
    const int64_t count = std::min<int64_t>(7, 30 - first);
    const int64_t w0 = std::max<int64_t>(0, first - ctx);
    const int64_t w1 = std::min<int64_t>(30, first + count + ctx);
    FeatureMatrix win;
    win.rows = w1 - w0;
    win.dim = 13;
    win.data.assign(c.row(w0), c.row(w0) + win.rows * 13);
    std::vector<float> out(static_cast<size_t>(count) * 51);
    add_deltas_rows(win, first - w0, count, d, out.data());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), whole.row(first))) << "rows from " << first;
  }
}

TEST(S2_4x, NeedsThirteenMfccCepstra) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.delta.layout = DeltaOptions::Layout::kSphinxS2_4x;
  EXPECT_NO_THROW(o.validate());
  o.mfcc.num_ceps = 12;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  FeatureOptions fb = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kFbank);
  fb.mel.num_filters = 13;
  fb.delta.layout = DeltaOptions::Layout::kSphinxS2_4x;
  EXPECT_THROW(fb.validate(), std::invalid_argument);
  DeltaOptions d;
  d.layout = DeltaOptions::Layout::kSphinxS2_4x;
  FeatureMatrix c;
  c.rows = 3;
  c.dim = 12;
  c.data.assign(36, 0.0f);
  EXPECT_THROW(add_deltas(c, d), std::invalid_argument);
}

TEST(S2_4x, StreamingEqualsTheWholeUtterance) {
  // The tidigits front end in a stream (live CMN, since -cmn current needs
  // the whole utterance): audio in uneven pieces gives the whole-utterance
  // frames, s2_4x's 4 frames of look-ahead included.
  REQUIRE_TIDIGITS();
  const AudioData audio = read_raw_s16le_file(tidigits() + "/dhd.2934z.raw", 16000);
  FeatureOptions o = AcousticModel::load(hmm_dir()).feature_options();
  o.frame.dither = 0.0f;
  o.norm.cmn = NormOptions::Cmn::kLive;
  BackendPtr cpu = open_backend("cpu");
  const FeatureMatrix whole = compute_features(o, *cpu, audio.samples.data(),
                                               static_cast<int64_t>(audio.samples.size()));
  ASSERT_EQ(whole.dim, 51);
  StreamingFeatureExtractor stream(o, *cpu);
  FeatureMatrix got;  // accept() and flush() append to it
  size_t at = 0, step = 1;
  while (at < audio.samples.size()) {
    const size_t n = std::min(step, audio.samples.size() - at);
    stream.accept(audio.samples.data() + at, n, got);
    at += n;
    step = step * 3 % 1999 + 1;
  }
  stream.flush(got);
  ASSERT_EQ(got.rows, whole.rows);
  EXPECT_EQ(got.data, whole.data);
}

// ------------------------------------------------------------- decoding

// "words (id)" or "words (id score)" lines -> id -> words.
std::map<std::string, std::vector<std::string>> read_trn(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::map<std::string, std::vector<std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    const size_t open = line.rfind('(');
    const size_t close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream id_words(line.substr(open + 1, close - open - 1));
    std::string id;
    id_words >> id;
    std::istringstream ws(line.substr(0, open));
    std::vector<std::string> words;
    std::string w;
    while (ws >> w) words.push_back(w);
    out[id] = words;
  }
  return out;
}

int edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

struct Score {
  int errors = 0;
  int words = 0;
  int missing = 0;  // utterances without a hypothesis
  double wer() const { return words > 0 ? 100.0 * errors / words : 0.0; }
};

Score score(const std::map<std::string, std::vector<std::string>>& ref,
            const std::map<std::string, std::vector<std::string>>& hyp) {
  Score s;
  for (const auto& [id, words] : ref) {
    s.words += static_cast<int>(words.size());
    const auto it = hyp.find(id);
    if (it == hyp.end()) {
      ++s.missing;
      s.errors += static_cast<int>(words.size());
    } else {
      s.errors += edit_distance(words, it->second);
    }
  }
  return s;
}

std::vector<std::string> read_ctl(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> ids;
  std::string id;
  while (in >> id) ids.push_back(id);
  return ids;
}

RecognizerConfig tidigits_config() {
  RecognizerConfig c;
  c.model_dir = hmm_dir();
  c.dictionary = tidigits() + "/lm/tidigits.dic";
  c.grammar_kind = GrammarKind::kFsg;
  c.grammar = tidigits() + "/lm/tidigits.fsg";
  c.scoring_backend = "cpu";
  c.search_backend = "cpu";
  c.cache_dir = "-";  // a small graph: compile it afresh
  return c;
}

// pocketsphinx_batch on the same files with the same model, grammar and
// dictionary (its defaults otherwise: -adcin no reads the cepstra), into
// `dir`; "" if the program is not installed or fails.
std::string run_pocketsphinx_batch(const std::string& dir) {
  if (std::system("command -v pocketsphinx_batch >/dev/null 2>&1") != 0) return "";
  const std::string hyp = dir + "/pocketsphinx.hyp";
  const std::string cmd = "pocketsphinx_batch -hmm '" + hmm_dir() + "' -dict '" + tidigits() +
                          "/lm/tidigits.dic' -fsg '" + tidigits() + "/lm/tidigits.fsg' -ctl '" +
                          tidigits() + "/tidigits.ctl' -cepdir '" + tidigits() +
                          "' -cepext .mfc -hyp '" + hyp + "' >'" + dir + "/pocketsphinx.log' 2>&1";
  if (std::system(cmd.c_str()) != 0) return "";
  return hyp;
}

// Decodes every utterance of the ctl file from its cepstra; prints the
// utterances that differ from the reference.
std::map<std::string, std::vector<std::string>> decode_all(
    Recognizer& rec, const std::vector<std::string>& ids,
    const std::map<std::string, std::vector<std::string>>& ref) {
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& id : ids) {
    const FeatureMatrix cep = read_sphinx_mfc(tidigits() + "/" + id + ".mfc", 13);
    const RecognitionResult r = rec.recognize_cepstra(cep.data.data(), cep.rows, cep.dim);
    EXPECT_TRUE(r.best.final_state) << id << ": no final state reached";
    std::vector<std::string> words;
    for (const HypothesisWord& w : r.best.words) words.push_back(w.text);
    out[id] = words;
    if (words != ref.at(id)) {
      std::string want;
      for (const std::string& w : ref.at(id)) want += (want.empty() ? "" : " ") + w;
      std::printf("  %s: ours \"%s\", reference \"%s\"\n", id.c_str(), r.text().c_str(),
                  want.c_str());
    }
  }
  return out;
}

TEST(Tidigits, FsgDecodingOfEveryUtteranceIsAsGoodAsPocketsphinx) {
  REQUIRE_TIDIGITS();
  const auto ref = read_trn(tidigits() + "/tidigits.lsn");
  const auto shipped = read_trn(tidigits() + "/test-tidigits-fsg.match");
  const std::vector<std::string> ids = read_ctl(tidigits() + "/tidigits.ctl");
  ASSERT_EQ(ids.size(), 31u);
  ASSERT_EQ(ref.size(), ids.size());
  const Score s_shipped = score(ref, shipped);
  EXPECT_EQ(s_shipped.missing, 0);

  char tmpl[] = "/tmp/gpuspeech-tidigits-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr) << "mkdtemp failed";
  const std::string fresh = run_pocketsphinx_batch(tmpl);
  Score s_fresh;
  if (fresh.empty()) {
    std::printf("pocketsphinx_batch not run (not installed or failed); compared with the "
                "shipped .match only\n");
  } else {
    s_fresh = score(ref, read_trn(fresh));
    std::printf("pocketsphinx_batch run now: %d errors (WER %.2f%%)\n", s_fresh.errors,
                s_fresh.wer());
    EXPECT_EQ(s_fresh.missing, 0);
  }
  { std::error_code ec; std::filesystem::remove_all(std::string(tmpl), ec); }

  // The CPU backend is the reference; every other usable scoring backend
  // must do as well.
  std::vector<std::string> backends = {"cpu"};
  for (const std::string& b : testing::backends_under_test())
    if (b != "cpu") backends.push_back(b);
  std::map<std::string, std::vector<std::string>> cpu_words;
  for (const std::string& backend : backends) {
    SCOPED_TRACE(backend);
    RecognizerConfig config = tidigits_config();
    config.scoring_backend = backend;
    config.search_backend = "auto";
    std::string log;
    Recognizer rec(config, &log);
    ASSERT_EQ(rec.feature_dim(), 51) << log;
    const auto ours = decode_all(rec, ids, ref);
    int agree = 0;
    for (const auto& [id, words] : ours) {
      const auto ps = shipped.find(id);
      if (ps != shipped.end() && ps->second == words) ++agree;
    }
    const Score s_ours = score(ref, ours);
    std::printf("TIDIGITS, %zu utterances, %d words, FSG, scoring %s, search %s: %d errors "
                "(WER %.2f%%); pocketsphinx's test-tidigits-fsg.match %d errors (WER %.2f%%); "
                "same words as pocketsphinx on %d of %zu utterances\n",
                ids.size(), s_ours.words, backend.c_str(), rec.search_backend(), s_ours.errors,
                s_ours.wer(), s_shipped.errors, s_shipped.wer(), agree, ids.size());
    EXPECT_EQ(s_ours.missing, 0);
    EXPECT_LE(s_ours.errors, s_shipped.errors);
    if (!fresh.empty()) {
      EXPECT_LE(s_ours.errors, s_fresh.errors);
    }
    if (backend == "cpu") {
      cpu_words = ours;
    } else {
      EXPECT_EQ(ours, cpu_words) << "words differ from the CPU backend's";
    }
  }
}

TEST(Tidigits, RawRecordingDecodedFromAudio) {
  REQUIRE_TIDIGITS();
  const std::string raw = tidigits() + "/dhd.2934z.raw";
  if (!have_file(raw)) GTEST_SKIP() << raw << " not installed";
  const AudioData audio = read_raw_s16le_file(raw, 16000);
  Recognizer rec(tidigits_config());
  const RecognitionResult r =
      rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
  // The file's name says what is spoken: 2 9 3 4 z(ero).
  EXPECT_EQ(r.text(), "two nine three four zero");
}

TEST(Tidigits, CepstraOfTheWrongShapeOrNotFiniteAreErrors) {
  REQUIRE_TIDIGITS();
  Recognizer rec(tidigits_config());
  const std::vector<float> twelve(12 * 10, 0.0f);
  try {
    rec.recognize_cepstra(twelve.data(), 10, 12);
    FAIL() << "12 cepstra a frame accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("13"), std::string::npos) << e.what();
  }
  std::vector<float> nan(13 * 10, 1.0f);
  nan[13 * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
  try {
    rec.recognize_cepstra(nan.data(), 10, 13);
    FAIL() << "NaN accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("frame 4 coefficient 2"), std::string::npos) << e.what();
  }
  // Nothing to decode is not an error: an empty result.
  const RecognitionResult empty = rec.recognize_cepstra(nullptr, 0, 13);
  EXPECT_TRUE(empty.best.words.empty());
}

}  // namespace
}  // namespace gpuspeech
