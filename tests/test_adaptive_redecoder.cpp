// AdaptiveRedecoder (common/engine/adaptive_redecoder.h): the second pass
// decodes the utterance under the transform it learnt, the next utterance
// is decoded under it from its first frame, a dropped utterance teaches
// nothing, and too little speech keeps the first pass. On the en-us model
// with the goforward recording and grammar (pocketsphinx-testdata).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/engine/adaptive_redecoder.h"
#include "common/engine/recognizer.h"
#include "common/backends/backend_registry.h"
#include "common/features/cmn_trace.h"
#include "common/features/feature_pipeline.h"
#include "common/features/stream_extractor.h"
#include "common/features/wav_reader.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/fmllr/online_fmllr.h"
#include "common/fmllr/vtln_choice.h"
#include "tests/goforward_fixture.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

bool have_goforward() { return testing::goforward_available(); }
using testing::goforward_config;

// The recording's features as the decoder takes them.
std::vector<float> goforward_features(Recognizer& rec) {
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  return rec.compute_features(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
}

// Pushes in uneven chunks, as a stream delivers them.
void push_chunked(AdaptiveRedecoder& a, const std::vector<float>& f, int dim) {
  const int64_t rows = static_cast<int64_t>(f.size()) / dim;
  for (int64_t at = 0, k = 7; at < rows; at += k, k = k * 3 % 61 + 1)
    a.push_features(f.data() + at * dim, std::min(k, rows - at));
}

// What an adapting stream learns from `f` as one utterance: its statistics
// (the recognizer reset after).
FmllrStats learnt_stats(Recognizer& rec, const AdaptiveRedecoderOptions& o, const std::vector<float>& f) {
  AdaptiveRedecoder learner(rec, o);
  push_chunked(learner, f, rec.feature_dim());
  learner.finish();
  learner.reset();
  return learner.stats();
}

RecognitionResult decode_plain(Recognizer& rec, const std::vector<float>& f) {
  rec.reset();
  rec.push_features(f.data(), static_cast<int64_t>(f.size()) / rec.feature_dim());
  return rec.finish();
}

std::vector<float> transformed(const FmllrTransform& t, const std::vector<float>& f) {
  std::vector<float> y(f.size());
  apply_fmllr_reference(t, f.data(), static_cast<int64_t>(f.size()) / t.dim, y.data());
  return y;
}

// The largest difference between two speakers' statistics, each sum
// relative to the largest magnitude of its kind in `b` (beta, the k rows,
// the G matrices).
double stats_distance(const FmllrStats& a, const FmllrStats& b) {
  if (a.dim != b.dim) return std::numeric_limits<double>::infinity();
  auto relative = [](const std::vector<double>& u, const std::vector<double>& v) {
    double scale = 0.0, d = 0.0;
    for (size_t i = 0; i < v.size(); ++i) {
      scale = std::max(scale, std::fabs(v[i]));
      d = std::max(d, std::fabs(u[i] - v[i]));
    }
    return scale > 0.0 ? d / scale : d;
  };
  return std::max({std::fabs(a.beta - b.beta) / std::max(b.beta, 1.0), relative(a.k, b.k), relative(a.g, b.g)});
}

void expect_same_words(const RecognitionResult& a, const RecognitionResult& b) {
  ASSERT_EQ(a.best.words.size(), b.best.words.size()) << a.text() << " | " << b.text();
  for (size_t i = 0; i < a.best.words.size(); ++i) {
    EXPECT_EQ(a.best.words[i].text, b.best.words[i].text);
    EXPECT_EQ(a.best.words[i].start_frame, b.best.words[i].start_frame);
    EXPECT_EQ(a.best.words[i].end_frame, b.best.words[i].end_frame);
  }
}

TEST(AdaptiveRedecoder, RefusesARecognizerThatDropsItsFeatures) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(false));
  try {
    AdaptiveRedecoder a(rec);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("keep_features_for_alignment"), std::string::npos) << e.what();
  }
}

