// Online fMLLR (common/fmllr/online_fmllr.h) on the CPU backend, with the
// small random model of fmllr_test_util.h and features drawn from it through
// a known affine distortion: when the transform changes (only after the
// configured amount of supervised speech), speaker changes, per-speaker
// files, alignments that come too late, unsupervised and auto supervision,
// the initial transform and its errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/online_fmllr.h"
#include "tests/fmllr_test_util.h"

namespace gpuspeech {
namespace {

constexpr int kDim = 6;
constexpr int64_t kFrameTime = 10'000'000;  // 10 ms in ns, as the element uses
constexpr int64_t kBlock = 100;             // frames per process() call

// A model, frames drawn from it (with their true senones) and the same
// frames through a distortion the transform should learn to undo.
struct Data {
  GaussianMixtures gm;
  std::vector<int32_t> senones;
  std::vector<float> clean, distorted;
  FmllrTransform distortion;
  int64_t frames = 0;
  explicit Data(int64_t n, unsigned seed = 11) : frames(n) {
    std::mt19937 rng(seed);
    gm = testing::fmllr_test_model(kDim, 2, 12, 2, rng);
    clean = testing::draw_features(gm, n, senones, rng);
    distortion = testing::random_affine(kDim, 0.2, rng);
    distorted.resize(clean.size());
    apply_fmllr_reference(distortion, clean.data(), n, distorted.data());
  }
  const float* frame(int64_t f) const { return distorted.data() + f * kDim; }
};

OnlineFmllrOptions base_options(FmllrSupervision s, double interval_seconds) {
  OnlineFmllrOptions o;
  o.supervision = s;
  o.update_interval_seconds = interval_seconds;
  o.frames_per_second = 100.0;
  o.estimation.min_frames = 300.0;
  return o;
}

// A temporary directory, removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/test_online_fmllr_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Largest deviation of W o distortion from the identity (offsets scaled
// down, as in test_fmllr.cpp): 0 when W undoes the distortion exactly.
double deviation_from_inverse(const FmllrTransform& w, const FmllrTransform& distortion) {
  double worst = 0.0;
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j <= kDim; ++j) {
      double v = j == kDim ? w.at(i, kDim) : 0.0;
      for (int k = 0; k < kDim; ++k) v += w.at(i, k) * distortion.at(k, j);
      worst = std::max(worst, std::fabs(v - (i == j ? 1.0 : 0.0)) / (j == kDim ? 3.0 : 1.0));
    }
  return worst;
}

bool same_bits(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(float)) == 0;
}

TEST(OnlineFmllr, TransformChangesOnlyAfterTheUpdateIntervalOfSupervisedSpeech) {
  const Data data(3600);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllr online(data.gm, *cpu, base_options(FmllrSupervision::kDecoder, 10.0));
  const double start_deviation = deviation_from_inverse(online.transform(), data.distortion);

  // Blocks of 100 frames; the alignment of each block arrives three blocks
  // later, as a decoder's would.
  const int lag = 3;
  std::vector<float> out(kBlock * kDim);
  std::vector<int64_t> update_at;  // supervised frames when each update came
  for (int64_t b = 0; b * kBlock < data.frames + lag * kBlock; ++b) {
    if (b * kBlock < data.frames) {
      const bool was_identity = online.transform().is_identity();
      auto u = online.process(data.frame(b * kBlock), kBlock, out.data(), b * kBlock * kFrameTime,
                              kFrameTime);
      EXPECT_FALSE(u) << "decoder supervision: process() never estimates";
      if (was_identity) {
        EXPECT_TRUE(same_bits(out.data(), data.frame(b * kBlock), kBlock * kDim))
            << "identity must pass frames bit for bit (block " << b << ")";
      } else {
        EXPECT_FALSE(same_bits(out.data(), data.frame(b * kBlock), kBlock * kDim))
            << "the new transform applies to the frames that follow (block " << b << ")";
      }
    }
    const int64_t a = b - lag;
    if (a < 0 || a * kBlock >= data.frames) continue;
    const double before = online.pending_frames();
    auto u = online.add_alignment(a * kBlock * kFrameTime, kFrameTime,
                                  data.senones.data() + a * kBlock, kBlock);
    if (!u) {
      EXPECT_NEAR(online.pending_frames(), before + kBlock, 1e-3);
      continue;
    }
    update_at.push_back(online.counters().frames_supervised);
    EXPECT_EQ(u->outcome, FmllrOutcome::kUpdated) << u->message;
    EXPECT_EQ(u->source, FmllrSupervision::kDecoder);
    EXPECT_NEAR(u->frames, static_cast<double>(online.counters().frames_supervised), 1e-2)
        << "estimated from all of the speaker's statistics";
    EXPECT_GT(u->objective_after, u->objective_before);
    EXPECT_TRUE(std::isfinite(u->log_det));
    EXPECT_DOUBLE_EQ(online.pending_frames(), 0.0);
    EXPECT_FALSE(online.transform().is_identity());
  }
  // 10 s at 100 frames a second: an estimate every 1000 supervised frames.
  ASSERT_EQ(update_at.size(), 3u);
  EXPECT_EQ(update_at[0], 1000);
  EXPECT_EQ(update_at[1], 2000);
  EXPECT_EQ(update_at[2], 3000);
  EXPECT_EQ(online.counters().updates, 3);
  EXPECT_EQ(online.counters().frames_late, 0);
  const double end_deviation = deviation_from_inverse(online.transform(), data.distortion);
  std::printf("deviation of W o distortion from the identity: %.4f -> %.4f\n", start_deviation,
              end_deviation);
  EXPECT_LT(end_deviation, 0.5 * start_deviation) << "the transform learns to undo the distortion";
}

