// The forced aligner (common/search/forced_aligner.h) and the Recognizer's
// alignment API (suite 'reference', like the recognizer's tests):
//
//  * synthetic utterances drawn from a model's own Gaussians along a known
//    state sequence with known durations (an4_ci_cont: context-independent,
//    with silence gaps; en-us: triphones, adjacent words, alternate
//    pronunciations): the aligner must recover >= 95 % of the frames'
//    senones, and its log-likelihood must be the textbook density's
//    (tests/gaussian_reference.h) summed over its senones;
//  * goforward.raw decoded with goforward.gram: every aligned frame's
//    senone belongs to a phone of its word, and the Viterbi path scores at
//    least as well as a uniform segmentation of each word's HMM;
//  * the Recognizer's errors: align() without kept features, discarded
//    frames, words out of order or outside the span.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/engine/recognizer.h"
#include "common/search/forced_aligner.h"
#include "common/search/phone_context.h"
#include "common/features/wav_reader.h"
#include "tests/gaussian_reference.h"
#include "tests/goforward_fixture.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

bool have_file(const std::string& path) { return std::ifstream(path).good(); }
std::string an4_dir() { return testing::audio_dir() + "/an4_ci_cont"; }
std::string en_us_root() { return testing::model_dir() + "/en-us"; }

// One frame drawn from senone s: per stream, a Gaussian chosen by the
// mixture weights, then each component from it.
void draw_frame(const GaussianMixtures& gm, int s, std::mt19937& rng, float* x) {
  const int density = gm.gaussians_per_codebook;
  const int c = gm.senone_codebook[s];
  for (int st = 0; st < gm.num_streams(); ++st) {
    std::vector<double> w(density);
    for (int k = 0; k < density; ++k)
      w[k] = std::exp(gm.log_weights[(static_cast<size_t>(s) * gm.num_streams() + st) * density + k]);
    const int k = std::discrete_distribution<int>(w.begin(), w.end())(rng);
    const int d = gm.stream_dim(st);
    const size_t g = (static_cast<size_t>(c) * density + k) * d;
    for (int i = 0; i < d; ++i) {
      std::normal_distribution<double> n(gm.means[st][g + i], std::sqrt(gm.variances[st][g + i]));
      x[gm.stream_components[st][i]] = static_cast<float>(n(rng));
    }
  }
}

// A synthetic utterance: frames drawn along known senones.
struct Synthetic {
  std::vector<float> feats;
  std::vector<int32_t> truth;  // senone per frame, -1 in silence gaps
  std::vector<int32_t> gap_truth;  // silence senone per gap frame, else -1
  std::vector<HypothesisWord> words;
  int64_t frames() const { return static_cast<int64_t>(truth.size()); }
};

class SyntheticBuilder {
 public:
  SyntheticBuilder(const AcousticModel& am, const Dictionary& dict, uint32_t seed)
      : am_(am), dict_(dict), rng_(seed) {}