TEST(AdaptiveRedecoder, SecondPassDecodesUnderTheTransformItLearnt) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  const int64_t rows = static_cast<int64_t>(f.size()) / dim;
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;  // the recording has about 2 s of speech
  o.min_redecode_gain = 0.0;       // every new estimate decodes again
  AdaptiveRedecoder a(rec, o);

  push_chunked(a, f, dim);
  const RecognitionResult r1 = a.finish();
  const RedecodeReport rep = a.last_report();
  ASSERT_TRUE(rep.redecoded) << to_string(rep.outcome) << ": " << rep.message;
  EXPECT_TRUE(rep.adapted);
  EXPECT_FALSE(a.transform().is_identity());
  EXPECT_GT(rep.frames_aligned, 50);
  EXPECT_LE(rep.frames_aligned, rows);
  // The statistics kept are the second decoding's alignment: about a frame
  // of weight per aligned frame.
  EXPECT_NEAR(a.stats().beta, static_cast<double>(rep.frames_aligned), 0.02 * rep.frames_aligned + 1);
  EXPECT_EQ(r1.text(), "go forward ten meters");
  // The result is the decoding of the features under the transform learnt.
  const FmllrTransform t1 = a.transform();
  expect_same_words(r1, decode_plain(plain, transformed(t1, f)));
  // The recognizer still holds that decoding until reset().
  EXPECT_EQ(rec.align(r1.best.words).words_aligned, static_cast<int>(r1.best.words.size()));

  // The next utterance is decoded under t1 from its first frame: its first
  // pass (the partial before the end) is the plain decoding of t1(f).
  a.reset();
  push_chunked(a, f, dim);
  plain.reset();
  const std::vector<float> y1 = transformed(t1, f);
  plain.push_features(y1.data(), rows);
  EXPECT_EQ(rec.partial().text(), plain.partial().text());
  const double beta1 = a.stats().beta;
  const RecognitionResult r2 = a.finish();
  EXPECT_TRUE(a.last_report().redecoded);
  EXPECT_GT(a.stats().beta, 1.5 * beta1);  // both utterances now
  expect_same_words(r2, decode_plain(plain, transformed(a.transform(), f)));

  // A dropped utterance teaches nothing.
  a.reset();
  const FmllrTransform t2 = a.transform();
  const double beta2 = a.stats().beta;
  push_chunked(a, f, dim);
  a.reset();
  EXPECT_EQ(a.stats().beta, beta2);
  EXPECT_EQ(a.transform().w, t2.w);

  // Another speaker starts from nothing.
  a.new_speaker();
  EXPECT_TRUE(a.transform().is_identity());
  EXPECT_EQ(a.stats().beta, 0.0);
}

// A new estimate that gains less than min_redecode_gain is kept for the
// utterances that follow, and the utterance keeps its first pass.
TEST(AdaptiveRedecoder, ASmallGainKeepsTheFirstPassAndTheNewTransform) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  const int64_t rows = static_cast<int64_t>(f.size()) / dim;
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  AdaptiveRedecoderOptions always = o;
  always.min_redecode_gain = 0.0;
  // The gain of the first estimate, from a redecoder that always decodes
  // again; the second is asked for a little more.
  double first_gain = 0.0;
  {
    Recognizer r2(goforward_config(true));
    AdaptiveRedecoder probe(r2, always);
    push_chunked(probe, f, dim);
    probe.finish();
    ASSERT_TRUE(probe.last_report().redecoded);
    first_gain = probe.last_report().gain;
  }
  ASSERT_GT(first_gain, 0.0);
  o.min_redecode_gain = first_gain * 1.01;
  AdaptiveRedecoder a(rec, o);
  push_chunked(a, f, dim);
  const RecognitionResult r1 = a.finish();
  const RedecodeReport rep = a.last_report();
  EXPECT_FALSE(rep.redecoded);
  EXPECT_FALSE(rep.adapted);  // decoded under the identity
  EXPECT_EQ(rep.outcome, FmllrOutcome::kUpdated);
  EXPECT_DOUBLE_EQ(rep.gain, first_gain);
  EXPECT_FALSE(a.transform().is_identity());  // learnt, for what follows
  expect_same_words(r1, decode_plain(plain, f));  // the first pass stands
  EXPECT_NEAR(a.stats().beta, static_cast<double>(rep.frames_aligned), 0.02 * rep.frames_aligned + 1);

  // The next utterance is decoded under that transform from its first
  // frame, and with a smaller gain now, its first pass is final too.
  const FmllrTransform t1 = a.transform();
  a.reset();
  push_chunked(a, f, dim);
  const RecognitionResult r2 = a.finish();
  EXPECT_FALSE(a.last_report().redecoded);
  EXPECT_TRUE(a.last_report().adapted);  // its first pass was, under t1
  EXPECT_LT(a.last_report().gain, first_gain);
  expect_same_words(r2, decode_plain(plain, transformed(t1, f)));
  EXPECT_EQ(static_cast<int64_t>(transformed(t1, f).size()) / dim, rows);

  AdaptiveRedecoderOptions bad;
  bad.min_redecode_gain = -1.0;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
}