// update_type_by_data: the estimated part of [A b] grows with the
// statistics: offset, then diagonal, then full, at frames_per_parameter
// frames for each parameter of the type.
TEST(OnlineFmllr, UpdateTypeGrowsWithTheStatistics) {
  // d = 39: diagonal from 5 x 78 = 390 frames, full from 5 x 1560 = 7800.
  EXPECT_EQ(fmllr_update_type_for_frames(389.9, 39, 5.0), FmllrUpdateType::kOffset);
  EXPECT_EQ(fmllr_update_type_for_frames(390.0, 39, 5.0), FmllrUpdateType::kDiag);
  EXPECT_EQ(fmllr_update_type_for_frames(7799.0, 39, 5.0), FmllrUpdateType::kDiag);
  EXPECT_EQ(fmllr_update_type_for_frames(7800.0, 39, 5.0), FmllrUpdateType::kFull);
  EXPECT_TRUE(OnlineFmllrOptions().update_type_by_data) << "the default";

  // d = 6, 20 frames a parameter: offset below 240, diagonal below 840,
  // full from 840; estimates every 300 supervised frames.
  const Data data(1200);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 3.0);
  o.estimation.min_frames = 100.0;
  o.frames_per_parameter = 20.0;
  OnlineFmllr online(data.gm, *cpu, o);
  std::vector<float> out(kBlock * kDim);
  std::vector<FmllrUpdateType> types;
  for (int64_t b = 0; b * kBlock < data.frames; ++b) {
    online.process(data.frame(b * kBlock), kBlock, out.data(), b * kBlock * kFrameTime, kFrameTime);
    auto u = online.add_alignment(b * kBlock * kFrameTime, kFrameTime,
                                  data.senones.data() + b * kBlock, kBlock);
    if (!u) continue;
    ASSERT_EQ(u->outcome, FmllrOutcome::kUpdated) << u->message;
    types.push_back(u->update_type);
    const FmllrTransform& w = online.transform();
    double off_diagonal = 0.0, diagonal_change = 0.0;
    for (int i = 0; i < kDim; ++i)
      for (int j = 0; j < kDim; ++j)
        (i == j ? diagonal_change : off_diagonal) += std::fabs(w.at(i, j) - (i == j ? 1.0 : 0.0));
    if (u->update_type == FmllrUpdateType::kOffset) {
      EXPECT_EQ(off_diagonal + diagonal_change, 0.0) << "offset: A = I";
    } else if (u->update_type == FmllrUpdateType::kDiag) {
      EXPECT_EQ(off_diagonal, 0.0) << "diag: A diagonal";
      EXPECT_GT(diagonal_change, 0.0);
    } else {
      EXPECT_GT(off_diagonal, 0.0) << "full: all of A";
    }
  }
  ASSERT_EQ(types.size(), 4u);  // at 300, 600, 900 and 1200 frames
  EXPECT_EQ(types[0], FmllrUpdateType::kDiag);
  EXPECT_EQ(types[1], FmllrUpdateType::kDiag);
  EXPECT_EQ(types[2], FmllrUpdateType::kFull);
  EXPECT_EQ(types[3], FmllrUpdateType::kFull);

  // Offset below the diagonal's threshold; with the option off, the fixed
  // type whatever the amount.
  o.frames_per_parameter = 40.0;  // diagonal from 480 frames
  OnlineFmllr small(data.gm, *cpu, o);
  o.update_type_by_data = false;
  o.estimation.update = FmllrUpdateType::kDiag;
  OnlineFmllr fixed(data.gm, *cpu, o);
  for (OnlineFmllr* x : {&small, &fixed}) {
    std::optional<OnlineFmllrUpdate> first;
    for (int64_t b = 0; b < 3 && !first; ++b) {
      x->process(data.frame(b * kBlock), kBlock, out.data(), b * kBlock * kFrameTime, kFrameTime);
      first = x->add_alignment(b * kBlock * kFrameTime, kFrameTime,
                               data.senones.data() + b * kBlock, kBlock);
    }
    ASSERT_TRUE(first);
    EXPECT_EQ(first->update_type,
              x == &small ? FmllrUpdateType::kOffset : FmllrUpdateType::kDiag);
  }
}

