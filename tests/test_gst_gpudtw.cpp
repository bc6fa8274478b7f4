// The gpudtw element under GstHarness: a stream of tone "words" between
// silences gives one bus message and one timed-text buffer per word with
// the right label and timing, however the audio is cut; rejection; an
// utterance open at EOS is still matched; rejection by a learnt map
// (reject-mapped) judges the mapped score; bad templates and a wrong rate
// end in an error naming the problem.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "common/dtw/feature_projection.h"
#include "common/dtw/word_recognizer.h"

namespace {

namespace gs = gpuspeech;

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
const auto* const kGstEnv = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

constexpr int kRate = 16000;

void write_wav(const std::string& path, const std::vector<int16_t>& s) {
  std::ofstream f(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
  f.write("RIFF", 4);
  u32(36 + static_cast<uint32_t>(s.size() * 2));
  f.write("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(kRate);
  u32(kRate * 2);
  u16(2);
  u16(16);
  f.write("data", 4);
  u32(static_cast<uint32_t>(s.size() * 2));
  f.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size() * 2));
}

void add_silence(std::vector<int16_t>& s, double seconds, std::mt19937& gen) {
  std::normal_distribution<float> nd(0.0f, 5.0f);
  for (int k = 0; k < static_cast<int>(seconds * kRate); ++k) s.push_back(static_cast<int16_t>(nd(gen)));
}

void add_chirp(std::vector<int16_t>& s, double f0, double f1, double seconds) {
  const int n = static_cast<int>(seconds * kRate);
  double phase = 0.0;
  for (int k = 0; k < n; ++k) {
    phase += 2 * M_PI * (f0 + (f1 - f0) * k / n) / kRate;
    s.push_back(static_cast<int16_t>(8000.0 * std::sin(phase)));
  }
}

struct Result {
  std::string label;
  double distance;
  bool rejected;
  bool band_limited;
  double mapped;
  guint64 timestamp, duration;
};

class GpuDtwTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuspeech-gpudtw-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::mkdir((dir_ + "/tpl").c_str(), 0755);
    std::mt19937 gen(1);
    for (auto [name, f0, f1] : {std::make_tuple("up_1", 300.0, 1500.0), std::make_tuple("down_1", 1500.0, 300.0)}) {
      std::vector<int16_t> s;
      add_silence(s, 0.3, gen);
      add_chirp(s, f0, f1, 0.5);
      add_silence(s, 0.3, gen);
      write_wav(dir_ + "/tpl/" + name + ".wav", s);
    }
    // The stream: up at 1.0-1.6 s, down at 2.6-3.0 s.
    add_silence(stream_, 1.0, gen);
    add_chirp(stream_, 320, 1450, 0.6);
    add_silence(stream_, 1.0, gen);
    add_chirp(stream_, 1450, 320, 0.4);
    add_silence(stream_, 1.0, gen);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // A second, slightly different recording of "up" in the templates.
  void add_second_up_template() {
    std::mt19937 gen(2);
    std::vector<int16_t> s;
    add_silence(s, 0.3, gen);
    add_chirp(s, 280, 1600, 0.55);
    add_silence(s, 0.3, gen);
    write_wav(dir_ + "/tpl/up_2.wav", s);
  }

  GstHarness* make(const std::string& extra = "") {
    const std::string desc = "gpudtw templates=" + dir_ + "/tpl cache-dir=- " + extra;
    GstHarness* h = gst_harness_new_parse(desc.c_str());
    gst_harness_set_src_caps_str(h, "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved");
    return h;
  }

