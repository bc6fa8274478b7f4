// Sphinx acoustic model readers (common/model/): mdef (text and binary),
// Sphinx-3 parameter files, sendump, and AcousticModel on the shipped
// models: Debian's en-us (PTM, binary mdef, 8-bit sendump),
// pocketsphinx-testdata's an4_ci_cont (continuous, text mdef,
// mixture_weights) and tidigits (semi-continuous, binary mdef, 4-bit
// sendump). References are the files' own headers and pocketsphinx's
// pocketsphinx_mdef_convert (its text dump of a binary mdef and its log
// line of counts), never numbers typed in here. Then corrupt and
// inconsistent files, each of which must be a ModelError naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/model/acoustic_model.h"
#include "common/model/byte_reader.h"
#include "common/model/mdef.h"
#include "common/model/s3_params.h"
#include "common/model/sendump.h"
#include "common/model/svspec.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

namespace fs = std::filesystem;

std::string en_us_dir() { return testing::model_dir() + "/en-us/en-us"; }
std::string an4_dir() { return testing::audio_dir() + "/an4_ci_cont"; }
std::string tidigits_dir() { return testing::audio_dir() + "/tidigits/hmm"; }

bool exists(const std::string& p) { return model_file_exists(p); }

#define REQUIRE_FILE(p) \
  if (!exists(p)) GTEST_SKIP() << (p) << " not installed"

// Expects `fn` to throw ModelError whose message starts with `name` and
// contains `needle`.
template <typename Fn>
void expect_model_error(Fn fn, const std::string& name, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no ModelError; expected one containing '" << needle << "'";
  } catch (const ModelError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(name, 0), 0u) << "message does not start with " << name << ": " << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message lacks '" << needle << "': " << what;
  }
}

// --------------------------------------------- independent header reading

struct RawS3Counts {
  bool ok = false;
  std::vector<int32_t> ints;  // the first few int32 after the magic
};

// Reads the header's end and the first `n` int32 after the magic, without
// the library: "endhdr\n", then 0x11223344 in the file's byte order.
RawS3Counts raw_s3_counts(const std::string& bytes, int n) {
  RawS3Counts out;
  const size_t end = bytes.find("endhdr\n");
  if (end == std::string::npos) return out;
  size_t at = end + 7;
  if (at + 4 * size_t(n + 1) > bytes.size()) return out;
  auto u32 = [&](size_t off, bool big) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + off;
    return big ? uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]
               : uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
  };
  bool big = false;
  if (u32(at, false) != 0x11223344u) {
    if (u32(at, true) != 0x11223344u) return out;
    big = true;
  }
  for (int i = 0; i < n; ++i) out.ints.push_back(static_cast<int32_t>(u32(at + 4 + 4 * i, big)));
  out.ok = true;
  return out;
}

// "COUNT TAG" header lines of a text mdef.
std::map<std::string, int> text_mdef_header(const std::string& path) {
  std::map<std::string, int> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    int n;
    std::string tag;
    if (ls >> n >> tag && tag.rfind("n_", 0) == 0) out[tag] = n;
  }
  return out;
}

// ------------------------------------------------ pocketsphinx's own dump

struct PocketsphinxDump {
  bool ok = false;
  std::string text_path;
  std::string log;
  // Its log line "42 CI-phone, 137053 CD-phone, 3 emitstate/phone, 126
  // CI-sen, 5126 Sen, 29324 Sen-Seq".
  int ci = -1, cd = -1, emit = -1, ci_sen = -1, sen = -1, sseq = -1;
};

// pocketsphinx_mdef_convert -text MDEF OUT; skipped by callers when the
// tool is missing.
PocketsphinxDump pocketsphinx_dump(const std::string& mdef, const std::string& tag) {
  PocketsphinxDump d;
  if (std::system("command -v pocketsphinx_mdef_convert > /dev/null 2>&1") != 0) return d;
  d.text_path = (fs::temp_directory_path() /
                 ("gpuspeech-am-" + tag + "-" + std::to_string(::getpid()) + ".mdef.txt"))
                    .string();
  const std::string cmd =
      "pocketsphinx_mdef_convert -text '" + mdef + "' '" + d.text_path + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return d;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) d.log += buf;
  if (::pclose(p) != 0) return d;
  const size_t at = d.log.find(" CI-phone, ");
  if (at == std::string::npos) return d;
  size_t start = d.log.rfind(' ', at - 1);
  start = start == std::string::npos ? 0 : start + 1;
  if (std::sscanf(d.log.c_str() + start,
                  "%d CI-phone, %d CD-phone, %d emitstate/phone, %d CI-sen, %d Sen, %d Sen-Seq",
                  &d.ci, &d.cd, &d.emit, &d.ci_sen, &d.sen, &d.sseq) != 6)
    return d;
  d.ok = true;
  return d;
}

// The variance-floor count pocketsphinx logs ("N variance values floored")
// when it loads `dir` with -varfloor `floor`, or -1 if pocketsphinx_continuous
// is unavailable. It loads the codebooks once per module it tries; the last
// line is the one in use. A one-word dictionary (the model's first non-filler
// phone) and a tenth of a second of audio keep the run short.
long pocketsphinx_floored_variances(const std::string& dir, const ModelDefinition& mdef,
                                    double floor, std::string& log) {
  if (std::system("command -v pocketsphinx_continuous > /dev/null 2>&1") != 0) return -1;
  int phone = 0;
  while (phone < mdef.num_base_phones() && mdef.is_filler(phone)) ++phone;
  const std::string stem =
      (fs::temp_directory_path() / ("gpuspeech-am-ps-" + std::to_string(::getpid()))).string();
  std::ofstream(stem + ".dict") << "x " << mdef.base_phone_name(phone) << "\n";
  {
    std::ofstream raw(stem + ".raw", std::ios::binary);
    for (int i = 0; i < 1600; ++i) {
      const int16_t v = static_cast<int16_t>((i * 7919) % 200 - 100);
      raw.write(reinterpret_cast<const char*>(&v), 2);
    }
  }
  char fl[32];
  std::snprintf(fl, sizeof fl, "%.9g", floor);
  const std::string cmd = "pocketsphinx_continuous -hmm '" + dir + "' -dict '" + stem +
                          ".dict' -keyphrase x -infile '" + stem + ".raw' -varfloor " + fl +
                          " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  long count = -1;
  if (p) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) {
      log += buf;
      const char* at = std::strstr(buf, " variance values floored");
      if (!at) continue;
      const char* start = at;
      while (start > buf && start[-1] >= '0' && start[-1] <= '9') --start;
      count = std::strtol(start, nullptr, 10);
    }
    ::pclose(p);
  }
  std::remove((stem + ".dict").c_str());
  std::remove((stem + ".raw").c_str());
  return count;
}