// young_below_frames: while the statistics hold fewer frames than that, the
// estimate has young_update's form (a stream's first sentence); from then
// on estimation.update's. The result is the decoding under the young
// transform, and without the option the same first utterance gets a full
// one.
TEST(AdaptiveRedecoder, AYoungStreamsTransformHasTheYoungForm) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  o.min_redecode_gain = 0.0;
  double first_beta = 0.0;
  {
    Recognizer r2(goforward_config(true));
    AdaptiveRedecoderOptions full = o;
    full.young_below_frames = 0.0;  // full at once
    AdaptiveRedecoder probe(r2, full);
    push_chunked(probe, f, dim);
    probe.finish();
    ASSERT_TRUE(probe.last_report().redecoded);
    EXPECT_EQ(fmllr_transform_update_type(probe.transform()), FmllrUpdateType::kFull);
    first_beta = probe.stats().beta;
  }
  ASSERT_GT(first_beta, 50.0);
  // Each young form, then full from the second utterance on.
  for (const FmllrUpdateType young : {FmllrUpdateType::kDiag, FmllrUpdateType::kBlock}) {
    SCOPED_TRACE(to_string(young));
    Recognizer r(goforward_config(true));
    AdaptiveRedecoderOptions y = o;
    y.young_below_frames = 1.5 * first_beta;  // the first utterance, not two
    y.young_update = young;
    AdaptiveRedecoder a(r, y);
    push_chunked(a, f, dim);
    const RecognitionResult r1 = a.finish();
    ASSERT_TRUE(a.last_report().redecoded) << a.last_report().message;
    const FmllrTransform t1 = a.transform();
    EXPECT_EQ(fmllr_transform_update_type(t1), young);
    expect_same_words(r1, decode_plain(plain, transformed(t1, f)));
    EXPECT_LT(a.stats().beta, y.young_below_frames);

    a.reset();
    push_chunked(a, f, dim);
    a.finish();
    EXPECT_GE(a.stats().beta, y.young_below_frames);
    EXPECT_EQ(fmllr_transform_update_type(a.transform()), FmllrUpdateType::kFull);
  }

  // A prior joined to the statistics carries the richer form: the same
  // first utterance with a prior (the utterance's own statistics, as a
  // channel's would be) is estimated in full, young or not.
  {
    Recognizer r(goforward_config(true));
    AdaptiveRedecoderOptions p = o;
    p.young_below_frames = 1.5 * first_beta;
    p.young_update = FmllrUpdateType::kBlock;
    // Light enough that the utterance and the prior together are still
    // below young_below_frames: the count alone would say young.
    p.prior_frames = 0.2 * first_beta;
    AdaptiveRedecoderOptions learn = o;
    learn.young_below_frames = 0.0;
    p.prior = std::make_shared<const FmllrStats>(learnt_stats(r, learn, f));
    AdaptiveRedecoder a(r, p);
    push_chunked(a, f, dim);
    a.finish();
    ASSERT_EQ(a.last_report().outcome, FmllrOutcome::kUpdated) << a.last_report().message;
    EXPECT_LT(a.stats().beta, p.young_below_frames);
    EXPECT_EQ(fmllr_transform_update_type(a.transform()), FmllrUpdateType::kFull);
  }

  // estimation.update's form throughout when the stream is never young
  // (gpudecoder's adapt-update=block adapt-young-frames=0).
  Recognizer r3(goforward_config(true));
  AdaptiveRedecoderOptions blocks = o;
  blocks.young_below_frames = 0.0;
  blocks.young_update = FmllrUpdateType::kDiag;
  blocks.estimation.update = FmllrUpdateType::kBlock;
  AdaptiveRedecoder b(r3, blocks);
  push_chunked(b, f, dim);
  const RecognitionResult rb = b.finish();
  ASSERT_TRUE(b.last_report().redecoded) << b.last_report().message;
  EXPECT_EQ(fmllr_transform_update_type(b.transform()), FmllrUpdateType::kBlock);
  expect_same_words(rb, decode_plain(plain, transformed(b.transform(), f)));

  AdaptiveRedecoderOptions bad;
  bad.young_below_frames = -1.0;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
}

// Largest entry difference between two transforms of one dimension.
double transform_distance(const FmllrTransform& a, const FmllrTransform& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.w.size(); ++i) worst = std::max(worst, std::abs(a.w[i] - b.w[i]));
  return worst;
}

// young_vtln: a young stream's first estimate is the warp and diagonal
// transform that the first pass's alignment favours (each warp with its
// own posteriors), and the utterance is decoded again under it; its
// statistics take their posteriors from the unadapted features, and the
// next utterance starts under young_update's form estimated from them,
// not under the warp; the stream's next estimates take young_update's
// form while it is young, the full form after.
TEST(AdaptiveRedecoder, AYoungStreamsFirstEstimateIsTheWarpItsAlignmentChooses) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  o.min_redecode_gain = 0.0;
  // The first pass's statistics: no estimate, so no second decoding.
  AdaptiveRedecoderOptions none = o;
  none.estimation.min_frames = 1e9;
  const FmllrStats first = learnt_stats(rec, none, f);
  ASSERT_GT(first.beta, 50.0);
  // The first pass (the plain decoding: no transform yet) and its
  // alignment; the warp its frames choose, each warp with its own
  // posteriors.
  const RecognitionResult first_pass = decode_plain(rec, f);
  const FrameAlignment al = rec.align(first_pass.best.words);
  ASSERT_FALSE(al.senones.empty());
  const LinearVtlnCandidates candidates(rec.feature_options(), dim);
  const VtlnChoice expected = choose_vtln_warp_on_alignment(
      {{f.data() + al.first_frame * dim, static_cast<int64_t>(al.senones.size()), al.senones.data()}},
      rec.acoustic_model().mixtures(), candidates);
  // Not what the first pass's statistics alone choose here, so the test
  // tells the two apart.
  EXPECT_NE(expected.warp, choose_vtln_warp(first, candidates).warp);

  AdaptiveRedecoderOptions y = o;
  y.young_below_frames = 2.5 * first.beta;  // young for two utterances, not three
  y.young_vtln = true;
  Recognizer r(goforward_config(true));
  AdaptiveRedecoder a(r, y);
  push_chunked(a, f, dim);
  const RecognitionResult r1 = a.finish();
  ASSERT_TRUE(a.last_report().redecoded) << a.last_report().message;
  EXPECT_EQ(a.last_report().warp, expected.warp);
  // The utterance's result is its decoding under the warp.
  expect_same_words(r1, decode_plain(plain, transformed(expected.transform, f)));
  // The statistics kept: the warped decoding's alignment, with posteriors
  // on the unadapted features, not on the warped ones it was decoded from.
  {
    const std::vector<float> warped = transformed(expected.transform, f);
    const RecognitionResult second = decode_plain(rec, warped);
    const FrameAlignment al2 = rec.align(second.best.words);
    const int64_t n = static_cast<int64_t>(al2.senones.size());
    ASSERT_GT(n, 50);
    const GaussianMixtures& gm = rec.acoustic_model().mixtures();
    const float* x = f.data() + al2.first_frame * dim;
    const FmllrStats unadapted =
        accumulate_fmllr_reference(gm, x, n, supervised_posteriors(gm, x, n, al2.senones.data()));
    const FmllrStats under_warp = accumulate_fmllr_reference(
        gm, x, n, supervised_posteriors(gm, warped.data() + al2.first_frame * dim, n, al2.senones.data()));
    const double apart = stats_distance(under_warp, unadapted);
    EXPECT_GT(apart, 1e-2);  // so the check below tells the two apart
    EXPECT_LT(stats_distance(a.stats(), unadapted), 0.05 * apart);
  }
  // The next utterance starts under the young form of those statistics.
  {
    FmllrOptions young = y.estimation;
    young.update = y.young_update;
    const FmllrTransform identity = FmllrTransform::identity(dim);
    const FmllrEstimate next = estimate_fmllr(a.stats(), young, &identity);
    ASSERT_EQ(next.outcome, FmllrOutcome::kUpdated);
    EXPECT_LT(transform_distance(a.transform(), next.transform), 1e-9);
    EXPECT_GT(transform_distance(a.transform(), expected.transform), 1e-3);
    EXPECT_EQ(fmllr_transform_update_type(a.transform()), FmllrUpdateType::kBlock);
  }

  a.reset();
  push_chunked(a, f, dim);
  a.finish();
  EXPECT_LT(a.stats().beta, y.young_below_frames);
  EXPECT_EQ(a.last_report().warp, 0.0);
  EXPECT_EQ(fmllr_transform_update_type(a.transform()), FmllrUpdateType::kBlock);

  a.reset();
  push_chunked(a, f, dim);
  a.finish();
  EXPECT_GE(a.stats().beta, y.young_below_frames);
  EXPECT_EQ(fmllr_transform_update_type(a.transform()), FmllrUpdateType::kFull);

  // A new speaker starts with the warp again.
  a.new_speaker();
  push_chunked(a, f, dim);
  a.finish();
  EXPECT_EQ(a.last_report().warp, expected.warp);
}

// The estimation AdaptiveRedecoder makes for a stream whose own statistics
// are `own`: young_update's form while they hold fewer frames than
// young_below_frames and no prior is joined to them, estimation.update's
// otherwise.
FmllrOptions estimation_for(const FmllrStats& own, bool prior_joined, const AdaptiveRedecoderOptions& o) {
  FmllrOptions e = o.estimation;
  if (!prior_joined && own.beta < o.young_below_frames) {
    e.update = o.young_update;
    if (e.update == FmllrUpdateType::kBlock && own.dim % kFmllrBlocks != 0) e.update = FmllrUpdateType::kDiag;
  }
  return e;
}