TEST(OnlineFmllr, TooLittleDataKeepsTheTransformAndSaysSo) {
  const Data data(600);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);
  o.estimation.min_frames = 2000.0;
  OnlineFmllr online(data.gm, *cpu, o);
  std::vector<float> out(static_cast<size_t>(data.frames * kDim));
  online.process(data.frame(0), data.frames, out.data(), 0, kFrameTime);
  auto u = online.add_alignment(0, kFrameTime, data.senones.data(), data.frames);
  ASSERT_TRUE(u) << "500 frames of supervision reach the 5 s interval";
  EXPECT_EQ(u->outcome, FmllrOutcome::kTooFewFrames);
  EXPECT_FALSE(u->message.empty());
  EXPECT_TRUE(online.transform().is_identity());
  EXPECT_EQ(online.counters().updates, 0);
  EXPECT_EQ(online.counters().estimations, 1);
}

// Runs `frames` frames from `first` through `online` with immediate
// alignments; returns the number of estimations.
int feed_supervised(OnlineFmllr& online, const Data& data, int64_t first, int64_t frames,
                    int64_t time_offset = 0) {
  std::vector<float> out(kBlock * kDim);
  int estimations = 0;
  for (int64_t f = first; f < first + frames; f += kBlock) {
    const int64_t t = time_offset + f * kFrameTime;
    online.process(data.frame(f), kBlock, out.data(), t, kFrameTime);
    if (online.add_alignment(t, kFrameTime, data.senones.data() + f, kBlock)) ++estimations;
  }
  return estimations;
}