  // Pushes the stream in pieces of `chunk` samples, then EOS; collects the
  // element messages and text buffers.
  void run(GstHarness* h, size_t chunk, std::vector<Result>* results, std::vector<std::string>* texts,
           std::vector<GstClockTime>* text_pts) {
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    for (size_t pos = 0; pos < stream_.size(); pos += chunk) {
      const size_t n = std::min(chunk, stream_.size() - pos);
      GstBuffer* b = gst_buffer_new_memdup(stream_.data() + pos, n * 2);
      GST_BUFFER_PTS(b) = gst_util_uint64_scale_int(pos, GST_SECOND, kRate);
      ASSERT_EQ(gst_harness_push(h, b), GST_FLOW_OK);
    }
    ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
    while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
      const GstStructure* s = gst_message_get_structure(m);
      if (gst_structure_has_name(s, "gpudtw")) {
        Result r;
        r.label = gst_structure_get_string(s, "label");
        gst_structure_get_double(s, "distance", &r.distance);
        gboolean rej = FALSE;
        gst_structure_get_boolean(s, "rejected", &rej);
        r.rejected = rej;
        gboolean band = FALSE;
        EXPECT_TRUE(gst_structure_get_boolean(s, "band-limited", &band));
        r.band_limited = band;
        EXPECT_TRUE(gst_structure_get_double(s, "mapped-distance", &r.mapped));
        gst_structure_get_uint64(s, "timestamp", &r.timestamp);
        gst_structure_get_uint64(s, "duration", &r.duration);
        EXPECT_TRUE(gst_structure_has_field(s, "runner-up"));
        results->push_back(r);
      }
      gst_message_unref(m);
    }
    while (GstBuffer* b = gst_harness_try_pull(h)) {
      GstMapInfo map;
      gst_buffer_map(b, &map, GST_MAP_READ);
      texts->emplace_back(reinterpret_cast<const char*>(map.data), map.size);
      gst_buffer_unmap(b, &map);
      text_pts->push_back(GST_BUFFER_PTS(b));
      gst_buffer_unref(b);
    }
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
  }

  std::string dir_;
  std::vector<int16_t> stream_;
};

TEST_F(GpuDtwTest, OneMessageAndTextPerWordWhateverTheChunking) {
  for (size_t chunk : {size_t{160}, size_t{1000}, size_t{48000}}) {
    GstHarness* h = make();
    std::vector<Result> r;
    std::vector<std::string> texts;
    std::vector<GstClockTime> pts;
    run(h, chunk, &r, &texts, &pts);
    gst_harness_teardown(h);
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].label, "up");
    EXPECT_EQ(r[1].label, "down");
    EXPECT_FALSE(r[0].rejected);
    // Within the endpointer's padding (5 frames) and two frames of onset.
    EXPECT_NEAR(static_cast<double>(r[0].timestamp) / GST_SECOND, 1.0, 0.08);
    EXPECT_NEAR(static_cast<double>(r[0].timestamp + r[0].duration) / GST_SECOND, 1.6, 0.08);
    EXPECT_NEAR(static_cast<double>(r[1].timestamp) / GST_SECOND, 2.6, 0.08);
    EXPECT_NEAR(static_cast<double>(r[1].timestamp + r[1].duration) / GST_SECOND, 3.0, 0.08);
    ASSERT_EQ(texts.size(), 2u);
    EXPECT_EQ(texts[0], "up");
    EXPECT_EQ(texts[1], "down");
    EXPECT_EQ(pts[0], r[0].timestamp);
  }
}

// The chirps lie below 1.5 kHz with a faint noise floor around them: with
// band matching on (the default) they are band-limited and matched against
// the templates cut at 4 kHz; off, against the templates as they are. The
// words are the same either way.
TEST_F(GpuDtwTest, BandMatchingSaysWhichBandMatched) {
  for (bool on : {true, false}) {
    GstHarness* h = make(on ? "" : "band-match=false");
    std::vector<Result> r;
    std::vector<std::string> texts;
    std::vector<GstClockTime> pts;
    run(h, 4000, &r, &texts, &pts);
    gst_harness_teardown(h);
    SCOPED_TRACE(on ? "band-match on" : "band-match off");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].label, "up");
    EXPECT_EQ(r[1].label, "down");
    EXPECT_EQ(r[0].band_limited, on);
    EXPECT_EQ(r[1].band_limited, on);
  }
}