  // Appends frames along HMM `phones` (context-dependent phone ids), 1-4
  // frames a state, every state visited (a path every Sphinx topology has).
  void emit_phones(const std::vector<int>& phones, bool is_gap) {
    const GaussianMixtures& gm = am_.mixtures();
    std::uniform_int_distribution<int> dur(1, 4);
    for (int phone : phones)
      for (int j = 0; j < am_.mdef().num_emitting_states(); ++j) {
        const int s = am_.mdef().senone(phone, j);
        for (int r = dur(rng_); r > 0; --r) {
          const size_t at = u_.feats.size();
          u_.feats.resize(at + gm.feature_dim());
          draw_frame(gm, s, rng_, u_.feats.data() + at);
          u_.truth.push_back(is_gap ? -1 : s);
          u_.gap_truth.push_back(is_gap ? s : -1);
        }
      }
  }
  void silence(int phones) {
    emit_phones(std::vector<int>(phones, am_.mdef().silence_phone()), true);
    prev_last_base_ = -1;
  }
  // A word by pronunciation spelling ("read(2)"); contexts as the aligner
  // documents: the previous word's last phone if it touches, SIL otherwise;
  // `next_first_base` the next word's first phone if it will touch, else -1.
  void word(const std::string& spelling, int next_first_base) {
    const int id = dict_.word_id(spelling);
    ASSERT_NE(id, Dictionary::kNoWord) << spelling;
    int pron = -1;
    for (int p : dict_.pronunciations(id)) {
      const Pronunciation& pr = dict_.pronunciation(p);
      const std::string name = pr.variant.empty() ? dict_.word(id)
                                                  : dict_.word(id) + "(" + pr.variant + ")";
      if (name == spelling) pron = p;
    }
    ASSERT_GE(pron, 0) << spelling;
    const std::vector<int> bases = base_phones(pron);
    std::vector<int> phones;
    for (size_t i = 0; i < bases.size(); ++i) {
      const int l = i > 0 ? bases[i - 1] : prev_last_base_;
      const int r = i + 1 < bases.size() ? bases[i + 1] : next_first_base;
      phones.push_back(context_dependent_phone(am_.mdef(), bases[i], l, r,
                                               position_in_word(i, bases.size())));
    }
    HypothesisWord w;
    w.text = dict_.word(id);  // the recogniser reports the base spelling
    w.start_frame = static_cast<int32_t>(u_.frames());
    emit_phones(phones, false);
    w.end_frame = static_cast<int32_t>(u_.frames()) - 1;
    u_.words.push_back(w);
    prev_last_base_ = bases.back();
  }
  int first_base(const std::string& spelling) const {
    return base_phones(dict_.pronunciations(dict_.word_id(spelling)).front()).front();
  }
  Synthetic take() { return std::move(u_); }

 private:
  std::vector<int> base_phones(int pron) const {
    std::vector<int> out;
    for (int p : dict_.pronunciation(pron).phones)
      out.push_back(am_.mdef().base_phone_id(dict_.phone_names()[p]));
    return out;
  }
  const AcousticModel& am_;
  const Dictionary& dict_;
  std::mt19937 rng_;
  Synthetic u_;
  int prev_last_base_ = -1;
};

// Fraction of the words' frames whose senone is the truth.
double recovered(const FrameAlignment& a, const Synthetic& u) {
  int64_t total = 0, right = 0;
  for (int64_t t = 0; t < u.frames(); ++t) {
    if (u.truth[t] < 0) continue;
    ++total;
    right += a.senones[t] == u.truth[t];
  }
  return total > 0 ? static_cast<double>(right) / total : 0.0;
}

// Sum of the textbook log-densities of the aligned frames' senones.
double reference_log_likelihood(const AcousticModel& am, const float* feats, int64_t frames,
                                const FrameAlignment& a) {
  const std::vector<double> ref = testing::reference_scores(am.mixtures(), feats, frames);
  const int n = am.mixtures().num_senones;
  double sum = 0.0;
  for (int64_t t = 0; t < frames; ++t)
    if (a.senones[t] >= 0) sum += ref[static_cast<size_t>(t) * n + a.senones[t]];
  return sum;
}