// A prior (AdaptiveRedecoderOptions::prior, a channel's statistics): the
// stream starts under the prior's own transform (its first pass is the
// plain decoding under it), the prior weighs as prior_frames frames in the
// first estimate (a heavy prior keeps the transform near its own, a light
// one lets the utterance's speech decide), and a new speaker starts from
// the prior's transform again. The prior is learnt from the recording
// through another channel (an affine distortion of its features), so that
// the prior's transform and the clean recording's differ.
TEST(AdaptiveRedecoder, APriorStartsTheStreamAndWeighsAsItsFrames) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  const int64_t rows = static_cast<int64_t>(f.size()) / dim;
  FmllrTransform channel = FmllrTransform::identity(dim);
  for (int i = 0; i < dim; ++i) {
    channel.w[static_cast<size_t>(i) * (dim + 1) + i] = 0.8;
    channel.w[static_cast<size_t>(i) * (dim + 1) + dim] = (i % 13 == 0) ? 0.0 : 0.3 * ((i % 3) - 1);
  }
  const std::vector<float> g = transformed(channel, f);
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  // About 2 s of speech: a full transform (1560 parameters) from it is
  // ill-posed, and its iterations end where they started from; the
  // diagonal one has a single optimum to compare. Diagonal throughout:
  // no young form (the stream without a prior would be young, the ones
  // with a prior not).
  o.estimation.update = FmllrUpdateType::kDiag;
  o.young_below_frames = 0.0;
  o.min_redecode_gain = 0.0;
  const auto prior = std::make_shared<const FmllrStats>(learnt_stats(rec, o, g));
  ASSERT_GT(prior->beta, 50.0);
  const FmllrEstimate own = estimate_fmllr(*prior, o.estimation);
  ASSERT_EQ(own.outcome, FmllrOutcome::kUpdated) << own.message;

  // Clean speech with a heavy prior and with a light one. No second
  // decoding (min_redecode_gain out of reach), so the statistics the
  // stream keeps are the ones the estimate saw: the transform must be the
  // estimate of those plus the prior scaled to prior_frames, from the
  // prior's transform.
  auto first_transform = [&](double prior_frames) {
    AdaptiveRedecoderOptions po = o;
    po.prior = prior;
    po.prior_frames = prior_frames;
    po.prior_fade_frames = 0.0;  // the weight as given (the fade: below)
    po.min_redecode_gain = 1e9;
    AdaptiveRedecoder a(rec, po);
    const FmllrTransform start = a.transform();
    EXPECT_EQ(start.w, own.transform.w);
    push_chunked(a, f, dim);
    // The first pass is decoded under the prior's transform.
    plain.reset();
    const std::vector<float> y = transformed(start, f);
    plain.push_features(y.data(), rows);
    EXPECT_EQ(rec.partial().text(), plain.partial().text());
    a.finish();
    EXPECT_EQ(a.last_report().outcome, FmllrOutcome::kUpdated) << a.last_report().message;
    EXPECT_FALSE(a.last_report().redecoded);
    FmllrStats total = a.stats();
    total.add_scaled(*prior, prior_frames / prior->beta);
    const FmllrEstimate expected = estimate_fmllr(total, estimation_for(a.stats(), true, po), &start);
    EXPECT_LT(transform_distance(a.transform(), expected.transform), 1e-9);
    const FmllrTransform t = a.transform();
    a.new_speaker();
    EXPECT_EQ(a.transform().w, start.w);  // a new speaker: the prior's again
    return t;
  };
  // Without a prior the clean recording's transform lies far from the
  // channel's; a heavy prior keeps it near the channel's, a light one lets
  // the recording pull it away.
  AdaptiveRedecoderOptions no_prior = o;
  no_prior.min_redecode_gain = 1e9;
  FmllrTransform none;
  {
    AdaptiveRedecoder a(rec, no_prior);
    EXPECT_TRUE(a.transform().is_identity());
    push_chunked(a, f, dim);
    a.finish();
    none = a.transform();
    a.reset();
  }
  const double apart = transform_distance(none, own.transform);
  EXPECT_GT(apart, 0.1) << "the channel's transform and the clean recording's should differ";
  EXPECT_LT(transform_distance(first_transform(1e6), own.transform), 0.05 * apart);
  EXPECT_GT(transform_distance(first_transform(1.0), own.transform), 0.3 * apart);

  // A prior of another dimension, or no weight, is refused.
  AdaptiveRedecoderOptions bad = o;
  bad.prior = std::make_shared<const FmllrStats>(FmllrStats(dim - 1));
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);  // no frames
  FmllrStats other(dim + 1);
  other.beta = 1.0;
  bad.prior = std::make_shared<const FmllrStats>(other);
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);  // dimension
  bad.prior = prior;
  bad.prior_frames = 0.0;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
}

// Channel priors (AdaptiveRedecoderOptions::channel_priors): a stream takes
// the channel its own statistics say it came through, and that channel's
// statistics join its estimate as a prior would; a stream that came through
// none of them, or a threshold out of reach, takes none and is estimated
// from its own statistics alone; a new speaker chooses again. The library
// is learnt from the recording as it is (the reference) and through two
// affine channels.
TEST(AdaptiveRedecoder, AStreamTakesTheChannelItsSpeechCameThrough) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  const std::vector<float> f = goforward_features(rec);
  const int dim = rec.feature_dim();
  auto channel = [&](double scale, double offset) {
    FmllrTransform t = FmllrTransform::identity(dim);
    for (int i = 0; i < dim; ++i) {
      t.w[static_cast<size_t>(i) * (dim + 1) + i] = scale;
      t.w[static_cast<size_t>(i) * (dim + 1) + dim] = (i % 13 == 0) ? 0.0 : offset * ((i % 3) - 1);
    }
    return t;
  };
  const std::vector<float> via_x = transformed(channel(0.8, 0.3), f);
  const std::vector<float> via_y = transformed(channel(1.25, -0.4), f);
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  o.estimation.update = FmllrUpdateType::kDiag;  // about 2 s of speech (see above)
  o.min_redecode_gain = 0.0;
  auto prior_of = [&](const std::string& name, const std::vector<float>& g) {
    ChannelPrior p;
    p.name = name;
    p.stats = std::make_shared<const FmllrStats>(learnt_stats(rec, o, g));
    const FmllrEstimate est = estimate_fmllr(*p.stats, o.estimation);
    EXPECT_EQ(est.outcome, FmllrOutcome::kUpdated) << est.message;
    p.transform = est.transform;
    return p;
  };
  auto set = std::make_shared<ChannelPriorSet>();
  set->reference = prior_of("reference", f);
  set->channels.push_back(prior_of("x", via_x));
  set->channels.push_back(prior_of("y", via_y));

  AdaptiveRedecoderOptions co = o;
  co.channel_priors = set;
  // The channel's weight fades with the stream's frames: here to about
  // half (goforward has about 165 frames of speech).
  co.prior_fade_frames = 330.0;
  // These channels are milder than a codec (gains about 1 nat a frame);
  // the threshold is the choice's, tested below.
  co.channel_min_gain = 0.25;
  // No second decoding, so that the statistics the stream keeps are the
  // ones its estimate saw.
  co.min_redecode_gain = 1e9;
  auto run = [&](const AdaptiveRedecoderOptions& opt, const std::vector<float>& g, const char* want) -> double {
    AdaptiveRedecoder a(rec, opt);
    EXPECT_TRUE(a.transform().is_identity()) << "the first pass is decoded without a channel";
    EXPECT_EQ(a.channel(), nullptr);
    push_chunked(a, g, dim);
    a.finish();
    const RedecodeReport& r = a.last_report();
    EXPECT_EQ(r.outcome, FmllrOutcome::kUpdated) << r.message;
    EXPECT_EQ(r.channel, want);
    FmllrStats total = a.stats();
    bool prior_joined = false;
    if (*want) {
      EXPECT_GE(r.channel_gain, opt.channel_min_gain);
      if (!a.channel()) {
        ADD_FAILURE() << "no channel taken, expected " << want;
        return r.channel_gain;
      }
      EXPECT_EQ(a.channel()->name, want);
      const double own = total.beta;
      const double fade = std::max(0.0, 1.0 - own / opt.prior_fade_frames);
      EXPECT_GT(fade, 0.2);
      EXPECT_LT(fade, 0.8);
      // The library's weight for the channel scales the prior; 0: the
      // channel is taken, its statistics are not added.
      const double weight = opt.prior_frames * a.channel()->weight * fade;
      prior_joined = weight > 0.0;
      if (prior_joined) total.add_scaled(*a.channel()->stats, weight / a.channel()->stats->beta);
    } else {
      EXPECT_LT(r.channel_gain, opt.channel_min_gain);
      EXPECT_EQ(a.channel(), nullptr);
    }
    const FmllrTransform identity = FmllrTransform::identity(dim);
    const FmllrEstimate expected = estimate_fmllr(total, estimation_for(a.stats(), prior_joined, opt), &identity);
    EXPECT_LT(transform_distance(a.transform(), expected.transform), 1e-9) << "channel " << want;
    a.new_speaker();
    EXPECT_EQ(a.channel(), nullptr);
    EXPECT_TRUE(a.transform().is_identity());
    a.reset();
    return r.channel_gain;
  };
  const double gain_x = run(co, via_x, "x");
  const double gain_y = run(co, via_y, "y");
  // The recording as it is: the reference is its own, no channel beats it.
  EXPECT_LT(run(co, f, ""), 0.0);
  AdaptiveRedecoderOptions strict = co;
  strict.channel_min_gain = std::max(gain_x, gain_y) + 1.0;
  run(strict, via_x, "");
  // A channel the library weighs 0 (recognised, no prior): still taken,
  // and the estimate is the stream's own statistics alone, so it differs
  // from the weighted channel's.
  auto unweighted = std::make_shared<ChannelPriorSet>(*set);
  unweighted->channels[0].weight = 0.0;
  AdaptiveRedecoderOptions zero = co;
  zero.channel_priors = unweighted;
  EXPECT_DOUBLE_EQ(run(zero, via_x, "x"), gain_x);
  {
    // One recogniser: each decoder runs and resets before the next.
    FmllrTransform with_prior, without;
    for (const AdaptiveRedecoderOptions* opt : {&co, &zero}) {
      AdaptiveRedecoder a(rec, *opt);
      push_chunked(a, via_x, dim);
      a.finish();
      (opt == &co ? with_prior : without) = a.transform();
      a.reset();
    }
    EXPECT_GT(transform_distance(with_prior, without), 1e-3)
        << "the weighted channel's statistics should move the estimate";
  }

  // Refused: a prior and a library both, a library of another dimension.
  AdaptiveRedecoderOptions bad = co;
  bad.prior = set->channels[0].stats;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
  auto other = std::make_shared<ChannelPriorSet>(*set);
  FmllrStats small(dim - 1);
  small.beta = 1.0;
  other->channels[1].stats = std::make_shared<const FmllrStats>(small);
  bad = co;
  bad.channel_priors = other;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
  bad = co;
  bad.prior_fade_frames = -1.0;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
  auto heavy = std::make_shared<ChannelPriorSet>(*set);
  heavy->channels[0].weight = 1.5;
  bad = co;
  bad.channel_priors = heavy;
  EXPECT_THROW(AdaptiveRedecoder(rec, bad), std::invalid_argument);
}

TEST(AdaptiveRedecoder, TooLittleSpeechKeepsTheFirstPass) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const std::vector<float> f = goforward_features(rec);
  AdaptiveRedecoder a(rec);  // 300 frames needed, the recording has fewer
  push_chunked(a, f, rec.feature_dim());
  const RecognitionResult r = a.finish();
  EXPECT_FALSE(a.last_report().redecoded);
  EXPECT_EQ(a.last_report().outcome, FmllrOutcome::kTooFewFrames);
  EXPECT_TRUE(a.transform().is_identity());
  EXPECT_GT(a.stats().beta, 0.0);  // kept for the utterances to come
  expect_same_words(r, decode_plain(plain, f));
}

// The utterance's own CMN (own_utterance_cmn): frames normalised by live
// CMN from a start far from the recording's mean, pushed with live CMN's
// trace; with no transform possible (min_frames out of reach) the final
// result is the second decoding of the frames normalised by their own
// mean, the words that batch CMN's features give; without the trace, or
// with the option off, the first pass stands.
TEST(AdaptiveRedecoder, SecondDecodingWithTheUtterancesOwnMean) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions live = rec.feature_options();
  // Streamed, as gpufeatures gives them: every frame kept, and live CMN
  // learning from each (then batch CMN takes its mean over the same frames).
  live.noise.remove_silence = false;
  live.norm.cmn = NormOptions::Cmn::kLive;
  live.norm.live_from_speech = false;
  live.norm.cmn_init.assign(static_cast<size_t>(live.base_dim()), 0.0f);
  // A channel far from this one (louder, another tilt), whose start the
  // running mean leaves slowly.
  live.norm.cmn_init[0] = 80.0f;
  live.norm.cmn_init[1] = -15.0f;
  live.norm.cmn_init[2] = 10.0f;
  live.norm.live_init_frames = 1000;
  FeatureOptions batch = live;
  batch.norm.cmn = NormOptions::Cmn::kBatch;
  batch.norm.cmn_init.clear();
  StreamingFeatureExtractor ex(live, *cpu);
  ex.set_cmn_trace(true);
  FeatureMatrix f;
  ex.accept(audio.samples.data(), audio.samples.size(), f);
  ex.flush(f);
  CmnTrace trace;
  ex.take_cmn_trace(trace);
  ASSERT_EQ(trace.rows(), f.rows);
  const FeatureMatrix b = compute_features(batch, *cpu, audio.samples.data(), audio.samples.size());
  ASSERT_EQ(b.rows, f.rows);
  const int dim = rec.feature_dim();
  ASSERT_EQ(f.dim, dim);

  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 1e9;  // no transform: the own mean alone
  auto push = [&](AdaptiveRedecoder& a, bool with_trace) {
    for (int64_t at = 0, k = 7; at < f.rows; at += k, k = k * 3 % 61 + 1) {
      const int64_t n = std::min(k, f.rows - at);
      a.push_features(f.row(at), n, with_trace ? trace.offsets.data() + at * dim : nullptr,
                      with_trace ? trace.learned.data() + at : nullptr);
    }
  };
  AdaptiveRedecoder own(rec, o);
  push(own, true);
  const RecognitionResult r = own.finish();
  EXPECT_TRUE(own.last_report().own_cmn);
  EXPECT_TRUE(own.last_report().redecoded);
  EXPECT_FALSE(own.last_report().adapted);
  EXPECT_GT(own.last_report().cmn_shift, 20.0f);
  EXPECT_EQ(own.last_report().outcome, FmllrOutcome::kTooFewFrames);
  EXPECT_TRUE(own.transform().is_identity());
  expect_same_words(r, decode_plain(plain, b.data));
  own.reset();

  const RecognitionResult first_pass = decode_plain(plain, f.data);
  const RecognitionResult batch_words = decode_plain(plain, b.data);
  bool differs = first_pass.best.words.size() != batch_words.best.words.size();
  for (size_t i = 0; !differs && i < first_pass.best.words.size(); ++i)
    differs = first_pass.best.words[i].text != batch_words.best.words[i].text ||
              first_pass.best.words[i].start_frame != batch_words.best.words[i].start_frame ||
              first_pass.best.words[i].end_frame != batch_words.best.words[i].end_frame;
  EXPECT_TRUE(differs) << "live CMN's first pass equals batch CMN's decoding: the test proves nothing";
  AdaptiveRedecoder untraced(rec, o);
  push(untraced, false);
  const RecognitionResult u = untraced.finish();
  EXPECT_FALSE(untraced.last_report().own_cmn);
  EXPECT_FALSE(untraced.last_report().redecoded);
  expect_same_words(u, first_pass);
  untraced.reset();

  o.own_utterance_cmn = false;
  AdaptiveRedecoder off(rec, o);
  push(off, true);
  const RecognitionResult n = off.finish();
  EXPECT_FALSE(off.last_report().own_cmn);
  EXPECT_FALSE(off.last_report().redecoded);
  expect_same_words(n, first_pass);
}

// cmn_stream_frames: an utterance after the first is normalised with the
// mean of the stream's speech so far, its own included; with 0, with its
// own mean alone. Two utterances of one stream: the recording, then the
// recording at a quarter of the amplitude (c0 lower by ln 16), each
// streamed with live CMN and its trace. The second one's result is the
// plain decoding of its frames normalised with the expected mean, and the
// reported shift of c0 is that mean's.
TEST(AdaptiveRedecoder, LaterUtterancesTakeTheStreamsMean) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  Recognizer plain(goforward_config(false));
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  std::vector<float> quiet = audio.samples;
  for (float& x : quiet) x *= 0.25f;
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions live = rec.feature_options();
  live.noise.remove_silence = false;
  live.norm.cmn = NormOptions::Cmn::kLive;
  live.norm.live_from_speech = false;
  const int dim = rec.feature_dim();
  const std::vector<uint8_t> statics = static_dims_of_layout(live.delta, live.base_dim());
  // One live stream: the second utterance starts from the mean the first left.
  StreamingFeatureExtractor ex(live, *cpu);
  ex.set_cmn_trace(true);
  FeatureMatrix f1, f2;
  CmnTrace t1, t2;
  std::vector<float> left;
  ex.accept(audio.samples.data(), audio.samples.size(), f1);
  ex.flush(f1, &left);
  ex.take_cmn_trace(t1);
  ex.restart_live_cmn_from(left);
  ex.accept(quiet.data(), quiet.size(), f2);
  ex.flush(f2);
  ex.take_cmn_trace(t2);
  ASSERT_EQ(t2.rows(), f2.rows);

  const CmnSums s1 = learned_sums(f1.data.data(), f1.rows, dim, t1, statics);
  const CmnSums s2 = learned_sums(f2.data.data(), f2.rows, dim, t2, statics);
  CmnSums both = s1;
  both.add(s2);
  ASSERT_GT(s1.mean()[0] - s2.mean()[0], 2.0f) << "the quiet copy's c0 should be lower";

  for (int window : {3000, 0}) {
    AdaptiveRedecoderOptions o;
    o.estimation.min_frames = 1e9;
    o.cmn_stream_frames = window;
    AdaptiveRedecoder a(rec, o);
    a.push_features(f1.data.data(), f1.rows, t1.offsets.data(), t1.learned.data());
    a.finish();
    a.reset();
    a.push_features(f2.data.data(), f2.rows, t2.offsets.data(), t2.learned.data());
    const RecognitionResult r = a.finish();
    ASSERT_TRUE(a.last_report().own_cmn);
    const std::vector<float> mean = window > 0 ? both.mean() : s2.mean();
    std::vector<float> expect = f2.data;
    float shift = 0.0f;
    renormalise_with_mean(expect.data(), f2.rows, dim, t2, statics, mean, &shift);
    EXPECT_NEAR(a.last_report().cmn_shift, shift, 1e-3f) << "window " << window;
    expect_same_words(r, decode_plain(plain, expect));
    a.reset();
  }
}

TEST(AdaptiveRedecoder, AnUtteranceWithoutWordsIsNoError) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  Recognizer rec(goforward_config(true));
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  // The recording's first 0.3 s: silence before the speech.
  const std::vector<float> f = rec.compute_features(audio.samples.data(), 4800);
  AdaptiveRedecoder a(rec);
  push_chunked(a, f, rec.feature_dim());
  const RecognitionResult r = a.finish();
  EXPECT_TRUE(r.best.words.empty()) << r.text();
  EXPECT_FALSE(a.last_report().redecoded);
  EXPECT_EQ(a.stats().beta, 0.0);
}

// Every backend (scoring, statistics and transform on it) learns the CPU's
// transform within float rounding and gives the CPU's words.
TEST(AdaptiveRedecoder, EveryBackendAgreesWithTheCpu) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  o.min_redecode_gain = 0.0;
  auto run = [&](const std::string& backend, FmllrTransform* t) {
    RecognizerConfig c = goforward_config(true);
    c.scoring_backend = backend;
    Recognizer rec(c);
    const std::vector<float> f = goforward_features(rec);
    AdaptiveRedecoder a(rec, o);
    std::string words;
    for (int k = 0; k < 2; ++k) {
      push_chunked(a, f, rec.feature_dim());
      const RecognitionResult r = a.finish();
      EXPECT_TRUE(a.last_report().redecoded) << backend << ": " << a.last_report().message;
      for (const HypothesisWord& w : r.best.words)
        words += w.text + " " + std::to_string(w.start_frame) + "-" + std::to_string(w.end_frame) + "; ";
      a.reset();
    }
    *t = a.transform();
    return words;
  };
  FmllrTransform cpu_t;
  const std::string cpu = run("cpu", &cpu_t);
  for (const std::string& b : testing::backends_under_test()) {
    if (b == "cpu") continue;
    FmllrTransform t;
    EXPECT_EQ(run(b, &t), cpu) << b;
    ASSERT_EQ(t.w.size(), cpu_t.w.size());
    double worst = 0.0;
    for (size_t i = 0; i < t.w.size(); ++i) worst = std::max(worst, std::abs(t.w[i] - cpu_t.w[i]));
    EXPECT_LT(worst, 1e-2) << b << ": transforms differ by " << worst;
  }
}

}  // namespace
}  // namespace gpuspeech