TEST_F(GpuDtwTest, RejectionKeepsTheMessageAndDropsTheText) {
  GstHarness* h = make("reject=0.001");
  std::vector<Result> r;
  std::vector<std::string> texts;
  std::vector<GstClockTime> pts;
  run(h, 4000, &r, &texts, &pts);
  gst_harness_teardown(h);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].rejected);
  EXPECT_EQ(r[0].label, "up");  // still says what was nearest
  EXPECT_TRUE(texts.empty());
}

// Starting `desc` posts a message of `type` containing `needle`: an error
// fails the state change to PAUSED; a warning leaves the change to READY
// (where the templates load) to succeed.
void expect_start_message(const std::string& desc, GstMessageType type, const std::string& needle) {
  const bool error = type == GST_MESSAGE_ERROR;
  GstElement* pipe = gst_parse_launch(desc.c_str(), nullptr);
  ASSERT_NE(pipe, nullptr);
  const GstStateChangeReturn ret = gst_element_set_state(pipe, error ? GST_STATE_PAUSED : GST_STATE_READY);
  if (error)
    EXPECT_EQ(ret, GST_STATE_CHANGE_FAILURE);
  else
    EXPECT_NE(ret, GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipe);
  GstMessage* m = gst_bus_pop_filtered(bus, type);
  ASSERT_NE(m, nullptr) << desc;
  GError* err = nullptr;
  gchar* dbg = nullptr;
  if (error)
    gst_message_parse_error(m, &err, &dbg);
  else
    gst_message_parse_warning(m, &err, &dbg);
  EXPECT_NE(std::string(err->message).find(needle), std::string::npos) << err->message;
  g_error_free(err);
  g_free(dbg);
  gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(pipe, GST_STATE_NULL);
  gst_object_unref(pipe);
}

// The element fails to start with an error message containing `needle`.
void expect_start_error(const std::string& desc, const std::string& needle) {
  expect_start_message(desc, GST_MESSAGE_ERROR, needle);
}

// A map of the features as they are (13 x 13 identity, no context) for
// the element's features and for band matching's cut set, with the given
// thresholds (by the templates a word has): under it a word's mapped score
// is its plain score.
void write_identity_maps(const std::string& dir, std::vector<float> thresholds) {
  const gs::WordRecognizerOptions ro = gs::WordRecognizerOptions::defaults();
  const gs::TemplateLibraryOptions cut = gs::band_limited_library(ro.library, ro.band_limit);
  int n = 0;
  for (const gs::DtwFeatureConfig* f : {&ro.library.features, &cut.features}) {
    gs::DtwProjection p;
    p.features = f->frame_signature();
    p.input_dim = p.output_dim = f->dim();
    p.weights.assign(static_cast<size_t>(p.input_dim) * p.input_dim, 0.0f);
    for (int k = 0; k < p.input_dim; ++k) p.weights[static_cast<size_t>(k) * p.input_dim + k] = 1.0f;
    p.thresholds = thresholds;
    std::ofstream(dir + "/m" + std::to_string(n++) + ".projection") << gs::format_dtw_projection(p);
  }
}