TEST(ForcedAligner, RecoversSyntheticStatesAn4WithSilenceGaps) {
  if (!have_file(an4_dir() + "/mdef")) GTEST_SKIP() << "pocketsphinx-testdata not installed";
  const AcousticModel am = AcousticModel::load(an4_dir());
  ASSERT_GE(am.mdef().silence_phone(), 0);
  Dictionary dict;
  dict.add_pronunciation("go", {"G", "OW"}, false);
  dict.add_pronunciation("forward", {"F", "AO", "R", "W", "ER", "D"}, false);
  dict.add_pronunciation("ten", {"T", "EH", "N"}, false);
  dict.add_pronunciation("meters", {"M", "IY", "T", "ER", "Z"}, false);
  dict.add_pronunciation("a", {"AH"}, false);
  for (uint32_t seed : {1u, 2u, 3u}) {
    SyntheticBuilder b(am, dict, seed);
    b.silence(2);
    b.word("go", -1);
    b.silence(1);
    b.word("forward", b.first_base("a"));
    b.word("a", b.first_base("ten"));  // one-phone word, both neighbours touching
    b.word("ten", -1);
    b.silence(3);
    b.word("meters", -1);
    b.silence(2);
    const Synthetic u = b.take();

    ForcedAligner aligner(am, dict);
    const FrameAlignment a = aligner.align(u.feats.data(), 0, u.frames(), u.words);
    ASSERT_EQ(a.senones.size(), static_cast<size_t>(u.frames()));
    EXPECT_EQ(a.words_aligned, 5);
    EXPECT_EQ(a.words_failed, 0);
    std::printf("seed %u: %lld frames, %.1f %% of the words' frames recovered\n", seed,
                static_cast<long long>(u.frames()), 100.0 * recovered(a, u));
    EXPECT_GE(recovered(a, u), 0.95) << "seed " << seed;
    for (int64_t t = 0; t < u.frames(); ++t)
      if (u.truth[t] < 0) {
        EXPECT_EQ(a.senones[t], -1) << "gap frame " << t << " aligned";
      }
    EXPECT_NEAR(a.log_likelihood, reference_log_likelihood(am, u.feats.data(), u.frames(), a),
                1e-6 * std::abs(a.log_likelihood));

    // With gaps aligned to silence, every silence frame gets one of SIL's
    // senones, most of them the right one (a loop of SIL copies lets the
    // copies' boundaries move, and silence states look alike: 85-100 % here).
    const std::vector<int> sil = am.mdef().senones_of(am.mdef().silence_phone());
    ForcedAlignerOptions o;
    o.align_gaps_to_silence = true;
    const FrameAlignment g = ForcedAligner(am, dict, o).align(u.feats.data(), 0, u.frames(), u.words);
    int64_t gaps = 0, right = 0;
    for (int64_t t = 0; t < u.frames(); ++t) {
      if (u.gap_truth[t] < 0) {
        EXPECT_EQ(g.senones[t], a.senones[t]);  // words aligned as before
        continue;
      }
      ++gaps;
      right += g.senones[t] == u.gap_truth[t];
      EXPECT_NE(std::find(sil.begin(), sil.end(), g.senones[t]), sil.end()) << "frame " << t;
    }
    EXPECT_GE(static_cast<double>(right) / gaps, 0.8) << "seed " << seed;
    EXPECT_EQ(g.aligned_frames(), u.frames());
    EXPECT_GT(g.log_likelihood, -1e300);
  }
}

TEST(ForcedAligner, RecoversSyntheticTriphonesAndAlternatesEnUs) {
  const std::string model = en_us_root() + "/en-us";
  if (!have_file(model + "/mdef")) GTEST_SKIP() << "pocketsphinx-en-us not installed";
  const AcousticModel am = AcousticModel::load(model);
  Dictionary dict;
  dict.add_pronunciation("read", {"R", "EH", "D"}, false);
  dict.add_pronunciation("read(2)", {"R", "IY", "D"}, false);
  dict.add_pronunciation("the", {"DH", "AH"}, false);
  dict.add_pronunciation("record", {"R", "AH", "K", "AO", "R", "D"}, false);
  dict.add_pronunciation("record(2)", {"R", "EH", "K", "ER", "D"}, false);
  dict.add_pronunciation("tomato", {"T", "AH", "M", "EY", "T", "OW"}, false);
  dict.add_pronunciation("tomato(2)", {"T", "AH", "M", "AA", "T", "OW"}, false);
  dict.add_sentence_markers();
  for (uint32_t seed : {11u, 12u}) {
    SyntheticBuilder b(am, dict, seed);
    b.silence(1);
    b.word("read(2)", b.first_base("the"));
    b.word("the", b.first_base("record"));
    b.word("record(2)", -1);
    b.silence(1);
    b.word("tomato(2)", -1);
    b.silence(1);
    const Synthetic u = b.take();
    const FrameAlignment a = ForcedAligner(am, dict).align(u.feats.data(), 0, u.frames(), u.words);
    EXPECT_EQ(a.words_aligned, 4);
    EXPECT_EQ(a.words_failed, 0);
    std::printf("seed %u: %lld frames, %.1f %% of the words' frames recovered\n", seed,
                static_cast<long long>(u.frames()), 100.0 * recovered(a, u));
    EXPECT_GE(recovered(a, u), 0.95) << "seed " << seed;
    EXPECT_NEAR(a.log_likelihood, reference_log_likelihood(am, u.feats.data(), u.frames(), a),
                1e-6 * std::abs(a.log_likelihood));
    // A span starting later (first_frame != 0) gives the same alignment.
    const int64_t from = u.words.front().start_frame;
    const FrameAlignment s = ForcedAligner(am, dict).align(
        u.feats.data() + from * am.mixtures().feature_dim(), from, u.frames() - from, u.words);
    ASSERT_EQ(s.first_frame, from);
    for (int64_t t = from; t < u.frames(); ++t) EXPECT_EQ(s.senones[t - from], a.senones[t]);
  }
}