// Checks two parses describe the same phones, tmats and senones.
void expect_same_mdef(const ModelDefinition& a, const ModelDefinition& b) {
  ASSERT_EQ(a.num_base_phones(), b.num_base_phones());
  ASSERT_EQ(a.num_phones(), b.num_phones());
  ASSERT_EQ(a.num_emitting_states(), b.num_emitting_states());
  EXPECT_EQ(a.num_senones(), b.num_senones());
  EXPECT_EQ(a.num_ci_senones(), b.num_ci_senones());
  EXPECT_EQ(a.num_tmats(), b.num_tmats());
  EXPECT_EQ(a.num_senone_sequences(), b.num_senone_sequences());
  EXPECT_EQ(a.silence_phone(), b.silence_phone());
  int differing = 0;
  for (int p = 0; p < a.num_phones(); ++p)
    if (a.phone_name(p) != b.phone_name(p) || a.tmat_of(p) != b.tmat_of(p) ||
        a.senones_of(p) != b.senones_of(p) || a.is_filler(p) != b.is_filler(p) ||
        a.senone_sequence_of(p) != b.senone_sequence_of(p)) {
      if (++differing <= 5)
        ADD_FAILURE() << "phone " << p << ": '" << a.phone_name(p) << "' vs '" << b.phone_name(p)
                      << "'";
    }
  EXPECT_EQ(differing, 0);
  for (int s = 0; s < a.num_senones(); ++s)
    ASSERT_EQ(a.senone_base_phone(s), b.senone_base_phone(s)) << "senone " << s;
}

// ---------------------------------------------------------------- en-us

class EnUs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (exists(en_us_dir() + "/mdef")) model_ = new AcousticModel(AcousticModel::load(en_us_dir()));
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << en_us_dir() << " not installed";
  }
  static AcousticModel* model_;
};
AcousticModel* EnUs::model_ = nullptr;

TEST_F(EnUs, MdefMatchesPocketsphinxDump) {
  const ModelDefinition& mdef = model_->mdef();
  EXPECT_TRUE(mdef.binary_format());
  const PocketsphinxDump d = pocketsphinx_dump(en_us_dir() + "/mdef", "en-us");
  if (!d.ok) GTEST_SKIP() << "pocketsphinx_mdef_convert unavailable or failed: " << d.log;
  EXPECT_EQ(mdef.num_base_phones(), d.ci);
  EXPECT_EQ(mdef.num_triphones(), d.cd);
  EXPECT_EQ(mdef.num_emitting_states(), d.emit);
  EXPECT_EQ(mdef.num_ci_senones(), d.ci_sen);
  EXPECT_EQ(mdef.num_senones(), d.sen);
  EXPECT_EQ(mdef.num_senone_sequences(), d.sseq);
  // The same model through our text parser must agree phone by phone.
  const ModelDefinition text = ModelDefinition::load(d.text_path);
  EXPECT_FALSE(text.binary_format());
  expect_same_mdef(mdef, text);
  const std::map<std::string, int> hdr = text_mdef_header(d.text_path);
  EXPECT_EQ(hdr.at("n_tied_tmat"), mdef.num_tmats());
  std::remove(d.text_path.c_str());
}

TEST_F(EnUs, TypeAndShapesMatchFileHeaders) {
  EXPECT_EQ(model_->type(), AcousticModelType::kPtm);
  EXPECT_EQ(model_->weights_file(), "sendump");
  const GaussianMixtures& g = model_->mixtures();
  const RawS3Counts means = raw_s3_counts(read_model_file(en_us_dir() + "/means"), 3);
  ASSERT_TRUE(means.ok);
  EXPECT_EQ(g.num_codebooks, means.ints[0]);
  EXPECT_EQ(g.num_streams(), means.ints[1]);
  EXPECT_EQ(g.gaussians_per_codebook, means.ints[2]);
  // PTM: one codebook per base phone.
  EXPECT_EQ(g.num_codebooks, model_->mdef().num_base_phones());
  EXPECT_EQ(g.num_senones, model_->mdef().num_senones());
  // -svspec from feat.params, checked against its text.
  std::string spec;
  for (const auto& kv : model_->feat_params_entries())
    if (kv.first == "svspec") spec = kv.second;
  ASSERT_FALSE(spec.empty());
  EXPECT_EQ(g.stream_components, parse_svspec(spec));
  EXPECT_EQ(g.feature_dim(), model_->feature_options().output_dim());
  const RawS3Counts tm = raw_s3_counts(read_model_file(en_us_dir() + "/transition_matrices"), 3);
  ASSERT_TRUE(tm.ok);
  EXPECT_EQ(model_->transitions().num_tmats, tm.ints[0]);
  EXPECT_EQ(model_->transitions().num_emitting, tm.ints[1]);
  EXPECT_EQ(model_->transitions().num_emitting + 1, tm.ints[2]);
  EXPECT_EQ(model_->noise_dictionary_path(), en_us_dir() + "/noisedict");
  // Each senone's codebook is its base phone, and the senones of base phone
  // p's own states use codebook p.
  const ModelDefinition& mdef = model_->mdef();
  for (int p = 0; p < mdef.num_base_phones(); ++p)
    for (int s : mdef.senones_of(p)) EXPECT_EQ(g.senone_codebook[s], p);
}