TEST(OnlineFmllr, SpeakerChangeResetsToIdentityOrTheSavedTransform) {
  const Data data(2000);
  BackendPtr cpu = make_cpu_backend();
  TempDir dir;
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);
  o.transform_dir = dir.path + "/transforms";  // created on the first save
  OnlineFmllr online(data.gm, *cpu, o);
  EXPECT_TRUE(online.set_speaker("alice").changed);
  EXPECT_FALSE(online.set_speaker("alice").changed) << "the same speaker again changes nothing";

  ASSERT_EQ(feed_supervised(online, data, 0, 600), 1);
  ASSERT_FALSE(online.transform().is_identity());
  const FmllrTransform alice = online.transform();
  const std::string alice_file = dir.path + "/transforms/alice.mat";
  EXPECT_EQ(online.transform_path("alice"), alice_file);
  ASSERT_TRUE(std::filesystem::exists(alice_file)) << "saved after the update";

  // A frame of alice's, aligned only after the switch.
  std::vector<float> out(kBlock * kDim);
  online.process(data.frame(600), kBlock, out.data(), 600 * kFrameTime, kFrameTime);
  OnlineFmllr::SpeakerChange c = online.set_speaker("bob");
  EXPECT_TRUE(c.changed);
  EXPECT_FALSE(c.loaded);
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_TRUE(online.transform().is_identity()) << "a new speaker starts from the identity";
  EXPECT_DOUBLE_EQ(online.stats().beta, 0.0);
  EXPECT_DOUBLE_EQ(online.pending_frames(), 0.0);
  online.add_alignment(600 * kFrameTime, kFrameTime, data.senones.data() + 600, kBlock);
  EXPECT_EQ(online.counters().frames_other_speaker, kBlock) << "alice's frames are not bob's";
  EXPECT_DOUBLE_EQ(online.stats().beta, 0.0);
  online.process(data.frame(700), kBlock, out.data(), 700 * kFrameTime, kFrameTime);
  EXPECT_TRUE(same_bits(out.data(), data.frame(700), kBlock * kDim));

  c = online.set_speaker("alice");
  EXPECT_TRUE(c.loaded) << c.error;
  EXPECT_EQ(c.path, alice_file);
  EXPECT_EQ(online.transform().w, alice.w) << "the saved transform, exactly";
  EXPECT_DOUBLE_EQ(online.stats().beta, 0.0) << "statistics start afresh";

  // Anonymous speakers are adapted but never saved.
  online.set_speaker("");
  EXPECT_EQ(online.transform_path(""), "");
  ASSERT_EQ(feed_supervised(online, data, 800, 600, 800 * kFrameTime), 1);
  EXPECT_FALSE(online.transform().is_identity());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path + "/transforms"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(OnlineFmllr, SavedTransformsRoundTripAcrossInstances) {
  const Data data(1000);
  BackendPtr cpu = make_cpu_backend();
  TempDir dir;
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);
  o.transform_dir = dir.path;
  const std::string name = "reader 7/b";  // needs escaping
  FmllrTransform learnt;
  {
    OnlineFmllr first(data.gm, *cpu, o);
    first.set_speaker(name);
    ASSERT_EQ(feed_supervised(first, data, 0, 1000), 2);
    learnt = first.transform();
  }
  EXPECT_EQ(fmllr_speaker_file_name(name), "reader%207%2Fb.mat");
  EXPECT_EQ(fmllr_speaker_file_name(".x"), "%2Ex.mat") << "no hidden or '..' names";
  OnlineFmllr second(data.gm, *cpu, o);
  const OnlineFmllr::SpeakerChange c = second.set_speaker(name);
  ASSERT_TRUE(c.loaded) << c.error;
  EXPECT_EQ(second.transform().w, learnt.w);
  // And it is applied: the output is the reference application.
  std::vector<float> out(kBlock * kDim), want(kBlock * kDim);
  second.process(data.frame(0), kBlock, out.data(), 0, kFrameTime);
  apply_fmllr_reference(learnt, data.frame(0), kBlock, want.data());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])));

  // A saved file that is broken: the fallback transform and the reason.
  { std::ofstream(dir.path + "/carol.mat") << "[ 1 2 3\n4 5 ]\n"; }
  const OnlineFmllr::SpeakerChange bad = second.set_speaker("carol");
  EXPECT_FALSE(bad.loaded);
  EXPECT_NE(bad.error.find(dir.path + "/carol.mat"), std::string::npos) << bad.error;
  EXPECT_TRUE(second.transform().is_identity());
}