// A word followed, touching, by an alternate pronunciation whose first
// phone differs from the base one's: the word's last phone is the triphone
// with the alternate's first phone as right context (what the decoder's
// path through "either(2)" had), not the base pronunciation's.
TEST(ForcedAligner, CrossWordContextComesFromTheAlternateAligned) {
  const std::string model = en_us_root() + "/en-us";
  if (!have_file(model + "/mdef")) GTEST_SKIP() << "pocketsphinx-en-us not installed";
  const AcousticModel am = AcousticModel::load(model);
  const ModelDefinition& mdef = am.mdef();
  Dictionary dict;
  dict.add_pronunciation("go", {"G", "OW"}, false);
  dict.add_pronunciation("either", {"IY", "DH", "ER"}, false);
  dict.add_pronunciation("either(2)", {"AY", "DH", "ER"}, false);
  dict.add_sentence_markers();
  const int g = mdef.base_phone_id("G"), ow = mdef.base_phone_id("OW");
  const int iy = mdef.base_phone_id("IY"), ay = mdef.base_phone_id("AY");
  // The senones OW has before IY but not before AY: the wrong context's.
  auto senones_of = [&](int phone) {
    std::set<int> out;
    for (int j = 0; j < mdef.num_emitting_states(); ++j) out.insert(mdef.senone(phone, j));
    return out;
  };
  const std::set<int> before_ay = senones_of(context_dependent_phone(mdef, ow, g, ay, WordPosition::kEnd));
  std::set<int> wrong;
  for (int s : senones_of(context_dependent_phone(mdef, ow, g, iy, WordPosition::kEnd)))
    if (before_ay.count(s) == 0) wrong.insert(s);
  ASSERT_FALSE(wrong.empty()) << "the model ties OW's states before IY and AY: no test";

  for (uint32_t seed : {21u, 22u, 23u}) {
    SyntheticBuilder b(am, dict, seed);
    b.silence(1);
    b.word("go", ay);
    b.word("either(2)", -1);
    b.silence(1);
    const Synthetic u = b.take();
    ASSERT_EQ(u.words[1].start_frame, u.words[0].end_frame + 1) << "the words touch";
    const FrameAlignment a = ForcedAligner(am, dict).align(u.feats.data(), 0, u.frames(), u.words);
    EXPECT_EQ(a.words_aligned, 2);
    EXPECT_EQ(a.words_failed, 0);
    int wrong_frames = 0;
    for (int64_t t = u.words[0].start_frame; t <= u.words[0].end_frame; ++t)
      wrong_frames += wrong.count(a.senones[t]) > 0;
    EXPECT_EQ(wrong_frames, 0) << "seed " << seed
                               << ": 'go' aligned with OW before IY (the base 'either')";
    EXPECT_GE(recovered(a, u), 0.95) << "seed " << seed;
    EXPECT_NEAR(a.log_likelihood, reference_log_likelihood(am, u.feats.data(), u.frames(), a),
                1e-6 * std::abs(a.log_likelihood));
  }
}

TEST(ForcedAligner, WordsThatCannotBeAlignedAreCountedNotThrown) {
  if (!have_file(an4_dir() + "/mdef")) GTEST_SKIP() << "pocketsphinx-testdata not installed";
  const AcousticModel am = AcousticModel::load(an4_dir());
  Dictionary dict;
  dict.add_pronunciation("forward", {"F", "AO", "R", "W", "ER", "D"}, false);
  SyntheticBuilder b(am, dict, 5);
  b.word("forward", -1);
  const Synthetic u = b.take();
  const ForcedAligner aligner(am, dict);
  // Two frames cannot hold six phones; an unknown word cannot be aligned.
  std::vector<HypothesisWord> words(2);
  words[0].text = "forward";
  words[0].start_frame = 0;
  words[0].end_frame = 1;
  words[1].text = "nonexistent";
  words[1].start_frame = 2;
  words[1].end_frame = 10;
  const FrameAlignment a = aligner.align(u.feats.data(), 0, u.frames(), words);
  EXPECT_EQ(a.words_failed, 2);
  EXPECT_EQ(a.words_aligned, 0);
  EXPECT_EQ(a.aligned_frames(), 0);
  EXPECT_EQ(a.log_likelihood, 0.0);
}