TEST_F(EnUs, SendumpWeightsAreNormalisedWithinQuantisation) {
  // pocketsphinx's 8-bit weights truncate -log w to steps of 2^10 ln(1.0001)
  // nats, towards smaller weights: each senone's weights sum to at most 1
  // and at least exp(-step).
  const GaussianMixtures& g = model_->mixtures();
  const double step = 1024 * std::log(1.0001);
  const int n = g.gaussians_per_codebook, T = g.num_streams();
  for (int s = 0; s < g.num_senones; ++s)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += std::exp(g.log_weights[(size_t(s) * T + t) * n + k]);
      ASSERT_LE(sum, 1.0 + 1e-4) << "senone " << s << " stream " << t;
      ASSERT_GE(sum, std::exp(-step) - 1e-4) << "senone " << s << " stream " << t;
    }
}

TEST_F(EnUs, TriphonesOfRealWordsAreThoseInPocketsphinxDump) {
  const ModelDefinition& mdef = model_->mdef();
  const PocketsphinxDump d = pocketsphinx_dump(en_us_dir() + "/mdef", "en-us-tri");
  if (!d.ok) GTEST_SKIP() << "pocketsphinx_mdef_convert unavailable";
  // Phone ids are line order in pocketsphinx's dump.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, int> listed;
  {
    std::ifstream in(d.text_path);
    std::string line;
    int id = 0;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string b, l, r, p, attrib;
      if (!(ls >> b >> l >> r >> p >> attrib) || (attrib != "n/a" && attrib != "filler")) continue;
      listed[{b, l, r, p}] = id++;
    }
  }
  std::remove(d.text_path.c_str());
  ASSERT_EQ(static_cast<int>(listed.size()), mdef.num_phones());

  // Pronunciations from the dictionary shipped with the model.
  const std::string dict = testing::model_dir() + "/en-us/cmudict-en-us.dict";
  REQUIRE_FILE(dict);
  std::map<std::string, std::vector<std::string>> prons;
  {
    std::ifstream in(dict);
    std::string line;
    const std::set<std::string> wanted = {"hello", "world", "six", "a", "speech"};
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string w, ph;
      ls >> w;
      if (!wanted.count(w)) continue;
      while (ls >> ph) prons[w].push_back(ph);
    }
  }
  ASSERT_EQ(prons.size(), 5u);
  const int sil = mdef.silence_phone();
  ASSERT_GE(sil, 0);
  int checked = 0;
  for (const auto& wp : prons) {
    const std::vector<std::string>& ph = wp.second;
    const int n = static_cast<int>(ph.size());
    for (int i = 0; i < n; ++i) {
      const int base = mdef.base_phone_id(ph[i]);
      ASSERT_GE(base, 0) << ph[i];
      const int left = i == 0 ? sil : mdef.base_phone_id(ph[i - 1]);
      const int right = i == n - 1 ? sil : mdef.base_phone_id(ph[i + 1]);
      const WordPosition pos = n == 1       ? WordPosition::kSingle
                               : i == 0     ? WordPosition::kBegin
                               : i == n - 1 ? WordPosition::kEnd
                                            : WordPosition::kInternal;
      const std::string pc(1, word_position_char(pos));
      const std::string lname = mdef.base_phone_name(left), rname = mdef.base_phone_name(right);
      const int got = mdef.nearest_phone_id(base, left, right, pos);
      const auto it = listed.find({ph[i], lname, rname, pc});
      if (it != listed.end()) {
        // Listed by pocketsphinx: exact lookups must find that very line.
        EXPECT_EQ(got, it->second) << wp.first << ": " << ph[i] << " " << lname << " " << rname;
        EXPECT_EQ(mdef.exact_phone_id(base, left, right, pos), it->second);
        ++checked;
      }
      EXPECT_EQ(mdef.base_of(got), base);
    }
  }
  EXPECT_GE(checked, 10);
}

TEST_F(EnUs, BackOffFollowsPocketsphinxOrder) {
  const ModelDefinition& mdef = model_->mdef();
  // Find a triphone listed at one position but not at another; asking for
  // the missing position must give the first listed one in the order
  // internal, begin, end, single.
  int tested = 0;
  for (int p = mdef.num_base_phones(); p < mdef.num_phones() && tested < 20; p += 997) {
    const int b = mdef.base_of(p), l = mdef.left_of(p), r = mdef.right_of(p);
    if (mdef.is_filler(l) || mdef.is_filler(r)) continue;
    for (int want = 0; want < kNumWordPositions; ++want) {
      const WordPosition wp = static_cast<WordPosition>(want);
      if (mdef.exact_phone_id(b, l, r, wp) >= 0) continue;
      int expected = -1;
      for (int other = 0; other < kNumWordPositions && expected < 0; ++other)
        expected = mdef.exact_phone_id(b, l, r, static_cast<WordPosition>(other));
      ASSERT_GE(expected, 0);
      EXPECT_EQ(mdef.nearest_phone_id(b, l, r, wp), expected) << mdef.phone_name(p);
      ++tested;
    }
  }
  EXPECT_GT(tested, 5);
  // Filler contexts stand for SIL.
  const int nsn = mdef.base_phone_id("+NSN+"), sil = mdef.silence_phone();
  ASSERT_GE(nsn, 0);
  ASSERT_TRUE(mdef.is_filler(nsn));
  const int ah = mdef.base_phone_id("AH"), l = mdef.base_phone_id("L");
  EXPECT_EQ(mdef.phone_id(ah, nsn, l, WordPosition::kBegin),
            mdef.phone_id(ah, sil, l, WordPosition::kBegin));
  EXPECT_EQ(mdef.exact_phone_id(ah, nsn, l, WordPosition::kBegin), -1);
  // Unknown context: the base phone.
  EXPECT_EQ(mdef.nearest_phone_id(ah, -1, l, WordPosition::kBegin), ah);
}

// ----------------------------------------------------------------- an4