TEST(OnlineFmllr, TransformUpdateTypeIsJudgedFromA) {
  FmllrTransform t = FmllrTransform::identity(kDim);
  EXPECT_EQ(fmllr_transform_update_type(t), FmllrUpdateType::kOffset);
  t.at(2, kDim) = 0.5;  // b alone
  EXPECT_EQ(fmllr_transform_update_type(t), FmllrUpdateType::kOffset);
  t.at(3, 3) = 1.25;
  EXPECT_EQ(fmllr_transform_update_type(t), FmllrUpdateType::kDiag);
  t.at(3, 4) = 1e-12;  // any off-diagonal value: full, the safe side
  EXPECT_EQ(fmllr_transform_update_type(t), FmllrUpdateType::kFull);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A saved full transform is not replaced by a diagonal estimate while the
// new statistics support only that (update_type_by_data): kept, its file
// untouched, and the update says why; once they support a full one, it is
// estimated (from the saved transform) and saved.
TEST(OnlineFmllr, SavedFullTransformIsNotReplacedByAPoorerType) {
  const Data data(1200);
  BackendPtr cpu = make_cpu_backend();
  TempDir dir;
  std::mt19937 rng(5);
  const FmllrTransform saved = testing::random_affine(kDim, 0.1, rng);
  ASSERT_EQ(fmllr_transform_update_type(saved), FmllrUpdateType::kFull);
  const std::string file = dir.path + "/alice.mat";
  write_fmllr_transform(file, saved);
  const std::string saved_bytes = file_bytes(file);

  // d = 6, 20 frames a parameter: diagonal from 240 frames, full from 840;
  // estimations every 300.
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 3.0);
  o.estimation.min_frames = 100.0;
  o.frames_per_parameter = 20.0;
  o.transform_dir = dir.path;
  OnlineFmllr online(data.gm, *cpu, o);
  ASSERT_TRUE(online.set_speaker("alice").loaded);
  std::vector<float> out(kBlock * kDim);
  std::vector<OnlineFmllrUpdate> updates;
  std::vector<double> saved_objective;  // of `saved` on the statistics at each estimation
  for (int64_t b = 0; b * kBlock < data.frames; ++b) {
    online.process(data.frame(b * kBlock), kBlock, out.data(), b * kBlock * kFrameTime, kFrameTime);
    auto u = online.add_alignment(b * kBlock * kFrameTime, kFrameTime,
                                  data.senones.data() + b * kBlock, kBlock);
    if (u) {
      updates.push_back(*u);
      saved_objective.push_back(fmllr_objective(online.stats(), saved) / online.stats().beta);
    }
    if (updates.size() == 2 && b * kBlock < 700) {
      // Both early estimations (300 and 600 frames) kept the saved transform.
      EXPECT_EQ(online.transform().w, saved.w);
      EXPECT_EQ(file_bytes(file), saved_bytes) << "the saved file is not overwritten";
    }
  }
  ASSERT_EQ(updates.size(), 4u);  // at 300, 600, 900 and 1200 frames
  for (int i = 0; i < 2; ++i) {
    const OnlineFmllrUpdate& u = updates[static_cast<size_t>(i)];
    EXPECT_EQ(u.outcome, FmllrOutcome::kTooFewFrames) << u.message;
    EXPECT_EQ(u.update_type, FmllrUpdateType::kFull) << "the type in use";
    EXPECT_NE(u.message.find("keeping the full transform in use"), std::string::npos) << u.message;
    EXPECT_NE(u.message.find("only a diag estimate"), std::string::npos) << u.message;
    EXPECT_NE(u.message.find("needs 840"), std::string::npos) << u.message;
    EXPECT_TRUE(u.saved_path.empty());
    EXPECT_DOUBLE_EQ(u.objective_before, u.objective_after);
    EXPECT_NEAR(u.objective_before, saved_objective[static_cast<size_t>(i)],
                1e-9 * (1 + std::fabs(u.objective_before)))
        << "the saved transform's objective is reported";
  }
  for (int i = 2; i < 4; ++i) {
    const OnlineFmllrUpdate& u = updates[static_cast<size_t>(i)];
    EXPECT_EQ(u.outcome, FmllrOutcome::kUpdated) << u.message;
    EXPECT_EQ(u.update_type, FmllrUpdateType::kFull);
    EXPECT_GE(u.objective_after, u.objective_before);
    EXPECT_EQ(u.saved_path, file);
  }
  EXPECT_EQ(online.counters().estimations, 4);
  EXPECT_EQ(online.counters().updates, 2);
  EXPECT_NE(file_bytes(file), saved_bytes) << "saved once a full estimate was made";
}