// The shortest span a word fits in: the Viterbi leaves out states that
// cannot reach the word's exit in the frames left, so a word of exactly its
// HMM's fewest frames must still align (every frame a senone), and one
// frame fewer must fail, whatever the features.
TEST(ForcedAligner, AWordAlignsInItsFewestFramesAndNotInFewer) {
  if (!have_file(an4_dir() + "/mdef")) GTEST_SKIP() << "pocketsphinx-testdata not installed";
  const AcousticModel am = AcousticModel::load(an4_dir());
  Dictionary dict;
  dict.add_pronunciation("forward", {"F", "AO", "R", "W", "ER", "D"}, false);
  SyntheticBuilder b(am, dict, 7);
  b.word("forward", -1);
  const Synthetic u = b.take();
  const ForcedAligner aligner(am, dict);
  auto align_in = [&](int32_t n) {
    std::vector<HypothesisWord> words(1);
    words[0].text = "forward";
    words[0].start_frame = 0;
    words[0].end_frame = n - 1;
    return aligner.align(u.feats.data(), 0, n, words);
  };
  int32_t fewest = 0;
  for (int32_t n = 1; n <= static_cast<int32_t>(u.frames()); ++n)
    if (align_in(n).words_aligned == 1) {
      fewest = n;
      break;
    }
  ASSERT_GT(fewest, 1) << "six phones fit in no span of the synthetic word";
  // The model's topology (an4: three emitting states a phone, skips allowed)
  // needs at least one frame a phone.
  EXPECT_GE(fewest, 6);
  for (int32_t n = fewest; n < fewest + 4 && n <= static_cast<int32_t>(u.frames()); ++n) {
    const FrameAlignment a = align_in(n);
    EXPECT_EQ(a.words_aligned, 1) << n << " frames";
    EXPECT_EQ(a.aligned_frames(), n) << n << " frames";
  }
  EXPECT_EQ(align_in(fewest - 1).words_failed, 1);
}

TEST(ForcedAligner, RejectsWordsOutOfOrderOrOutsideTheSpan) {
  if (!have_file(an4_dir() + "/mdef")) GTEST_SKIP() << "pocketsphinx-testdata not installed";
  const AcousticModel am = AcousticModel::load(an4_dir());
  Dictionary dict;
  dict.add_pronunciation("a", {"AH"}, false);
  const ForcedAligner aligner(am, dict);
  std::vector<float> feats(100 * static_cast<size_t>(aligner.feature_dim()), 0.0f);
  auto word = [](int s, int e) {
    HypothesisWord w;
    w.text = "a";
    w.start_frame = s;
    w.end_frame = e;
    return w;
  };
  EXPECT_THROW(aligner.align(feats.data(), 10, 90, {word(5, 20)}), std::invalid_argument);
  EXPECT_THROW(aligner.align(feats.data(), 10, 90, {word(90, 100)}), std::invalid_argument);
  EXPECT_THROW(aligner.align(feats.data(), 0, 100, {word(30, 40), word(10, 20)}),
               std::invalid_argument);
  EXPECT_THROW(aligner.align(feats.data(), 0, 100, {word(10, 20), word(20, 30)}),
               std::invalid_argument);
  EXPECT_THROW(aligner.align(feats.data(), 0, 100, {word(20, 10)}), std::invalid_argument);
  EXPECT_THROW(aligner.align(nullptr, 0, 100, {word(10, 20)}), std::invalid_argument);
  EXPECT_NO_THROW(aligner.align(feats.data(), 10, 90, {word(10, 20), word(21, 99)}));
}

// ------------------------------------------------------------ Recognizer

using testing::goforward_config;