TEST(An4, ContinuousModelMatchesItsFiles) {
  REQUIRE_FILE(an4_dir() + "/mdef");
  const AcousticModel m = AcousticModel::load(an4_dir());
  EXPECT_EQ(m.type(), AcousticModelType::kContinuous);
  EXPECT_EQ(m.weights_file(), "mixture_weights");
  const ModelDefinition& mdef = m.mdef();
  EXPECT_FALSE(mdef.binary_format());
  const std::map<std::string, int> hdr = text_mdef_header(an4_dir() + "/mdef");
  EXPECT_EQ(mdef.num_base_phones(), hdr.at("n_base"));
  EXPECT_EQ(mdef.num_triphones(), hdr.at("n_tri"));
  EXPECT_EQ(mdef.num_senones(), hdr.at("n_tied_state"));
  EXPECT_EQ(mdef.num_ci_senones(), hdr.at("n_tied_ci_state"));
  EXPECT_EQ(mdef.num_tmats(), hdr.at("n_tied_tmat"));
  EXPECT_EQ((mdef.num_emitting_states() + 1) * mdef.num_phones(), hdr.at("n_state_map"));

  const GaussianMixtures& g = m.mixtures();
  const RawS3Counts means = raw_s3_counts(read_model_file(an4_dir() + "/means"), 4);
  ASSERT_TRUE(means.ok);
  EXPECT_EQ(g.num_codebooks, means.ints[0]);
  EXPECT_EQ(g.num_streams(), means.ints[1]);
  EXPECT_EQ(g.gaussians_per_codebook, means.ints[2]);
  EXPECT_EQ(g.stream_dim(0), means.ints[3]);
  EXPECT_EQ(g.num_codebooks, g.num_senones);
  for (int s = 0; s < g.num_senones; ++s) EXPECT_EQ(g.senone_codebook[s], s);
  const RawS3Counts mixw = raw_s3_counts(read_model_file(an4_dir() + "/mixture_weights"), 3);
  ASSERT_TRUE(mixw.ok);
  EXPECT_EQ(g.num_senones, mixw.ints[0]);
  // Float weights: normalised exactly (up to rounding).
  const int n = g.gaussians_per_codebook, T = g.num_streams();
  for (int s = 0; s < g.num_senones; ++s)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += std::exp(g.log_weights[(size_t(s) * T + t) * n + k]);
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  // Phones from the text header's own lines.
  EXPECT_EQ(mdef.base_phone_name(0), "AA");
  EXPECT_EQ(mdef.senones_of(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.noise_dictionary_path(), an4_dir() + "/noisedict");
}

TEST(An4, VariancesAreTheFileValuesFloored) {
  REQUIRE_FILE(an4_dir() + "/mdef");
  const GaussianParams raw =
      parse_gaussian_params(read_model_file(an4_dir() + "/variances"), "variances");
  // A floor above a tenth of the file's variances, so that flooring shows.
  std::vector<float> sorted = raw.values;
  std::sort(sorted.begin(), sorted.end());
  const float floor = sorted[sorted.size() / 10];
  AcousticModelOptions opts;
  opts.var_floor = floor;
  const AcousticModel m = AcousticModel::load(an4_dir(), opts);
  const GaussianMixtures& g = m.mixtures();
  ASSERT_EQ(g.variances[0].size(), raw.values.size());  // one stream, file order
  int floored = 0;
  for (size_t i = 0; i < raw.values.size(); ++i) {
    const float want = raw.values[i] < floor ? floor : raw.values[i];
    floored += raw.values[i] < floor;
    ASSERT_EQ(g.variances[0][i], want) << i;
    ASSERT_GT(g.variances[0][i], 0.0f);
  }
  EXPECT_GT(floored, 0);
}

// pocketsphinx's own count of floored variances, at its default floor and,
// for an4 (which has none below it), at one that floors a tenth.
TEST(AllModels, FlooredVariancesMatchPocketsphinx) {
  int compared = 0;
  for (const std::string& dir : {en_us_dir(), an4_dir(), tidigits_dir()}) {
    if (!exists(dir + "/mdef")) continue;
    std::vector<double> floors = {1e-4};
    if (dir == an4_dir()) {
      const GaussianParams raw =
          parse_gaussian_params(read_model_file(dir + "/variances"), "variances");
      std::vector<float> sorted = raw.values;
      std::sort(sorted.begin(), sorted.end());
      floors.push_back(sorted[sorted.size() / 10]);
    }
    for (double floor : floors) {
      AcousticModelOptions opts;
      opts.var_floor = floor;
      const AcousticModel m = AcousticModel::load(dir, opts);
      std::string log;
      const long ps = pocketsphinx_floored_variances(dir, m.mdef(), floor, log);
      if (ps < 0) {
        if (log.empty()) GTEST_SKIP() << "pocketsphinx_continuous not installed";
        ADD_FAILURE() << "no floor count in pocketsphinx's log:\n" << log;
        continue;
      }
      EXPECT_EQ(m.num_floored_variances(), ps) << dir << " floor " << floor;
      ++compared;
    }
  }
  if (compared == 0) GTEST_SKIP() << "no models installed";
}

// ------------------------------------------------------------ tidigits

TEST(Tidigits, SemiContinuousWithFourBitSendump) {
  REQUIRE_FILE(tidigits_dir() + "/mdef");
  const AcousticModel m = AcousticModel::load(tidigits_dir());
  EXPECT_EQ(m.type(), AcousticModelType::kSemiContinuous);
  EXPECT_EQ(m.weights_file(), "sendump");
  const GaussianMixtures& g = m.mixtures();
  const RawS3Counts means = raw_s3_counts(read_model_file(tidigits_dir() + "/means"), 3);
  ASSERT_TRUE(means.ok);
  EXPECT_EQ(g.num_codebooks, 1);
  EXPECT_EQ(g.num_streams(), means.ints[1]);
  EXPECT_EQ(g.gaussians_per_codebook, means.ints[2]);
  const RawS3Counts dims =
      raw_s3_counts(read_model_file(tidigits_dir() + "/means"), 3 + g.num_streams());
  int next = 0;
  for (int t = 0; t < g.num_streams(); ++t) {
    ASSERT_EQ(g.stream_dim(t), dims.ints[3 + t]);
    for (int c : g.stream_components[t]) EXPECT_EQ(c, next++);  // no -svspec: in order
  }
  const PocketsphinxDump d = pocketsphinx_dump(tidigits_dir() + "/mdef", "tidigits");
  if (d.ok) {
    EXPECT_EQ(m.mdef().num_base_phones(), d.ci);
    EXPECT_EQ(m.mdef().num_triphones(), d.cd);
    EXPECT_EQ(m.mdef().num_emitting_states(), d.emit);
    EXPECT_EQ(m.mdef().num_senones(), d.sen);
    expect_same_mdef(m.mdef(), ModelDefinition::load(d.text_path));
    std::remove(d.text_path.c_str());
  }
  // 4-bit weights take one of 16 cluster values: a few distinct weights.
  std::set<float> distinct(g.log_weights.begin(), g.log_weights.end());
  EXPECT_LE(distinct.size(), 16u);
  EXPECT_GE(distinct.size(), 2u);
  // Its feat.params asks for the s2_4x front end; whether FeatureOptions can
  // express it or not, the answer is consistent.
  if (m.has_feature_options()) {
    EXPECT_NO_THROW(m.feature_options());
  } else {
    expect_model_error([&] { m.feature_options(); }, tidigits_dir() + "/feat.params", "");
  }
}

// -------------------------------------------------- transitions, all models

TEST(AllModels, TransitionRowsAreDistributions) {
  int models = 0;
  for (const std::string& dir : {en_us_dir(), an4_dir(), tidigits_dir()}) {
    if (!exists(dir + "/mdef")) continue;
    ++models;
    const AcousticModel m = AcousticModel::load(dir);
    const TransitionMatrices& t = m.transitions();
    ASSERT_EQ(t.num_tmats, m.mdef().num_tmats());
    for (int k = 0; k < t.num_tmats; ++k)
      for (int i = 0; i < t.num_emitting; ++i) {
        double sum = 0;
        for (int j = 0; j <= t.num_emitting; ++j) {
          const float lp = t.log_prob(k, i, j);
          ASSERT_FALSE(std::isnan(lp));
          ASSERT_LE(lp, 0.0f);
          if (j < i || j > i + 2) {
            EXPECT_EQ(lp, -INFINITY);  // left-to-right
          }
          sum += std::exp(static_cast<double>(lp));
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << dir << " tmat " << k << " row " << i;
      }
    for (float v : m.mixtures().variances[0]) ASSERT_GE(v, 1e-4f);
    EXPECT_NO_THROW(m.mixtures().validate());
  }
  if (models == 0) GTEST_SKIP() << "no models installed";
}

// -------------------------------------------------------- synthetic mdefs

// A small text mdef: SIL (filler), +NSN+ (filler), A, B, C; one emitting
// state per phone... three, as Sphinx.
std::string small_mdef(const std::string& triphones, int n_tri) {
  std::ostringstream os;
  os << "# test\n0.3\n5 n_base\n"
     << n_tri << " n_tri\n"
     << 4 * (5 + n_tri) << " n_state_map\n"
     << 15 + 3 * n_tri << " n_tied_state\n15 n_tied_ci_state\n5 n_tied_tmat\n"
     << "#base lft rt p attrib tmat ... state id's ...\n"
        "+NSN+ - - - filler 0 0 1 2 N\n"
        "A - - - n/a 1 3 4 5 N\n"
        "B - - - n/a 2 6 7 8 N\n"
        "C - - - n/a 3 9 10 11 N\n"
        "SIL - - - filler 4 12 13 14 N\n"
     << triphones;
  return os.str();
}

TEST(Mdef, BackOffOnASmallModel) {
  const std::string tri =
      "A B C i n/a 1 15 16 17 N\n"
      "A B C s n/a 1 18 19 20 N\n"
      "A SIL C b n/a 1 21 22 23 N\n"
      "B A SIL e n/a 2 24 25 26 N\n";
  const ModelDefinition m = ModelDefinition::parse(small_mdef(tri, 4), "small.mdef");
  const int A = m.base_phone_id("A"), B = m.base_phone_id("B"), C = m.base_phone_id("C");
  const int SIL = m.silence_phone(), NSN = m.base_phone_id("+NSN+");
  ASSERT_EQ(SIL, 4);
  using P = WordPosition;
  EXPECT_EQ(m.exact_phone_id(A, B, C, P::kInternal), 5);
  EXPECT_EQ(m.exact_phone_id(A, B, C, P::kBegin), -1);
  // Other positions in the order i, b, e, s: internal first.
  EXPECT_EQ(m.nearest_phone_id(A, B, C, P::kEnd), 5);
  EXPECT_EQ(m.nearest_phone_id(A, B, C, P::kSingle), 6);
  // Filler context -> SIL, at once.
  EXPECT_EQ(m.phone_id(A, NSN, C, P::kBegin), 7);
  // Word start: the left context becomes SIL when nothing else matches.
  EXPECT_EQ(m.nearest_phone_id(A, C, C, P::kBegin), 7);
  // Word end: the right context becomes SIL.
  EXPECT_EQ(m.nearest_phone_id(B, A, C, P::kEnd), 8);
  // Internal position: no SIL substitution, so the base phone.
  EXPECT_EQ(m.nearest_phone_id(A, C, C, P::kInternal), A);
  EXPECT_EQ(m.nearest_phone_id(A, -1, C, P::kInternal), A);
  EXPECT_EQ(m.phone_name(8), "B A SIL e");
  EXPECT_TRUE(m.is_filler(NSN));
  EXPECT_FALSE(m.is_filler(5));
  EXPECT_EQ(m.senone_base_phone(24), B);
  EXPECT_EQ(m.senone(7, 2), 23);
  EXPECT_EQ(m.tmat_of(8), 2);
  EXPECT_THROW(m.phone_id(A, 99, C, P::kBegin), std::invalid_argument);
}

TEST(Mdef, TextErrorsNameFileAndLine) {
  const std::string ok_tri = "A B C i n/a 1 15 16 17 N\n";
  ASSERT_NO_THROW(ModelDefinition::parse(small_mdef(ok_tri, 1), "t.mdef"));
  struct Case {
    std::string text, needle;
  };
  const std::vector<Case> cases = {
      {small_mdef("A B C x n/a 1 15 16 17 N\n", 1), "t.mdef:15: bad word position"},
      {small_mdef("A B C i n/a 1 15 16 17\n", 1), "t.mdef:15: missing the non-emitting"},
      {small_mdef("A B C i n/a 1 15 16 17 N X\n", 1), "t.mdef:15: unexpected 'X'"},
      {small_mdef("A B D i n/a 1 15 16 17 N\n", 1), "unknown right context 'D'"},
      {small_mdef("A B C i filler 1 15 16 17 N\n", 1), "differs from that of base phone"},
      {small_mdef("A B C i n/a 9 15 16 17 N\n", 1), "transition matrix id 9"},
      {small_mdef("A B C i n/a 1 15 16 99 N\n", 1), "senone 99 >= n_tied_state"},
      {small_mdef("A B C i n/a 1 15 1x 17 N\n", 1), "bad senone id"},
      {small_mdef(ok_tri + ok_tri, 2), "duplicate triphone 'A B C i'"},
      {small_mdef("", 1), "end of file after 5 of 6 phones"},
      {small_mdef(ok_tri + "B A C i n/a 1 15 16 17 N\n", 1), "more phone lines than"},
      {"0.2\n", "t.mdef:1: expected the version line"},
      {"", "empty file"},
      {"0.3\n5 n_base\n", "incomplete header"},
      {"0.3\n5 n_bases\n", "unknown header tag"},
      {"0.3\n-5 n_base\n", "bad header line"},
  };
  for (const Case& c : cases)
    expect_model_error([&] { ModelDefinition::parse(c.text, "t.mdef"); }, "t.mdef", c.needle);
  // Base phone with a senone beyond the CI ones.
  std::string bad = small_mdef("", 0);
  bad.replace(bad.find("A - - - n/a 1 3 4 5 N"), 21, "A - - - n/a 1 3 4 15 N");
  expect_model_error([&] { ModelDefinition::parse(bad, "t.mdef"); }, "t.mdef:", "n_tied_ci_state");
}

TEST(Mdef, BinaryTruncationsAndCorruptionsAreErrors) {
  const std::string path = tidigits_dir() + "/mdef";
  REQUIRE_FILE(path);
  const std::string bytes = read_model_file(path);
  ASSERT_NO_THROW(ModelDefinition::parse(bytes, "b.mdef"));
  // Every cut (in steps, and the last bytes) is an error, never a crash.
  for (size_t cut = 0; cut < bytes.size(); cut += (cut < 2000 ? 7 : 211))
    expect_model_error([&] { ModelDefinition::parse_binary(bytes.substr(0, cut), "b.mdef"); },
                       "b.mdef", "");
  expect_model_error([&] { ModelDefinition::parse(bytes + "x", "b.mdef"); }, "b.mdef",
                     "unexpected bytes");
  // Header counts: n_ciphone is the first int32 after the description.
  const size_t desc_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
  const size_t counts = 12 + desc_len;
  std::string huge = bytes;
  huge[counts + 4 + 3] = 0x7f;  // n_phone ~ 2^31
  expect_model_error([&] { ModelDefinition::parse(huge, "b.mdef"); }, "b.mdef", "");
  std::string neg = bytes;
  neg[counts + 3] = '\xff';  // n_ciphone < 0
  expect_model_error([&] { ModelDefinition::parse(neg, "b.mdef"); }, "b.mdef", "n_ciphone");
  // Flip bytes throughout the body: each result is a model or a ModelError.
  for (size_t at = counts; at < bytes.size(); at += 53) {
    std::string c = bytes;
    c[at] = static_cast<char>(c[at] ^ 0x5a);
    try {
      ModelDefinition::parse(c, "b.mdef");
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("b.mdef: offset ", 0), 0u) << e.what();
    }
  }
}

// ------------------------------------------------------- synthetic s3 files

struct S3File {
  std::vector<std::pair<std::string, std::string>> header = {{"version", "1.0"},
                                                             {"chksum0", "yes"}};
  std::vector<uint32_t> words;  // counts and float bits, in order
  bool big_endian = false;
  bool checksum = true;

  void i(int32_t v) { words.push_back(static_cast<uint32_t>(v)); }
  void f(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    words.push_back(b);
  }
  std::string bytes() const {
    std::string out = "s3\n";
    for (const auto& kv : header) out += kv.first + " " + kv.second + "\n";
    out += "endhdr\n";
    auto put = [&](uint32_t v) {
      for (int k = 0; k < 4; ++k)
        out.push_back(static_cast<char>(big_endian ? v >> (24 - 8 * k) : v >> (8 * k)));
    };
    put(0x11223344u);
    uint32_t sum = 0;
    for (uint32_t w : words) {
      put(w);
      sum = ((sum << 20) | (sum >> 12)) + w;
    }
    if (checksum) put(sum);
    return out;
  }
};

S3File small_means() {
  S3File f;
  f.i(2);  // codebooks
  f.i(2);  // streams
  f.i(3);  // Gaussians
  f.i(2);  // stream 0 dim
  f.i(1);  // stream 1 dim
  f.i(2 * 3 * 3);
  for (int k = 0; k < 18; ++k) f.f(0.5f * k - 3);
  return f;
}

TEST(S3Params, ReadsBothByteOrdersAndTheOldHeader) {
  S3File f = small_means();
  const GaussianParams le = parse_gaussian_params(f.bytes(), "m");
  EXPECT_EQ(le.num_codebooks, 2);
  EXPECT_EQ(le.stream_dims, (std::vector<int>{2, 1}));
  ASSERT_EQ(le.values.size(), 18u);
  EXPECT_EQ(le.values[17], 0.5f * 17 - 3);
  // codebook 1, stream 1, Gaussian 2: after codebook 0 (9 values), stream 0
  // of codebook 1 (6), then Gaussians 0 and 1 of stream 1.
  EXPECT_EQ(le.index(1, 1, 2), 9u + 6u + 2u);
  f.big_endian = true;
  const GaussianParams be = parse_gaussian_params(f.bytes(), "m");
  EXPECT_TRUE(be.header.big_endian);
  EXPECT_EQ(be.values, le.values);
  // Pre-1996 header: a version line and comments, no checksum.
  S3File old = small_means();
  old.checksum = false;
  std::string b = old.bytes();
  b.replace(0, b.find("endhdr\n") + 7, "1.0\nsome comment\n*end_comment*\n");
  const GaussianParams o = parse_gaussian_params(b, "m");
  EXPECT_EQ(o.values, le.values);
  EXPECT_EQ(*o.header.find("version"), "1.0");
}

TEST(S3Params, CorruptFilesAreErrors) {
  const std::string good = small_means().bytes();
  ASSERT_NO_THROW(parse_gaussian_params(good, "means"));
  // Truncated anywhere: an error naming the file.
  for (size_t cut = 0; cut < good.size(); ++cut)
    expect_model_error([&] { parse_gaussian_params(good.substr(0, cut), "means"); }, "means", "");
  expect_model_error([&] { parse_gaussian_params(good.substr(0, good.size() - 9), "means"); },
                     "means: offset", "truncated");
  // Wrong magic.
  std::string magic = good;
  magic[magic.find("endhdr\n") + 7] = 0x55;
  expect_model_error([&] { parse_gaussian_params(magic, "means"); }, "means: offset",
                     "byte-order magic");
  // Count of values inconsistent with the dimensions.
  S3File f = small_means();
  f.words[5] = 17;
  expect_model_error([&] { parse_gaussian_params(f.bytes(), "means"); },
                     "means: offset 58:", "does not match");
  // Absurd counts are refused before allocating.
  f = small_means();
  f.words[0] = 0x40000000;
  expect_model_error([&] { parse_gaussian_params(f.bytes(), "means"); }, "means", "out of range");
  // Checksum.
  std::string flipped = good;
  flipped[flipped.size() - 8] ^= 1;
  expect_model_error([&] { parse_gaussian_params(flipped, "means"); }, "means", "checksum");
  // Trailing data.
  expect_model_error([&] { parse_gaussian_params(good + "xxxx", "means"); }, "means",
                     "unexpected bytes");
  // No header at all.
  expect_model_error([&] { parse_gaussian_params("\x01\x02", "means"); }, "means", "");
  expect_model_error([&] { parse_gaussian_params("s3\nversion 1.0\n", "means"); }, "means",
                     "endhdr");
}

TEST(S3Params, TransitionMatricesAndMixtureWeights) {
  S3File t;
  t.i(1);
  t.i(2);
  t.i(3);
  t.i(6);
  for (float v : {1.f, 1.f, 0.f, 0.f, 3.f, 1.f}) t.f(v);
  const TransitionMatrixParams tm = parse_transition_matrices(t.bytes(), "tm");
  EXPECT_EQ(tm.num_from, 2);
  EXPECT_EQ(tm.num_to, 3);
  t.words[2] = 4;  // not num_from + 1
  expect_model_error([&] { parse_transition_matrices(t.bytes(), "tm"); }, "tm", "must be source");

  S3File w;
  w.i(2);
  w.i(1);
  w.i(2);
  w.i(4);
  for (float v : {3.f, 1.f, 0.f, 0.f}) w.f(v);
  const MixtureWeightParams mw = parse_mixture_weights(w.bytes(), "mw");
  EXPECT_EQ(mw.num_senones, 2);
  EXPECT_EQ(mw.values[0], 3.f);
}

TEST(Svspec, SyntaxAsSphinxbase) {
  EXPECT_EQ(parse_svspec("0-2/3,5,4"), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 5, 4}}));
  EXPECT_EQ(parse_svspec("24,0-1"), (std::vector<std::vector<int>>{{24, 0, 1}}));
  for (const char* bad : {"", "0-", "2-1", "0//1", "a", "0-99999999", "0,"})
    EXPECT_THROW(parse_svspec(bad), std::invalid_argument) << bad;
}