// A transform estimated earlier in the session is the floor too: in auto
// mode the statistics start afresh at the first alignment, the transform
// stays, and the decoder's first few hundred frames support only a
// diagonal estimate.
TEST(OnlineFmllr, AutoSwitchKeepsTheFullUnsupervisedTransform) {
  const Data data(1200);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllrOptions o = base_options(FmllrSupervision::kAuto, 3.0);
  o.estimation.min_frames = 100.0;
  o.frames_per_parameter = 20.0;  // diagonal from 240 frames, full from 840
  OnlineFmllr online(data.gm, *cpu, o);
  std::vector<float> out(kBlock * kDim);
  std::vector<OnlineFmllrUpdate> unsupervised;
  for (int64_t f = 0; f < 900; f += kBlock)
    if (auto u = online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime))
      unsupervised.push_back(*u);
  ASSERT_EQ(unsupervised.size(), 3u);
  ASSERT_EQ(unsupervised.back().outcome, FmllrOutcome::kUpdated) << unsupervised.back().message;
  ASSERT_EQ(unsupervised.back().update_type, FmllrUpdateType::kFull);
  const FmllrTransform full = online.transform();

  std::optional<OnlineFmllrUpdate> u;
  for (int64_t f = 900; f < 1200 && !u; f += kBlock) {
    online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime);
    u = online.add_alignment(f * kFrameTime, kFrameTime, data.senones.data() + f, kBlock);
  }
  ASSERT_TRUE(u) << "300 aligned frames reach the 3 s interval";
  EXPECT_EQ(u->source, FmllrSupervision::kDecoder);
  EXPECT_EQ(u->outcome, FmllrOutcome::kTooFewFrames) << u->message;
  EXPECT_EQ(u->update_type, FmllrUpdateType::kFull);
  EXPECT_EQ(online.transform().w, full.w);
}

// Whatever the type (here a fixed offset update), an estimate whose
// objective is below the transform in use's on the same statistics is
// refused: the transform stays, its file is not overwritten.
TEST(OnlineFmllr, EstimateWorseThanTheTransformInUseIsRefused) {
  const Data data(1000);
  BackendPtr cpu = make_cpu_backend();
  TempDir dir;
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);
  o.update_type_by_data = false;
  o.estimation.update = FmllrUpdateType::kFull;
  // A full transform learnt from all the speaker's data, saved.
  FmllrTransform full;
  {
    OnlineFmllrOptions learn = o;
    learn.update_interval_seconds = 10.0;
    learn.transform_dir = dir.path;
    OnlineFmllr first(data.gm, *cpu, learn);
    first.set_speaker("carol");
    ASSERT_EQ(feed_supervised(first, data, 0, 1000), 1);
    full = first.transform();
  }
  const std::string file = dir.path + "/carol.mat";
  const std::string full_bytes = file_bytes(file);
  ASSERT_FALSE(full_bytes.empty());

  o.estimation.update = FmllrUpdateType::kOffset;
  o.transform_dir = dir.path;
  OnlineFmllr online(data.gm, *cpu, o);
  ASSERT_TRUE(online.set_speaker("carol").loaded);
  std::optional<OnlineFmllrUpdate> u;
  std::vector<float> out(kBlock * kDim);
  for (int64_t f = 0; f < 500 && !u; f += kBlock) {
    online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime);
    u = online.add_alignment(f * kFrameTime, kFrameTime, data.senones.data() + f, kBlock);
  }
  ASSERT_TRUE(u);
  EXPECT_EQ(u->update_type, FmllrUpdateType::kOffset);
  EXPECT_EQ(u->outcome, FmllrOutcome::kRefused) << u->message;
  EXPECT_NE(u->message.find("below the full transform in use"), std::string::npos) << u->message;
  EXPECT_DOUBLE_EQ(u->objective_after, u->objective_before);
  EXPECT_TRUE(u->saved_path.empty());
  EXPECT_EQ(online.transform().w, full.w);
  EXPECT_EQ(online.counters().updates, 0);
  EXPECT_EQ(file_bytes(file), full_bytes);
}

// The one place the element and gpuspeech-transcribe name a speaker's
// file: always directly inside the directory, whatever the name.
TEST(OnlineFmllr, SpeakerPathStaysInTheDirectory) {
  const std::string dir = "/some/dir";
  for (const std::string name : {"../../etc/passwd", "a/b", "/abs", "..", ".", "x y\t\xff"}) {
    const std::filesystem::path p(fmllr_speaker_path(dir, name));
    EXPECT_EQ(p.parent_path().string(), dir) << name;
    EXPECT_EQ(p.filename().string(), fmllr_speaker_file_name(name));
    EXPECT_NE(p.filename().string().front(), '.') << name;
  }
  EXPECT_EQ(fmllr_speaker_path(dir, "../../etc/passwd"), "/some/dir/%2E.%2F..%2Fetc%2Fpasswd.mat");
  const Data data(10);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);
  o.transform_dir = dir;
  OnlineFmllr online(data.gm, *cpu, o);
  EXPECT_EQ(online.transform_path("a/b"), fmllr_speaker_path(dir, "a/b"));
}