TEST_F(GpuDtwTest, MappedRejectionJudgesTheMappedScore) {
  for (float threshold : {1e30f, 1e-6f}) {
    const std::string maps = dir_ + "/maps" + std::to_string(threshold > 1.0f);
    ::mkdir(maps.c_str(), 0755);
    write_identity_maps(maps, {threshold});
    GstHarness* h = make("rescore=0 reject-mapped=true syllable-check=false projection=" + maps);
    std::vector<Result> r;
    std::vector<std::string> texts;
    std::vector<GstClockTime> pts;
    run(h, 4000, &r, &texts, &pts);
    gst_harness_teardown(h);
    SCOPED_TRACE("threshold " + std::to_string(threshold));
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].label, "up");  // the word is chosen as without the map
    EXPECT_EQ(r[1].label, "down");
    for (const Result& x : r) {
      EXPECT_GT(x.mapped, 0.0);
      EXPECT_NEAR(x.mapped, x.distance, 1e-3 * x.distance);  // one template a word, no rescoring
      EXPECT_EQ(x.rejected, threshold < 1.0f);
    }
    EXPECT_EQ(texts.size(), threshold < 1.0f ? 0u : 2u);
  }
  // Maps of other features only: refused, naming what differs.
  const std::string other = dir_ + "/other";
  ::mkdir(other.c_str(), 0755);
  write_identity_maps(other, {1.0f});
  expect_start_error("fakesrc ! gpudtw templates=" + dir_ + "/tpl cache-dir=- features=mfcc reject-mapped=true "
                     "projection=" + other + " ! fakesink",
                     "no DTW projection map was learnt on these features");
}

// A word takes the map's threshold for its count of templates: with
// thresholds {huge, tiny}, "up" with a second template is rejected and
// "down" with one is not.
TEST_F(GpuDtwTest, MappedRejectionTakesTheThresholdOfTheWordsTemplateCount) {
  add_second_up_template();
  const std::string maps = dir_ + "/maps";
  ::mkdir(maps.c_str(), 0755);
  write_identity_maps(maps, {1e30f, 1e-6f});
  GstHarness* h = make("rescore=0 reject-mapped=true syllable-check=false projection=" + maps);
  std::vector<Result> r;
  std::vector<std::string> texts;
  std::vector<GstClockTime> pts;
  run(h, 4000, &r, &texts, &pts);
  gst_harness_teardown(h);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].label, "up");
  EXPECT_TRUE(r[0].rejected);
  EXPECT_EQ(r[1].label, "down");
  EXPECT_FALSE(r[1].rejected);
  EXPECT_EQ(texts, (std::vector<std::string>{"down"}));
}

// By default the installed map of the default features rejects (every
// message carries its score); with features no installed map was learnt
// on, the element starts, warns that nothing is rejected, and matches.
TEST_F(GpuDtwTest, DefaultRejectionIsTheInstalledMapOrAWarning) {
  GstHarness* h = make();
  std::vector<Result> r;
  std::vector<std::string> texts;
  std::vector<GstClockTime> pts;
  run(h, 4000, &r, &texts, &pts);
  gst_harness_teardown(h);
  ASSERT_EQ(r.size(), 2u);
  for (const Result& x : r) EXPECT_GT(x.mapped, 0.0) << x.label;

  expect_start_message("fakesrc ! gpudtw templates=" + dir_ + "/tpl cache-dir=- features=mfcc ! fakesink",
                       GST_MESSAGE_WARNING, "nothing is rejected: no DTW projection map was learnt");

  GstHarness* mfcc = make("features=mfcc");
  r.clear();
  texts.clear();
  pts.clear();
  run(mfcc, 4000, &r, &texts, &pts);
  gst_harness_teardown(mfcc);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].label, "up");
  EXPECT_EQ(r[1].label, "down");
  for (const Result& x : r) {
    EXPECT_FALSE(x.rejected);
    EXPECT_EQ(x.mapped, 0.0);
  }
}

TEST_F(GpuDtwTest, UtteranceOpenAtEosIsMatched) {
  stream_.resize(static_cast<size_t>(1.4 * kRate));  // cut inside "up"
  GstHarness* h = make();
  std::vector<Result> r;
  std::vector<std::string> texts;
  std::vector<GstClockTime> pts;
  run(h, 1600, &r, &texts, &pts);
  gst_harness_teardown(h);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].label, "up");
}

TEST_F(GpuDtwTest, BadTemplatesFailTheStateChangeByName) {
  ::mkdir((dir_ + "/empty").c_str(), 0755);
  expect_start_error("fakesrc ! gpudtw templates=" + dir_ + "/empty cache-dir=- ! fakesink",
                     dir_ + "/empty: no templates");
  expect_start_error("fakesrc ! gpudtw cache-dir=- ! fakesink", "no templates");
  expect_start_error("fakesrc ! gpudtw templates=" + dir_ + "/tpl features=mel ! fakesink",
                     "unknown feature kind 'mel'");
}

TEST_F(GpuDtwTest, BadMatchingSettingsFailTheStateChange) {
  const std::string e = "fakesrc ! gpudtw templates=" + dir_ + "/tpl cache-dir=- ";
  expect_start_error(e + "warps=0.9,,1.1 ! fakesink", "bad warp list");
  expect_start_error(e + "features=spectrum warps=0.9,1 ! fakesink", "VTLN warps need mfcc or fbank");
  expect_start_error(e + "features=fbank lifter=10 ! fakesink", "lifter needs features=mfcc or plp");
  expect_start_error(e + "reject=10 reject-scale=1.2 ! fakesink", "not both");
  expect_start_error(e + "reject=10 projection=/x.projection ! fakesink", "projection is for reject-mapped");
  expect_start_error(e + "projection=/x.projection ! fakesink", "/x.projection: cannot open");
  expect_start_error(e + "averaging=mean ! fakesink", "unknown template averaging 'mean'");
  // One template per word: nothing to learn a rejection scale from.
  expect_start_error(e + "reject-scale=1.2 ! fakesink", "at least two templates of one word");
}

TEST_F(GpuDtwTest, SettingsOfTheMatchingAreUsed) {
  // Without warping, k 1 and the lifter of before, and with a second
  // template of "up" and a scale learnt from the two "up" templates.
  add_second_up_template();
  for (const std::string& extra : {std::string("warps=1 k-nearest=1 lifter=22"), std::string("averaging=add"),
                                   std::string("rescore=0"), std::string("rescore=5"),
                                   std::string("reject-scale=100")}) {
    GstHarness* h = make(extra);
    std::vector<Result> r;
    std::vector<std::string> texts;
    std::vector<GstClockTime> pts;
    run(h, 4000, &r, &texts, &pts);
    gst_harness_teardown(h);
    ASSERT_EQ(r.size(), 2u) << extra;
    EXPECT_EQ(texts, (std::vector<std::string>{"up", "down"})) << extra;
  }
  // A tiny scale rejects everything, still naming the nearest word.
  GstHarness* h = make("reject-scale=0.0001");
  std::vector<Result> r;
  std::vector<std::string> texts;
  std::vector<GstClockTime> pts;
  run(h, 4000, &r, &texts, &pts);
  gst_harness_teardown(h);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].rejected && r[1].rejected);
  EXPECT_EQ(r[0].label, "up");
  EXPECT_TRUE(texts.empty());
}

TEST_F(GpuDtwTest, OtherRateIsRefused) {
  // The caps query offers only the templates' rate, so 8 kHz caps are not
  // accepted and the data flow stops as not-negotiated (audioresample in
  // front converts instead).
  GstHarness* h = gst_harness_new_parse(("gpudtw templates=" + dir_ + "/tpl cache-dir=-").c_str());
  gst_harness_set_src_caps_str(h, "audio/x-raw, format=S16LE, rate=8000, channels=1, layout=interleaved");
  GstBuffer* b = gst_buffer_new_memdup(stream_.data(), 3200);
  EXPECT_EQ(gst_harness_push(h, b), GST_FLOW_NOT_NEGOTIATED);
  GstCaps* caps = gst_pad_query_caps(h->srcpad, nullptr);
  GstCaps* peer = gst_pad_peer_query_caps(h->srcpad, nullptr);
  gchar* text = gst_caps_to_string(peer);
  EXPECT_NE(std::string(text).find("rate=(int)16000"), std::string::npos) << text;
  g_free(text);
  gst_caps_unref(peer);
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

}  // namespace