// ---------------------------------------------------------------- sendump

// A sendump as pocketsphinx's writers lay it out.
std::string make_sendump(bool four_bit, bool big_endian, const std::vector<uint8_t>& data,
                         int streams, int density, int senones) {
  std::string out;
  auto put = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k)
      out.push_back(static_cast<char>(big_endian ? v >> (24 - 8 * k) : v >> (8 * k)));
  };
  auto str = [&](const std::string& s, bool nul = true) {
    put(static_cast<uint32_t>(s.size() + (nul ? 1 : 0)));
    out += s;
    if (nul) out.push_back('\0');
  };
  str("BEGIN FILE FORMAT DESCRIPTION");
  str("some description");
  str("cluster_count centroids");  // text, not a value
  str("feature_count " + std::to_string(streams));
  if (four_bit) {
    str("mixture_count " + std::to_string(density));
    str("model_count " + std::to_string(senones));
    str("cluster_count 15");
    str("cluster_bits 4");
  } else {
    str("cluster_count 0");
    str("!!!", false);
  }
  put(0);
  if (!four_bit) {
    put(static_cast<uint32_t>(density));
    put(static_cast<uint32_t>(senones));
  }
  out.append(reinterpret_cast<const char*>(data.data()), data.size());
  return out;
}

TEST(Sendump, EightAndFourBitLayouts) {
  // 2 streams x 3 Gaussians x 3 senones.
  std::vector<uint8_t> q(18);
  for (size_t k = 0; k < q.size(); ++k) q[k] = static_cast<uint8_t>(7 * k + 1);
  for (bool be : {false, true}) {
    const SendumpWeights w = parse_sendump(make_sendump(false, be, q, 2, 3, 3), "sd");
    EXPECT_EQ(w.big_endian, be);
    EXPECT_EQ(w.num_streams, 2);
    EXPECT_EQ(w.density, 3);
    EXPECT_EQ(w.num_senones, 3);
    // stream 1, Gaussian 2, senone 0: row 5.
    EXPECT_EQ(w.quantized[(1 * 3 + 2) * 3 + 0], q[15]);
    EXPECT_NEAR(w.log_weight(0, 1, 2), -q[15] * 1024 * std::log(1.0001), 1e-4);
  }
  // 4-bit: 16 cluster values then ceil(3/2) = 2 bytes a row; senone 0 low
  // nibble, senone 1 high nibble, senone 2 low nibble of the next byte.
  std::vector<uint8_t> d4(16);
  for (int k = 0; k < 16; ++k) d4[k] = static_cast<uint8_t>(10 * k);
  for (int row = 0; row < 6; ++row) {
    d4.push_back(static_cast<uint8_t>((row + 1) << 4 | row));  // s0 = row, s1 = row + 1
    d4.push_back(static_cast<uint8_t>(15 - row));              // s2
  }
  const SendumpWeights w4 = parse_sendump(make_sendump(true, false, d4, 2, 3, 3), "sd4");
  EXPECT_EQ(w4.cluster_bits, 4);
  for (int row = 0; row < 6; ++row) {
    EXPECT_EQ(w4.quantized[row * 3 + 0], 10 * row);
    EXPECT_EQ(w4.quantized[row * 3 + 1], 10 * (row + 1));
    EXPECT_EQ(w4.quantized[row * 3 + 2], 10 * (15 - row));
  }
  // Shapes that disagree with the model's.
  SendumpShape shape{2, 3, 4};
  expect_model_error([&] { parse_sendump(make_sendump(false, false, q, 2, 3, 3), "sd", shape); },
                     "sd", "columns (3) < senones (4)");
  shape = {3, 3, 3};
  expect_model_error([&] { parse_sendump(make_sendump(false, false, q, 2, 3, 3), "sd", shape); },
                     "sd", "feature_count 2 differs");
  // Truncation and bad lengths.
  const std::string good = make_sendump(false, false, q, 2, 3, 3);
  for (size_t cut = 0; cut < good.size(); ++cut)
    expect_model_error([&] { parse_sendump(good.substr(0, cut), "sd"); }, "sd", "");
  expect_model_error([&] { parse_sendump(good + "z", "sd"); }, "sd", "bytes of weights");
  std::string bad_title = good;
  bad_title[0] = bad_title[1] = bad_title[2] = bad_title[3] = '\x7f';
  expect_model_error([&] { parse_sendump(bad_title, "sd"); }, "sd: offset 0", "title length");
}