TEST(OnlineFmllr, LateAlignmentsAreCountedNotCrashedOn) {
  const Data data(1000);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 100.0);
  o.history_seconds = 2.0;  // 200 frames
  OnlineFmllr online(data.gm, *cpu, o);
  std::vector<float> out(kBlock * kDim);
  for (int64_t f = 0; f < 1000; f += kBlock)
    online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime);

  EXPECT_FALSE(online.add_alignment(0, kFrameTime, data.senones.data(), 150));
  EXPECT_EQ(online.counters().frames_late, 150);
  EXPECT_EQ(online.counters().frames_supervised, 0);
  EXPECT_DOUBLE_EQ(online.stats().beta, 0.0);
  // Straddling the history's start: the old part late, the rest used.
  online.add_alignment(750 * kFrameTime, kFrameTime, data.senones.data() + 750, 100);
  EXPECT_EQ(online.counters().frames_late, 200);
  EXPECT_EQ(online.counters().frames_supervised, 50);
  // Again: already accumulated.
  online.add_alignment(800 * kFrameTime, kFrameTime, data.senones.data() + 800, 50);
  EXPECT_EQ(online.counters().frames_repeated, 50);
  // Frames that never came (the future) and -1 frames.
  std::vector<int32_t> future(20, 3);
  future[0] = -1;
  online.add_alignment(1000 * kFrameTime, kFrameTime, future.data(), 20);
  EXPECT_EQ(online.counters().frames_unmatched, 19);
  EXPECT_EQ(online.counters().frames_unaligned, 1);
  // Times 3 ms off still find their frames (within half a frame).
  online.add_alignment(900 * kFrameTime + 3'000'000, kFrameTime, data.senones.data() + 900, 10);
  EXPECT_EQ(online.counters().frames_supervised, 60);
  // A flush forgets the history: everything before it is late.
  online.clear_history();
  online.add_alignment(950 * kFrameTime, kFrameTime, data.senones.data() + 950, 10);
  EXPECT_EQ(online.counters().frames_late, 210);
  // Bad senones are an error, not a crash.
  std::vector<int32_t> bad = {0, data.gm.num_senones};
  EXPECT_THROW(online.add_alignment(0, kFrameTime, bad.data(), 2), std::invalid_argument);
  EXPECT_THROW(online.add_alignment(0, 0, bad.data(), 1), std::invalid_argument);
  EXPECT_TRUE(online.transform().is_identity());
}

TEST(OnlineFmllr, UnsupervisedAdaptsWithoutAnyAlignment) {
  Data data(1300);
  // One frame with a NaN: passed through, left out of the statistics.
  data.distorted[static_cast<size_t>(5 * kDim + 2)] = std::numeric_limits<float>::quiet_NaN();
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllr online(data.gm, *cpu, base_options(FmllrSupervision::kUnsupervised, 5.0));
  const double start_deviation = deviation_from_inverse(online.transform(), data.distortion);
  std::vector<float> out(kBlock * kDim);
  std::vector<int64_t> update_at;
  for (int64_t f = 0; f < data.frames; f += kBlock) {
    auto u = online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime);
    if (f == 0) {
      EXPECT_TRUE(std::isnan(out[5 * kDim + 2]));
    }
    if (!u) continue;
    update_at.push_back(online.counters().frames_processed);
    EXPECT_EQ(u->source, FmllrSupervision::kUnsupervised);
    EXPECT_EQ(u->outcome, FmllrOutcome::kUpdated) << u->message;
    EXPECT_GT(u->objective_after, u->objective_before);
  }
  // 499 usable frames in the first 500: the interval is reached at 600.
  ASSERT_EQ(update_at.size(), 2u);
  EXPECT_EQ(update_at[0], 600);
  EXPECT_EQ(update_at[1], 1100);
  EXPECT_EQ(online.counters().frames_non_finite, 1);
  EXPECT_TRUE(online.transform().all_finite());
  EXPECT_EQ(online.active_supervision(), FmllrSupervision::kUnsupervised);
  // Alignments are ignored in this mode.
  online.add_alignment(0, kFrameTime, data.senones.data(), 10);
  EXPECT_EQ(online.counters().alignments_ignored, 1);
  const double end_deviation = deviation_from_inverse(online.transform(), data.distortion);
  std::printf("unsupervised: deviation of W o distortion from the identity: %.4f -> %.4f\n",
              start_deviation, end_deviation);
  EXPECT_LT(end_deviation, start_deviation);
}