bool have_goforward() { return testing::goforward_available(); }

// The senones of every phone (any context, any position) of `word`'s
// pronunciations.
std::set<int> senones_of_word(const AcousticModel& am, const Dictionary& dict,
                              const std::string& word) {
  std::set<int> bases;
  for (int p : dict.pronunciations(dict.word_id(word)))
    for (const std::string& ph : dict.phones(p)) bases.insert(am.mdef().base_phone_id(ph));
  std::set<int> out;
  for (int ph = 0; ph < am.mdef().num_phones(); ++ph)
    if (bases.count(am.mdef().base_of(ph)))
      for (int s : am.mdef().senones_of(ph)) out.insert(s);
  return out;
}

TEST(RecognizerAlignment, GoForwardWordsAlignToTheirOwnPhones) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  RecognizerConfig c = goforward_config(true);
  // Acoustic scores alone choose the path, so the Viterbi path must score
  // at least as well as any other path through the same HMMs.
  c.alignment.use_transition_probs = false;
  Recognizer rec(c);
  const std::vector<float> feats =
      rec.compute_features(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
  const int64_t frames = static_cast<int64_t>(feats.size()) / rec.feature_dim();
  rec.reset();
  rec.push_features(feats.data(), frames);
  const RecognitionResult r = rec.finish();
  ASSERT_EQ(r.text(), "go forward ten meters");
  const std::vector<HypothesisWord>& words = r.best.words;

  const auto t0 = std::chrono::steady_clock::now();
  const FrameAlignment a = rec.align(words);
  std::printf("aligned %zu frames of %zu words in %.1f ms\n", a.senones.size(), words.size(),
              1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(a.words_failed, 0);
  EXPECT_EQ(a.words_aligned, 4);
  EXPECT_TRUE(std::isfinite(a.log_likelihood));
  ASSERT_EQ(a.first_frame, words.front().start_frame);
  ASSERT_EQ(static_cast<int64_t>(a.senones.size()),
            words.back().end_frame - words.front().start_frame + 1);

  const AcousticModel& am = rec.acoustic_model();
  const Dictionary dict = Dictionary::load(c.dictionary, am.noise_dictionary_path());
  int64_t in_words = 0;
  for (const HypothesisWord& w : words) {
    const std::set<int> own = senones_of_word(am, dict, w.text);
    for (int64_t t = w.start_frame; t <= w.end_frame; ++t) {
      const int32_t s = a.senones[t - a.first_frame];
      ASSERT_GE(s, 0) << w.text << " frame " << t;
      EXPECT_TRUE(own.count(s)) << w.text << " frame " << t << " senone " << s;
      ++in_words;
    }
  }
  EXPECT_EQ(a.aligned_frames(), in_words);  // gaps stay -1 by default

  // The crude alternative: each word's HMM (its one pronunciation, the
  // contexts the aligner documents) cut uniformly into its states.
  const std::vector<double> ref = testing::reference_scores(am.mixtures(), feats.data(), frames);
  const int n_sen = am.mixtures().num_senones;
  const int n_emit = am.mdef().num_emitting_states();
  double uniform = 0.0;
  for (size_t i = 0; i < words.size(); ++i) {
    const HypothesisWord& w = words[i];
    auto bases_of = [&](const std::string& text) {
      std::vector<int> b;
      for (const std::string& ph : dict.phones(dict.pronunciations(dict.word_id(text)).front()))
        b.push_back(am.mdef().base_phone_id(ph));
      return b;
    };
    ASSERT_EQ(dict.pronunciations(dict.word_id(w.text)).size(), 1u) << w.text;
    const std::vector<int> bases = bases_of(w.text);
    const int left =
        i > 0 && words[i - 1].end_frame + 1 == w.start_frame ? bases_of(words[i - 1].text).back() : -1;
    const int right = i + 1 < words.size() && words[i + 1].start_frame == w.end_frame + 1
                          ? bases_of(words[i + 1].text).front()
                          : -1;
    std::vector<int> states;
    for (size_t p = 0; p < bases.size(); ++p) {
      const int phone = context_dependent_phone(
          am.mdef(), bases[p], p > 0 ? bases[p - 1] : left, p + 1 < bases.size() ? bases[p + 1] : right,
          position_in_word(p, bases.size()));
      for (int j = 0; j < n_emit; ++j) states.push_back(am.mdef().senone(phone, j));
    }
    const int64_t len = w.end_frame - w.start_frame + 1;
    ASSERT_GE(len, static_cast<int64_t>(states.size())) << w.text;
    for (int64_t k = 0; k < len; ++k) {
      const int s = states[static_cast<size_t>(k * static_cast<int64_t>(states.size()) / len)];
      uniform += ref[static_cast<size_t>(w.start_frame + k) * n_sen + s];
    }
  }
  EXPECT_GE(a.log_likelihood, uniform - 1e-6 * std::abs(uniform));
  EXPECT_GT(a.log_likelihood - uniform, 1.0) << "Viterbi no better than a uniform segmentation";
  double textbook = 0.0;  // the aligned senones' densities, as the reference has them
  for (size_t k = 0; k < a.senones.size(); ++k)
    if (a.senones[k] >= 0) textbook += ref[(a.first_frame + k) * n_sen + a.senones[k]];
  EXPECT_NEAR(a.log_likelihood, textbook, 1e-6 * std::abs(a.log_likelihood));

  // Word by word (as a streaming client aligns stable prefixes) gives the
  // same senones where the words' contexts are the same, and discarding
  // aligned frames makes aligning them again an error.
  const FrameAlignment first = rec.align({words[0]});
  EXPECT_EQ(first.words_aligned, 1);
  rec.discard_features_before(words[1].start_frame);
  EXPECT_EQ(rec.features_kept_from(), words[1].start_frame);
  EXPECT_THROW(rec.align({words[0]}), std::out_of_range);
  try {
    rec.align(words);
    ADD_FAILURE() << "aligning discarded frames did not throw";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("discarded"), std::string::npos) << e.what();
  }
  const std::vector<HypothesisWord> rest(words.begin() + 1, words.end());
  const FrameAlignment b = rec.align(rest);
  EXPECT_EQ(b.words_aligned, 3);
  // From the third word on the contexts are the same as before; the second
  // word's too unless it touched the first (its left context is now SIL).
  const int64_t same_from =
      words[0].end_frame + 1 == words[1].start_frame ? words[2].start_frame : words[1].start_frame;
  for (int64_t t = same_from; t <= words.back().end_frame; ++t)
    EXPECT_EQ(b.senones[t - b.first_frame], a.senones[t - a.first_frame]) << "frame " << t;
  // Words out of order are the aligner's invalid_argument.
  EXPECT_THROW(rec.align({words[2], words[1]}), std::invalid_argument);
  // Frames not pushed yet.
  HypothesisWord late = words.back();
  late.start_frame = static_cast<int32_t>(frames) + 5;
  late.end_frame = late.start_frame + 10;
  EXPECT_THROW(rec.align({late}), std::out_of_range);
  // reset() discards everything.
  rec.reset();
  EXPECT_THROW(rec.align({words[1]}), std::out_of_range);
  EXPECT_EQ(rec.align({}).senones.size(), 0u);
}

TEST(RecognizerAlignment, RecognizeKeepsFeaturesAndComputeFeaturesMatchesIt) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  Recognizer rec(goforward_config(true));
  const RecognitionResult r =
      rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
  const FrameAlignment a = rec.align(r.best.words);
  EXPECT_EQ(a.words_aligned, static_cast<int>(r.best.words.size()));
  EXPECT_EQ(a.words_failed, 0);
  // Decoding compute_features()'s frames gives recognize()'s words.
  const std::vector<float> f =
      rec.compute_features(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
  rec.reset();
  rec.push_features(f.data(), static_cast<int64_t>(f.size()) / rec.feature_dim());
  EXPECT_EQ(rec.finish().text(), r.text());
}

TEST(RecognizerAlignment, AlignWithoutKeptFeaturesThrows) {
  if (!have_goforward()) GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  const AudioData audio = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  Recognizer rec(goforward_config(false));
  const RecognitionResult r =
      rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
  ASSERT_FALSE(r.best.words.empty());
  try {
    rec.align(r.best.words);
    ADD_FAILURE() << "align() without kept features did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("keep_features_for_alignment"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpuspeech
