// Channel priors (common/fmllr/channel_priors.h): a stream is given the
// channel its statistics came through, scored against the library's
// reference, and none when it came through none of them; the library's
// directory is read with its errors named; decoders share one copy of it,
// and of an adapt-prior file (channel_prior_cache.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/fmllr/channel_prior_cache.h"
#include "common/fmllr/channel_priors.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_stats_io.h"
#include "common/fmllr/fmllr_transform.h"
#include "tests/fmllr_test_util.h"

namespace gpuspeech {
namespace {

namespace fs = std::filesystem;
using testing::draw_features;
using testing::fmllr_test_model;
using testing::random_affine;

constexpr int kDim = 6;

// Statistics of frames drawn from the model and passed through `through`
// (identity posteriors: the E-step of a stream's first pass).
FmllrStats recorded(const GaussianMixtures& gm, const FmllrTransform& through, int64_t frames, std::mt19937& rng) {
  std::vector<int32_t> senones;
  const std::vector<float> clean = draw_features(gm, frames, senones, rng);
  std::vector<float> x(clean.size());
  apply_fmllr_reference(through, clean.data(), frames, x.data());
  const GaussianPosteriors post = supervised_posteriors(gm, x.data(), frames, senones.data());
  BackendPtr cpu = make_cpu_backend();
  FmllrAccumulator acc(gm, *cpu, 512);
  acc.accumulate(x.data(), frames, post);
  return acc.stats();
}

// y = second(first(x)) as one transform.
FmllrTransform compose(const FmllrTransform& second, const FmllrTransform& first) {
  const int d = first.dim;
  FmllrTransform t = FmllrTransform::identity(d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j <= d; ++j) {
      double v = j == d ? second.at(i, d) : 0.0;
      for (int k = 0; k < d; ++k) v += second.at(i, k) * first.at(k, j);
      t.at(i, j) = v;
    }
  return t;
}

ChannelPrior prior_of(const std::string& name, FmllrStats s) {
  ChannelPrior p;
  p.name = name;
  const FmllrEstimate est = estimate_fmllr(s, FmllrOptions{});
  EXPECT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
  p.transform = est.transform;
  p.stats = std::make_shared<const FmllrStats>(std::move(s));
  return p;
}

struct Library {
  GaussianMixtures gm;
  FmllrTransform speakers, channel_a, channel_b;
  ChannelPriorSet set;
};

// The library's recordings share their speakers' own distortion (as real
// speech differs from a synthesiser's), and are recorded once as they are
// and once through each of two channels.
Library make_library(std::mt19937& rng) {
  Library lib;
  lib.gm = fmllr_test_model(kDim, 2, 16, 2, rng);
  lib.speakers = random_affine(kDim, 0.15, rng);
  lib.channel_a = random_affine(kDim, 0.3, rng);
  lib.channel_b = random_affine(kDim, 0.3, rng);
  lib.set.reference = prior_of("reference", recorded(lib.gm, lib.speakers, 8000, rng));
  lib.set.channels.push_back(prior_of("a", recorded(lib.gm, compose(lib.channel_a, lib.speakers), 8000, rng)));
  lib.set.channels.push_back(prior_of("b", recorded(lib.gm, compose(lib.channel_b, lib.speakers), 8000, rng)));
  return lib;
}

TEST(ChannelPriors, AStreamIsGivenTheChannelItCameThrough) {
  std::mt19937 rng(11);
  const Library lib = make_library(rng);
  // New speakers (another distortion of their own) through each channel,
  // a sentence's worth of frames each.
  for (int trial = 0; trial < 4; ++trial) {
    const FmllrTransform speaker = random_affine(kDim, 0.1, rng);
    const FmllrStats via_a = recorded(lib.gm, compose(lib.channel_a, speaker), 400, rng);
    const FmllrStats via_b = recorded(lib.gm, compose(lib.channel_b, speaker), 400, rng);
    const FmllrStats direct = recorded(lib.gm, speaker, 400, rng);
    const ChannelChoice a = lib.set.choose(via_a, 0.0);
    const ChannelChoice b = lib.set.choose(via_b, 0.0);
    const ChannelChoice none = lib.set.choose(direct, 0.0);
    std::printf("trial %d: through a %d (%.3f), through b %d (%.3f), direct %d (%.3f)\n", trial, a.index, a.gain,
                b.index, b.gain, none.index, none.gain);
    EXPECT_EQ(a.index, 0);
    EXPECT_EQ(b.index, 1);
    EXPECT_GT(a.gain, 0.5);
    EXPECT_GT(b.gain, 0.5);
    EXPECT_EQ(none.index, -1) << "no channel: the reference explains it best";
    EXPECT_LT(none.gain, 0.0);
    // The gain is the objective's difference a frame, as documented.
    const double q = (fmllr_objective(via_a, lib.set.channels[0].transform) -
                      fmllr_objective(via_a, lib.set.reference.transform)) /
                     via_a.beta;
    EXPECT_NEAR(a.gain, q, 1e-9 * std::abs(q) + 1e-12);
    // Below the threshold: none, with the best channel's gain reported.
    const ChannelChoice high = lib.set.choose(via_a, a.gain + 1e-6);
    EXPECT_EQ(high.index, -1);
    EXPECT_DOUBLE_EQ(high.gain, a.gain);
  }
  // No frames: none.
  EXPECT_EQ(lib.set.choose(FmllrStats(kDim), -1e9).index, -1);
}

class ChannelPriorDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuspeech-channel-priors-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }
  std::string dir_;
};

TEST_F(ChannelPriorDir, ReadsTheReferenceAndEveryChannelInOrder) {
  std::mt19937 rng(3);
  const Library lib = make_library(rng);
  write_fmllr_stats(path("reference.stats"), *lib.set.reference.stats);
  write_fmllr_stats(path("zz-second.stats"), *lib.set.channels[1].stats);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  write("README", "not a prior");
  const ChannelPriorSet set = load_channel_priors(dir_, kDim);
  EXPECT_EQ(set.reference.name, "reference");
  ASSERT_EQ(set.channels.size(), 2u);
  EXPECT_EQ(set.channels[0].name, "gsm");
  EXPECT_EQ(set.channels[1].name, "zz-second");
  EXPECT_EQ(set.channels[0].stats->beta, lib.set.channels[0].stats->beta);
  EXPECT_EQ(set.channels[0].transform.w, lib.set.channels[0].transform.w);
  EXPECT_EQ(set.reference.transform.w, lib.set.reference.transform.w);

  // The model check: a `model` file names the means the statistics were
  // taken with.
  write("means", "one model's means");
  write("other-means", "another model's means");
  write("model", model_file_signature(path("means")) + "\n");
  EXPECT_NO_THROW(load_channel_priors(dir_, kDim, path("means")));
  EXPECT_NO_THROW(load_channel_priors(dir_, kDim));  // not asked to check
  try {
    load_channel_priors(dir_, kDim, path("other-means"));
    ADD_FAILURE() << "another model's means were accepted";
  } catch (const ChannelPriorModelMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("another acoustic model"), std::string::npos) << e.what();
  }
  write("model", "a model\n");
  EXPECT_THROW(load_channel_priors(dir_, kDim, path("means")), ChannelPriorError);
}

// The optional `weights` file: "NAME WEIGHT" lines, comments and blank
// lines allowed; a channel it does not name weighs 1; a bad line or an
// unknown channel is refused with the file and line named.
TEST_F(ChannelPriorDir, ReadsEachChannelsWeight) {
  std::mt19937 rng(5);
  const Library lib = make_library(rng);
  write_fmllr_stats(path("reference.stats"), *lib.set.reference.stats);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  write_fmllr_stats(path("mulaw.stats"), *lib.set.channels[1].stats);
  EXPECT_EQ(load_channel_priors(dir_, kDim).channels[1].weight, 1.0);
  write("weights", "# recognised, no prior\n\nmulaw 0   # its statistics cost more than they give\n");
  ChannelPriorSet set = load_channel_priors(dir_, kDim);
  ASSERT_EQ(set.channels.size(), 2u);
  EXPECT_EQ(set.channels[0].name, "gsm");
  EXPECT_EQ(set.channels[0].weight, 1.0);
  EXPECT_EQ(set.channels[1].name, "mulaw");
  EXPECT_EQ(set.channels[1].weight, 0.0);
  write("weights", "gsm 0.25\n");
  EXPECT_EQ(load_channel_priors(dir_, kDim).channels[0].weight, 0.25);
  for (const char* bad : {"gsm\n", "gsm 1.5\n", "gsm -0.1\n", "gsm nan\n", "gsm 0.5 extra\n", "gsm x\n",
                          "gsm 0.5x\n", "gsm 0,5\n", "gsm 1\nmulaw 0\ngsm 0\n", "# fine\nopus 0.5\n"}) {
    write("weights", bad);
    try {
      load_channel_priors(dir_, kDim);
      ADD_FAILURE() << "accepted weights: " << bad;
    } catch (const ChannelPriorError& e) {
      EXPECT_NE(std::string(e.what()).find("weights:"), std::string::npos) << e.what();
    }
  }
  write("weights", "# fine\nopus 0.5\n");
  try {
    load_channel_priors(dir_, kDim);
  } catch (const ChannelPriorError& e) {
    EXPECT_NE(std::string(e.what()).find("weights:2: no channel opus"), std::string::npos) << e.what();
  }
  write("weights", "gsm 1\nmulaw 0\ngsm 0\n");
  try {
    load_channel_priors(dir_, kDim);
  } catch (const ChannelPriorError& e) {
    EXPECT_NE(std::string(e.what()).find("weights:3: gsm given a weight again (first on line 1)"),
              std::string::npos)
        << e.what();
  }
  write("weights", "");  // empty: every channel weighs 1
  EXPECT_EQ(load_channel_priors(dir_, kDim).channels[1].weight, 1.0);
}

TEST_F(ChannelPriorDir, RefusesWhatIsNotALibraryNamingTheFile) {
  std::mt19937 rng(4);
  const Library lib = make_library(rng);
  auto message_of = [&](int dim) -> std::string {
    try {
      load_channel_priors(dir_, dim);
    } catch (const ChannelPriorError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THROW(load_channel_priors(dir_ + "/absent", kDim), ChannelPriorError);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  EXPECT_NE(message_of(kDim).find("reference.stats: missing"), std::string::npos) << message_of(kDim);
  fs::remove(path("gsm.stats"));
  write_fmllr_stats(path("reference.stats"), *lib.set.reference.stats);
  EXPECT_NE(message_of(kDim).find("no channel"), std::string::npos) << message_of(kDim);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  EXPECT_EQ(message_of(kDim), "");
  // Another dimension than the features'.
  EXPECT_NE(message_of(kDim + 1).find("dimension"), std::string::npos) << message_of(kDim + 1);
  // Broken statistics, named.
  write("bad.stats", "[ 1 2\n 3 4 ]\n");
  EXPECT_NE(message_of(kDim).find("bad.stats"), std::string::npos) << message_of(kDim);
  fs::remove(path("bad.stats"));
  // Statistics with no frames.
  write_fmllr_stats(path("empty.stats"), FmllrStats(kDim));
  EXPECT_NE(message_of(kDim).find("empty.stats"), std::string::npos) << message_of(kDim);
}

TEST_F(ChannelPriorDir, DecodersShareOneCopyOfALibrary) {
  std::mt19937 rng(5);
  const Library lib = make_library(rng);
  write_fmllr_stats(path("reference.stats"), *lib.set.reference.stats);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  const size_t before = channel_prior_sets_alive();
  bool shared = true;
  std::shared_ptr<const ChannelPriorSet> a = acquire_channel_priors(dir_, kDim, "", &shared);
  EXPECT_FALSE(shared);
  EXPECT_EQ(a->channels.size(), 1u);
  // The same directory named another way is the same library.
  std::shared_ptr<const ChannelPriorSet> b = acquire_channel_priors(dir_ + "/./", kDim, "", &shared);
  EXPECT_TRUE(shared);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(channel_prior_sets_alive(), before + 1);
  // Another dimension is another library (here: refused, and nothing kept).
  EXPECT_THROW(acquire_channel_priors(dir_, kDim + 1), ChannelPriorError);
  EXPECT_EQ(channel_prior_sets_alive(), before + 1);
  // A library changed on disk (a channel added) is a new one for the next
  // decoder; the running ones keep theirs.
  write_fmllr_stats(path("second.stats"), *lib.set.channels[1].stats);
  std::shared_ptr<const ChannelPriorSet> c = acquire_channel_priors(dir_, kDim, "", &shared);
  EXPECT_FALSE(shared);
  EXPECT_EQ(c->channels.size(), 2u);
  EXPECT_EQ(a->channels.size(), 1u);
  EXPECT_EQ(channel_prior_sets_alive(), before + 2);
  // The last holder lets go: freed.
  a.reset();
  b.reset();
  EXPECT_EQ(channel_prior_sets_alive(), before + 1);
  // A failed load caches nothing: after the damage is mended it loads.
  c.reset();
  write("reference.stats", "[ 1 2\n 3 4 ]\n");
  EXPECT_THROW(acquire_channel_priors(dir_, kDim), ChannelPriorError);
  write_fmllr_stats(path("reference.stats"), *lib.set.reference.stats);
  EXPECT_EQ(acquire_channel_priors(dir_, kDim)->channels.size(), 2u);
  // Sharing off (GPUSPEECH_SHARE_RESOURCES=0): a copy each.
  std::shared_ptr<const ChannelPriorSet> d = acquire_channel_priors(dir_, kDim);
  setenv("GPUSPEECH_SHARE_RESOURCES", "0", 1);
  std::shared_ptr<const ChannelPriorSet> e = acquire_channel_priors(dir_, kDim, "", &shared);
  unsetenv("GPUSPEECH_SHARE_RESOURCES");
  EXPECT_FALSE(shared);
  EXPECT_NE(d.get(), e.get());
}

// adapt-prior's statistics file: one copy per file and dimension, a file
// rewritten on disk a new one, a failed read cached as nothing.
TEST_F(ChannelPriorDir, DecodersShareOneCopyOfAPriorFile) {
  std::mt19937 rng(6);
  const Library lib = make_library(rng);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  const size_t before = prior_stats_alive();
  bool shared = true;
  std::shared_ptr<const FmllrStats> a = acquire_prior_stats(path("gsm.stats"), kDim, &shared);
  EXPECT_FALSE(shared);
  EXPECT_EQ(a->g, lib.set.channels[0].stats->g);
  std::shared_ptr<const FmllrStats> b = acquire_prior_stats(dir_ + "/./gsm.stats", kDim, &shared);
  EXPECT_TRUE(shared);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(prior_stats_alive(), before + 1);
  EXPECT_THROW(acquire_prior_stats(path("gsm.stats"), kDim + 1), FmllrFormatError);
  EXPECT_EQ(prior_stats_alive(), before + 1);
  // Replaced with another channel's statistics (written beside it and
  // renamed over it, a new inode: a rewrite in place within one tick of
  // the file clock with the same size would keep its identity): the next
  // decoder reads it.
  write_fmllr_stats(path("new.stats"), *lib.set.channels[1].stats);
  fs::rename(path("new.stats"), path("gsm.stats"));
  std::shared_ptr<const FmllrStats> c = acquire_prior_stats(path("gsm.stats"), kDim, &shared);
  EXPECT_FALSE(shared);
  EXPECT_EQ(c->g, lib.set.channels[1].stats->g);
  EXPECT_EQ(a->g, lib.set.channels[0].stats->g);
  a.reset();
  b.reset();
  EXPECT_EQ(prior_stats_alive(), before + 1);
  c.reset();
  write("gsm.stats", "[ 1 2\n 3 4 ]\n");
  EXPECT_THROW(acquire_prior_stats(path("gsm.stats"), kDim), FmllrFormatError);
  EXPECT_EQ(prior_stats_alive(), before);
  setenv("GPUSPEECH_SHARE_RESOURCES", "0", 1);
  write_fmllr_stats(path("gsm.stats"), *lib.set.channels[0].stats);
  std::shared_ptr<const FmllrStats> d = acquire_prior_stats(path("gsm.stats"), kDim);
  std::shared_ptr<const FmllrStats> e = acquire_prior_stats(path("gsm.stats"), kDim, &shared);
  unsetenv("GPUSPEECH_SHARE_RESOURCES");
  EXPECT_FALSE(shared);
  EXPECT_NE(d.get(), e.get());
  EXPECT_EQ(prior_stats_alive(), before);
}

}  // namespace
}  // namespace gpuspeech