TEST(OnlineFmllr, AutoIsUnsupervisedUntilTheFirstAlignment) {
  const Data data(900);
  BackendPtr cpu = make_cpu_backend();
  OnlineFmllr online(data.gm, *cpu, base_options(FmllrSupervision::kAuto, 5.0));
  std::vector<float> out(kBlock * kDim);
  for (int64_t f = 0; f < 300; f += kBlock)
    online.process(data.frame(f), kBlock, out.data(), f * kFrameTime, kFrameTime);
  EXPECT_EQ(online.active_supervision(), FmllrSupervision::kUnsupervised);
  EXPECT_NEAR(online.stats().beta, 300.0, 1e-2);
  // The first alignment: unsupervised statistics dropped, decoder from now on.
  online.add_alignment(100 * kFrameTime, kFrameTime, data.senones.data() + 100, 50);
  EXPECT_EQ(online.active_supervision(), FmllrSupervision::kDecoder);
  EXPECT_NEAR(online.stats().beta, 50.0, 1e-3);
  online.process(data.frame(300), kBlock, out.data(), 300 * kFrameTime, kFrameTime);
  EXPECT_NEAR(online.stats().beta, 50.0, 1e-3) << "no unsupervised statistics after the switch";
}

TEST(OnlineFmllr, InitialTransformIsUsedAndCheckedAtConstruction) {
  const Data data(200);
  BackendPtr cpu = make_cpu_backend();
  TempDir dir;
  OnlineFmllrOptions o = base_options(FmllrSupervision::kDecoder, 5.0);

  std::mt19937 rng(3);
  const FmllrTransform init = testing::random_affine(kDim, 0.1, rng);
  o.initial_transform = dir.path + "/init.mat";
  write_fmllr_transform(o.initial_transform, init);
  OnlineFmllr online(data.gm, *cpu, o);
  EXPECT_EQ(online.transform().w, init.w);
  std::vector<float> out(kBlock * kDim), want(kBlock * kDim);
  online.process(data.frame(0), kBlock, out.data(), 0, kFrameTime);
  apply_fmllr_reference(init, data.frame(0), kBlock, want.data());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])));
  // It is also the start of every new speaker without a file.
  online.set_speaker("dave");
  EXPECT_EQ(online.transform().w, init.w);

  auto expect_error = [&](const std::string& path, const std::string& reason) {
    OnlineFmllrOptions bad = o;
    bad.initial_transform = path;
    try {
      OnlineFmllr x(data.gm, *cpu, bad);
      ADD_FAILURE() << path << " accepted";
    } catch (const FmllrFormatError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(reason), std::string::npos) << what;
    }
  };
  const std::string malformed = dir.path + "/malformed.mat";
  { std::ofstream(malformed) << "[\n 1 0 x\n]\n"; }
  expect_error(malformed, malformed + ":2");
  const std::string wrong_size = dir.path + "/13.mat";
  write_fmllr_transform(wrong_size, FmllrTransform::identity(13));
  expect_error(wrong_size, "dimension 6");
  expect_error(dir.path + "/missing.mat", "cannot open");

  OnlineFmllrOptions bad = o;
  bad.update_interval_seconds = 0.0;
  EXPECT_THROW(OnlineFmllr(data.gm, *cpu, bad), std::invalid_argument);
  FmllrSupervision s;
  EXPECT_TRUE(parse_fmllr_supervision("unsupervised", &s));
  EXPECT_EQ(s, FmllrSupervision::kUnsupervised);
  EXPECT_FALSE(parse_fmllr_supervision("sometimes", &s));
}

}  // namespace
}  // namespace gpuspeech