// ------------------------------------------------- broken model directories

// A copy of the an4 model in a fresh directory, removed afterwards.
class BrokenAn4 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(an4_dir() + "/mdef")) GTEST_SKIP() << an4_dir() << " not installed";
    char tmpl[] = "/tmp/gpuspeech-am-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const auto& e : fs::directory_iterator(an4_dir()))
      fs::copy_file(e.path(), dir_ + "/" + e.path().filename().string());
    ASSERT_NO_THROW(AcousticModel::load(dir_));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void write(const std::string& file, const std::string& bytes) {
    std::ofstream(dir_ + "/" + file, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string read(const std::string& file) { return read_model_file(dir_ + "/" + file); }
  void expect_load_error(const std::string& file, const std::string& needle) {
    expect_model_error([&] { AcousticModel::load(dir_); }, dir_ + "/" + file, needle);
  }
  std::string dir_;
};

TEST_F(BrokenAn4, TruncatedMeans) {
  const std::string m = read("means");
  write("means", m.substr(0, m.size() - 100));
  expect_load_error("means", "truncated");
}

TEST_F(BrokenAn4, VariancesOfOtherShape) {
  // Drop the last codebook from the variances: consistent on its own,
  // inconsistent with the means.
  const GaussianParams v = parse_gaussian_params(read("variances"), "v");
  S3File f;
  f.i(v.num_codebooks - 1);
  f.i(v.num_streams);
  f.i(v.density);
  for (int d : v.stream_dims) f.i(d);
  const size_t n = v.index(v.num_codebooks - 1, 0, 0);
  f.i(static_cast<int32_t>(n));
  for (size_t k = 0; k < n; ++k) f.f(v.values[k]);
  write("variances", f.bytes());
  expect_load_error("variances", "differ from");
}

TEST_F(BrokenAn4, MissingMixtureWeights) {
  fs::remove(dir_ + "/mixture_weights");
  expect_load_error("mixture_weights", "missing");
}

TEST_F(BrokenAn4, TransitionCountDisagreesWithMdef) {
  S3File t;
  t.i(1);
  t.i(3);
  t.i(4);
  t.i(12);
  for (int k = 0; k < 12; ++k) t.f(k % 4 < 2 ? 1.f : 0.f);
  write("transition_matrices", t.bytes());
  expect_load_error("transition_matrices", "1 transition matrices");
}

TEST_F(BrokenAn4, BackwardTransition) {
  TransitionMatrixParams tm = parse_transition_matrices(read("transition_matrices"), "t");
  S3File t;
  t.i(tm.num_tmats);
  t.i(tm.num_from);
  t.i(tm.num_to);
  t.i(static_cast<int32_t>(tm.values.size()));
  tm.values[size_t(1) * tm.num_to + 0] = 5.f;  // matrix 0, state 1 -> state 0
  for (float v : tm.values) t.f(v);
  write("transition_matrices", t.bytes());
  expect_load_error("transition_matrices", "goes backwards");
}

TEST_F(BrokenAn4, MdefBadLineAndMissingTerminator) {
  std::string m = read("mdef");
  const size_t at = m.find(" N\n");
  ASSERT_NE(at, std::string::npos);
  std::string no_n = m;
  no_n.erase(at, 2);
  write("mdef", no_n);
  expect_load_error("mdef:", "missing the non-emitting final state");
  std::string bad = m;
  bad.replace(bad.find("n/a"), 3, "bad");
  write("mdef", bad);
  expect_load_error("mdef:", "bad attribute 'bad'");
}

TEST_F(BrokenAn4, NanMeanAndBadSvspec) {
  GaussianParams g = parse_gaussian_params(read("means"), "m");
  S3File f;
  f.i(g.num_codebooks);
  f.i(g.num_streams);
  f.i(g.density);
  for (int d : g.stream_dims) f.i(d);
  f.i(static_cast<int32_t>(g.values.size()));
  g.values[7] = NAN;
  for (float v : g.values) f.f(v);
  const std::string good_means = read("means");
  write("means", f.bytes());
  expect_load_error("means", "not finite");
  write("means", good_means);
  write("feat.params", read("feat.params") + "-svspec 0-12/13-25/26-38\n");
  expect_load_error("feat.params", "-svspec gives 3 streams");
}

}  // namespace
}  // namespace gpuspeech
