// The gpufeatures element under GstHarness: output identical however the
// audio is cut, timestamps, EOS/DISCONT/GAP/FLUSH handling, caps, latency,
// and every kind of bad input (wrong caps, NaN/Inf, empty stream, missing
// backend or feat.params) ending in a bus message, never a crash.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_signature.h"
#include "common/features/feature_writer.h"
#include "common/features/stream_extractor.h"
#include "common/features/wav_reader.h"
#include "gst/gpuspeech_cmn_meta.h"
#include "gst/gpuspeech_vad_event.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

constexpr const char* kS16Caps =
    "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved";
constexpr const char* kF32Caps =
    "audio/x-raw, format=F32LE, rate=16000, channels=1, layout=interleaved";

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
const auto* const kGstEnv = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

std::vector<int16_t> speech_s16() {
  const AudioData a = read_wav_file(testing::audio_dir() +
                                    "/librivox/sense_and_sensibility_01_austen_64kb-0880.wav");
  std::vector<int16_t> out(a.samples.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int16_t>(a.samples[i]);
  return out;
}

std::vector<float> as_float(const std::vector<int16_t>& s) {
  return std::vector<float>(s.begin(), s.end());
}

// The options the element builds for flavour sphinx, kind mfcc, cmn=live,
// deltas=1s_c_d_dd.
FeatureOptions live_sphinx_options() {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  return o;
}

// An element with a bus of its own, so that its messages can be inspected.
struct Element {
  GstElement* element = nullptr;
  GstBus* bus = nullptr;
  explicit Element(std::initializer_list<std::pair<const char*, const char*>> props) {
    element = gst_element_factory_make("gpufeatures", nullptr);
    if (!element) return;
    for (const auto& p : props) gst_util_set_object_arg(G_OBJECT(element), p.first, p.second);
    bus = gst_bus_new();
    gst_element_set_bus(element, bus);
  }
  ~Element() {
    if (element) {
      gst_element_set_state(element, GST_STATE_NULL);
      gst_object_unref(element);
    }
    if (bus) gst_object_unref(bus);
  }
};

struct Message {
  GstMessageType type;
  std::string name;  // structure name for element messages
  std::string text;  // error/warning text + debug, or the structure
  GstStructure* s = nullptr;  // owned copy for element messages
};

std::vector<Message> drain_bus(GstBus* bus) {
  std::vector<Message> out;
  while (GstMessage* m = gst_bus_pop(bus)) {
    Message msg{GST_MESSAGE_TYPE(m), "", "", nullptr};
    if (msg.type == GST_MESSAGE_ERROR || msg.type == GST_MESSAGE_WARNING) {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      if (msg.type == GST_MESSAGE_ERROR)
        gst_message_parse_error(m, &err, &dbg);
      else
        gst_message_parse_warning(m, &err, &dbg);
      msg.text = std::string(err ? err->message : "") + " | " + (dbg ? dbg : "");
      g_clear_error(&err);
      g_free(dbg);
    } else if (msg.type == GST_MESSAGE_ELEMENT) {
      const GstStructure* s = gst_message_get_structure(m);
      msg.name = gst_structure_get_name(s);
      gchar* str = gst_structure_to_string(s);
      msg.text = str;
      g_free(str);
      msg.s = gst_structure_copy(s);
    }
    gst_message_unref(m);
    out.push_back(msg);
  }
  return out;
}

void free_messages(std::vector<Message>& ms) {
  for (Message& m : ms)
    if (m.s) gst_structure_free(m.s);
  ms.clear();
}

int count(const std::vector<Message>& ms, GstMessageType type, const std::string& name = "") {
  int n = 0;
  for (const Message& m : ms)
    if (m.type == type && (name.empty() || m.name == name)) ++n;
  return n;
}

std::string first_text(const std::vector<Message>& ms, GstMessageType type) {
  for (const Message& m : ms)
    if (m.type == type) return m.text;
  return "";
}

// A harness around an Element, with input caps set.
struct Harnessed {
  Element el;
  GstHarness* h = nullptr;
  Harnessed(std::initializer_list<std::pair<const char*, const char*>> props,
            const char* caps = kS16Caps)
      : el(props) {
    if (!el.element) return;
    h = gst_harness_new_with_element(el.element, "sink", "src");
    if (caps) gst_harness_set_src_caps_str(h, caps);
  }
  ~Harnessed() {
    if (h) gst_harness_teardown(h);
  }
};

GstBuffer* s16_buffer(const int16_t* s, size_t n, GstClockTime pts) {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, n * 2, nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  for (size_t i = 0; i < n; ++i) GST_WRITE_UINT16_LE(map.data + 2 * i, static_cast<uint16_t>(s[i]));
  gst_buffer_unmap(b, &map);
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = gst_util_uint64_scale_int(n, GST_SECOND, 16000);
  return b;
}

GstBuffer* f32_buffer(const float* s, size_t n, GstClockTime pts) {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, n * 4, nullptr);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_WRITE);
  for (size_t i = 0; i < n; ++i) GST_WRITE_FLOAT_LE(map.data + 4 * i, s[i]);
  gst_buffer_unmap(b, &map);
  GST_BUFFER_PTS(b) = pts;
  return b;
}

// Pushes `audio` in pieces of the given sizes (cycled), timestamped from
// `base`.
void push_s16(GstHarness* h, const std::vector<int16_t>& audio, const std::vector<size_t>& sizes,
              GstClockTime base = 0, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, audio.size());
  size_t pos = from, k = 0;
  while (pos < to) {
    const size_t n = std::min(sizes[k++ % sizes.size()], to - pos);
    ASSERT_EQ(gst_harness_push(h, s16_buffer(audio.data() + pos, n,
                                             base + gst_util_uint64_scale_int(pos - from, GST_SECOND, 16000))),
              GST_FLOW_OK);
    pos += n;
  }
}

struct Output {
  int dim = 0;
  std::vector<float> data;
  std::vector<GstClockTime> pts, duration;
  std::vector<guint64> offset, offset_end;
  std::vector<bool> discont;
  int64_t frames() const { return dim ? static_cast<int64_t>(data.size()) / dim : 0; }
};

void pull_all(GstHarness* h, int dim, Output& out) {
  out.dim = dim;
  while (GstBuffer* b = gst_harness_try_pull(h)) {
    GstMapInfo map;
    gst_buffer_map(b, &map, GST_MAP_READ);
    EXPECT_EQ(map.size % (dim * sizeof(float)), 0u) << "buffer is not whole frames";
    const float* f = reinterpret_cast<const float*>(map.data);
    out.data.insert(out.data.end(), f, f + map.size / sizeof(float));
    gst_buffer_unmap(b, &map);
    out.pts.push_back(GST_BUFFER_PTS(b));
    out.duration.push_back(GST_BUFFER_DURATION(b));
    out.offset.push_back(GST_BUFFER_OFFSET(b));
    out.offset_end.push_back(GST_BUFFER_OFFSET_END(b));
    out.discont.push_back(GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DISCONT));
    gst_buffer_unref(b);
  }
}

std::vector<size_t> random_sizes(uint32_t seed, size_t max) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<size_t> d(1, max);
  std::vector<size_t> v(101);
  for (size_t& x : v) x = d(gen);
  v[0] = 1;
  v[1] = 1;
  v[50] = 1;
  return v;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) /
                                std::max(1.0, std::fabs(static_cast<double>(b[i]))));
  return worst;
}

Output run_s16(const std::vector<int16_t>& audio, const std::vector<size_t>& sizes,
               GstClockTime base = 0) {
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
  Output out;
  if (!t.h) {
    ADD_FAILURE() << "gpufeatures not found (GST_PLUGIN_PATH_1_0?)";
    return out;
  }
  push_s16(t.h, audio, sizes, base);
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
  pull_all(t.h, 39, out);
  return out;
}

// Every test needs the element; without it (GST_PLUGIN_PATH_1_0 not at
// build/gst) each fails at once instead of crashing on a null harness.
class GstGpuFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    GstElementFactory* f = gst_element_factory_find("gpufeatures");
    ASSERT_NE(f, nullptr) << "gpufeatures not found; GST_PLUGIN_PATH_1_0 must point at build/gst";
    gst_object_unref(f);
  }
};

TEST_F(GstGpuFeatures, ElementIsRegistered) {
  GstElement* e = gst_element_factory_make("gpufeatures", nullptr);
  ASSERT_NE(e, nullptr);
  gst_object_unref(e);
}

TEST_F(GstGpuFeatures, PiecesGiveIdenticalFeaturesEqualToTheCore) {
  const std::vector<int16_t> audio = speech_s16();
  const Output whole = run_s16(audio, {audio.size()});
  ASSERT_GT(whole.frames(), 0);

  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> samples = as_float(audio);
  const FeatureMatrix ref =
      compute_features(live_sphinx_options(), *cpu, samples.data(), samples.size());
  ASSERT_EQ(whole.frames(), ref.rows);
  EXPECT_LE(max_rel_diff(whole.data, ref.data), 1e-5);

  for (const auto& sizes : {random_sizes(1, 3), random_sizes(2, 900), random_sizes(3, 12000),
                            std::vector<size_t>{1}}) {
    const Output pieces = run_s16(audio, sizes);
    ASSERT_EQ(pieces.frames(), whole.frames());
    EXPECT_EQ(0, std::memcmp(pieces.data.data(), whole.data.data(),
                             whole.data.size() * sizeof(float)))
        << "features differ when the audio is cut differently";
  }
}

TEST_F(GstGpuFeatures, F32InputGivesTheSameFeaturesAsS16) {
  const std::vector<int16_t> audio = speech_s16();
  const Output s16 = run_s16(audio, {4000});
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}}, kF32Caps);
  std::vector<float> f(audio.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = audio[i] / 32768.0f;
  for (size_t pos = 0; pos < f.size(); pos += 777)
    ASSERT_EQ(gst_harness_push(t.h, f32_buffer(f.data() + pos, std::min<size_t>(777, f.size() - pos),
                                               GST_CLOCK_TIME_NONE)),
              GST_FLOW_OK);
  gst_harness_push_event(t.h, gst_event_new_eos());
  Output f32;
  pull_all(t.h, 39, f32);
  ASSERT_EQ(f32.frames(), s16.frames());
  EXPECT_EQ(0, std::memcmp(f32.data.data(), s16.data.data(), s16.data.size() * sizeof(float)));
}

TEST_F(GstGpuFeatures, TimestampsFollowFramesAndEosFlushesTheRest) {
  const std::vector<int16_t> audio = speech_s16();
  const GstClockTime base = 5 * GST_SECOND;
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
  push_s16(t.h, audio, random_sizes(7, 2000), base);
  Output before;
  pull_all(t.h, 39, before);
  BackendPtr cpu = make_cpu_backend();
  const int64_t expected = FeatureExtractor(live_sphinx_options(), *cpu).num_frames(audio.size());
  EXPECT_LT(before.frames(), expected);  // look-ahead and the last frames wait
  ASSERT_FALSE(before.discont.empty());
  EXPECT_TRUE(before.discont[0]);  // the stream's first buffer
  for (size_t i = 1; i < before.discont.size(); ++i) EXPECT_FALSE(before.discont[i]) << i;
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
  Output after;
  pull_all(t.h, 39, after);
  EXPECT_EQ(before.frames() + after.frames(), expected);

  Output all = before;
  all.data.insert(all.data.end(), after.data.begin(), after.data.end());
  all.pts.insert(all.pts.end(), after.pts.begin(), after.pts.end());
  all.duration.insert(all.duration.end(), after.duration.begin(), after.duration.end());
  all.offset.insert(all.offset.end(), after.offset.begin(), after.offset.end());
  all.offset_end.insert(all.offset_end.end(), after.offset_end.begin(), after.offset_end.end());
  ASSERT_FALSE(all.pts.empty());
  guint64 next = 0;
  for (size_t i = 0; i < all.pts.size(); ++i) {
    // PTS = base + first frame index * 10 ms; duration = frames * 10 ms.
    EXPECT_EQ(all.offset[i], next);
    EXPECT_EQ(all.pts[i], base + all.offset[i] * 10 * GST_MSECOND) << "buffer " << i;
    EXPECT_EQ(all.duration[i], (all.offset_end[i] - all.offset[i]) * 10 * GST_MSECOND);
    if (i > 0) {
      EXPECT_EQ(all.pts[i], all.pts[i - 1] + all.duration[i - 1]);
    }
    next = all.offset_end[i];
  }
  EXPECT_EQ(next, static_cast<guint64>(expected));

  // EOS itself is forwarded after the last frames.
  bool saw_eos = false;
  while (GstEvent* e = gst_harness_try_pull_event(t.h)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_EOS) saw_eos = true;
    gst_event_unref(e);
  }
  EXPECT_TRUE(saw_eos);
}

TEST_F(GstGpuFeatures, SrcCapsDescribeTheFeatures) {
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
  GstPad* src = gst_element_get_static_pad(t.el.element, "src");
  GstCaps* caps = gst_pad_get_current_caps(src);
  gst_object_unref(src);
  ASSERT_NE(caps, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  EXPECT_STREQ(gst_structure_get_name(s), "audio/x-gpuspeech-features");
  EXPECT_STREQ(gst_structure_get_string(s, "kind"), "mfcc");
  EXPECT_STREQ(gst_structure_get_string(s, "flavour"), "sphinx");
  EXPECT_STREQ(gst_structure_get_string(s, "layout"), "1s_c_d_dd");
  EXPECT_STREQ(gst_structure_get_string(s, "format"), "F32LE");
  EXPECT_STREQ(gst_structure_get_string(s, "cmn"), "live");
  int dim = 0, base = 0, rate = 0, warps = 0, num = 0, den = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "dim", &dim));
  EXPECT_TRUE(gst_structure_get_int(s, "base-dim", &base));
  EXPECT_TRUE(gst_structure_get_int(s, "sample-rate", &rate));
  EXPECT_TRUE(gst_structure_get_int(s, "num-warps", &warps));
  EXPECT_TRUE(gst_structure_get_fraction(s, "frame-rate", &num, &den));
  EXPECT_EQ(dim, 39);
  EXPECT_EQ(base, 13);
  EXPECT_EQ(rate, 16000);
  EXPECT_EQ(warps, 1);
  EXPECT_EQ(num, 100);
  EXPECT_EQ(den, 1);
  const char* config = gst_structure_get_string(s, "config");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(std::string(config), feature_signature(live_sphinx_options()));
  gst_caps_unref(caps);
}

TEST_F(GstGpuFeatures, SinkCapsQueryOffersOnlyTheConfiguredRate) {
  for (const char* rate : {"16000", "8000"}) {
    // (An 8 kHz configuration needs the filterbank below 4 kHz.)
    Element el({{"sample-rate", rate}, {"high-freq", "3500"}, {"backend", "cpu"}});
    GstPad* sink = gst_element_get_static_pad(el.element, "sink");
    GstCaps* caps = gst_pad_query_caps(sink, nullptr);
    int r = 0;
    ASSERT_EQ(gst_caps_get_size(caps), 1u);
    EXPECT_TRUE(gst_structure_get_int(gst_caps_get_structure(caps, 0), "rate", &r));
    EXPECT_EQ(r, std::stoi(rate));
    gst_caps_unref(caps);
    gst_object_unref(sink);
  }
  // The rate is offered even while other options are inconsistent (the
  // state change reports those).
  Element el({{"sample-rate", "8000"}, {"backend", "cpu"}});
  GstPad* sink = gst_element_get_static_pad(el.element, "sink");
  GstCaps* caps = gst_pad_query_caps(sink, nullptr);
  int r = 0;
  EXPECT_TRUE(gst_structure_get_int(gst_caps_get_structure(caps, 0), "rate", &r));
  EXPECT_EQ(r, 8000);
  gst_caps_unref(caps);
  gst_object_unref(sink);
}

TEST_F(GstGpuFeatures, StereoCapsAreRefusedWithAMessage) {
  Harnessed t({{"backend", "cpu"}}, nullptr);
  GstCaps* caps = gst_caps_from_string(
      "audio/x-raw, format=S16LE, rate=16000, channels=2, layout=interleaved, "
      "channel-mask=(bitmask)0x3");
  gst_harness_push_event(t.h, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  // The refused caps stay sticky upstream; data then fails to negotiate.
  const int16_t s[4] = {1, 2, 3, 4};
  EXPECT_EQ(gst_harness_push(t.h, s16_buffer(s, 4, 0)), GST_FLOW_NOT_NEGOTIATED);
  EXPECT_EQ(gst_harness_buffers_received(t.h), 0u);
  std::vector<Message> ms = drain_bus(t.el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find("mono"), std::string::npos) << err;
  EXPECT_NE(err.find("2 channels"), std::string::npos) << err;
  free_messages(ms);
}

TEST_F(GstGpuFeatures, WrongRateIsRefusedNamingBothRates) {
  Harnessed t({{"backend", "cpu"}}, nullptr);
  GstCaps* caps = gst_caps_from_string(
      "audio/x-raw, format=S16LE, rate=44100, channels=1, layout=interleaved");
  gst_harness_push_event(t.h, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  // Buffers then fail as not negotiated rather than being misread.
  const int16_t s[4] = {1, 2, 3, 4};
  EXPECT_EQ(gst_harness_push(t.h, s16_buffer(s, 4, 0)), GST_FLOW_NOT_NEGOTIATED);
  EXPECT_EQ(gst_harness_buffers_received(t.h), 0u);
  std::vector<Message> ms = drain_bus(t.el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find("16000"), std::string::npos) << err;
  EXPECT_NE(err.find("44100"), std::string::npos) << err;
  free_messages(ms);
}

TEST_F(GstGpuFeatures, DownstreamCapsMismatchNamesBothSides) {
  Harnessed t({{"backend", "cpu"}, {"deltas", "1s_c_d_dd"}}, nullptr);
  gst_harness_set_sink_caps_str(t.h, "audio/x-gpuspeech-features, dim=(int)13");
  GstCaps* caps = gst_caps_from_string(kS16Caps);
  gst_harness_push_event(t.h, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  const int16_t s[4] = {1, 2, 3, 4};
  EXPECT_EQ(gst_harness_push(t.h, s16_buffer(s, 4, 0)), GST_FLOW_NOT_NEGOTIATED);
  std::vector<Message> ms = drain_bus(t.el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find("dim=(int)39"), std::string::npos) << err;  // ours
  EXPECT_NE(err.find("dim=(int)13"), std::string::npos) << err;  // theirs
  free_messages(ms);
}

TEST_F(GstGpuFeatures, NonFiniteSamplesBecomeZeroWithOneWarning) {
  std::vector<int16_t> audio = speech_s16();
  audio.resize(16000);
  std::vector<float> f(audio.size()), zeroed(audio.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = zeroed[i] = audio[i] / 32768.0f;
  const size_t bad[] = {5, 4000, 4001, 9000, 15999};
  const float values[] = {NAN, INFINITY, -INFINITY, NAN, 1e38f /* inf once scaled */};
  for (size_t k = 0; k < 5; ++k) {
    f[bad[k]] = values[k];
    zeroed[bad[k]] = 0.0f;
  }
  auto run = [](const std::vector<float>& x, std::vector<Message>* msgs) {
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}}, kF32Caps);
    for (size_t pos = 0; pos < x.size(); pos += 3000)
      EXPECT_EQ(gst_harness_push(t.h, f32_buffer(x.data() + pos, std::min<size_t>(3000, x.size() - pos),
                                                 GST_CLOCK_TIME_NONE)),
                GST_FLOW_OK);
    gst_harness_push_event(t.h, gst_event_new_eos());
    Output out;
    pull_all(t.h, 13, out);
    if (msgs) *msgs = drain_bus(t.el.bus);
    return out;
  };
  std::vector<Message> ms;
  const Output got = run(f, &ms);
  const Output ref = run(zeroed, nullptr);
  ASSERT_EQ(got.frames(), ref.frames());
  ASSERT_GT(got.frames(), 0);
  for (float v : got.data) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(0, std::memcmp(got.data.data(), ref.data.data(), ref.data.size() * sizeof(float)));
  EXPECT_EQ(count(ms, GST_MESSAGE_WARNING), 1) << "one warning per stream";
  EXPECT_NE(first_text(ms, GST_MESSAGE_WARNING).find("NaN"), std::string::npos);
  EXPECT_EQ(count(ms, GST_MESSAGE_ERROR), 0);
  bool counted = false;
  for (const Message& m : ms)
    if (m.name == "gpufeatures-utterance") {
      guint64 n = 0;
      EXPECT_TRUE(gst_structure_get_uint64(m.s, "nonfinite-samples", &n));
      EXPECT_EQ(n, 5u);
      counted = true;
    }
  EXPECT_TRUE(counted);
  free_messages(ms);
}

TEST_F(GstGpuFeatures, ZeroLengthStreamGivesNoBuffersAndForwardsEos) {
  Harnessed t({{"backend", "cpu"}, {"deltas", "1s_c_d_dd"}});
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
  EXPECT_EQ(gst_harness_buffers_received(t.h), 0u);
  bool saw_eos = false;
  while (GstEvent* e = gst_harness_try_pull_event(t.h)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_EOS) saw_eos = true;
    gst_event_unref(e);
  }
  EXPECT_TRUE(saw_eos);
  std::vector<Message> ms = drain_bus(t.el.bus);
  EXPECT_EQ(count(ms, GST_MESSAGE_ERROR), 0);
  EXPECT_EQ(count(ms, GST_MESSAGE_ELEMENT, "gpufeatures-utterance"), 0);
  free_messages(ms);
  // Zero-sized buffers are fine too.
  Harnessed t2({{"backend", "cpu"}});
  EXPECT_EQ(gst_harness_push(t2.h, gst_buffer_new()), GST_FLOW_OK);
  EXPECT_TRUE(gst_harness_push_event(t2.h, gst_event_new_eos()));
  EXPECT_EQ(gst_harness_buffers_received(t2.h), 0u);
}

// The mean live CMN is left at after `n` samples of one utterance, as the
// element's extractor reports it at the utterance's end.
std::vector<float> live_mean_after(const FeatureOptions& o, Backend& backend, const float* samples,
                                   size_t n) {
  StreamingFeatureExtractor ex(o, backend);
  FeatureMatrix frames;
  std::vector<float> mean;
  ex.accept(samples, n, frames);
  ex.flush(frames, &mean);
  return mean;
}

// Pushes `audio` as two utterances: samples [0, half) in 1000-sample
// buffers, then the rest as one DISCONT buffer stamped 10 s; then EOS, and
// pulls every 39-dim frame into `out`.
void push_split_at_discont(Harnessed& t, const std::vector<int16_t>& audio, size_t half, Output& out) {
  push_s16(t.h, audio, {1000}, 0, 0, half);
  GstBuffer* b = s16_buffer(audio.data() + half, audio.size() - half, 10 * GST_SECOND);
  GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
  ASSERT_EQ(gst_harness_push(t.h, b), GST_FLOW_OK);
  gst_harness_push_event(t.h, gst_event_new_eos());
  pull_all(t.h, 39, out);
}

// A DISCONT buffer ends the utterance; the next one's live CMN starts
// from the mean the first left (cmn-carry, the default: the channel goes
// on), or with cmn-carry=false from cmn-init, its frames then those of
// its audio alone.
TEST_F(GstGpuFeatures, DiscontEndsTheUtterance) {
  const std::vector<int16_t> audio = speech_s16();
  const size_t half = audio.size() / 2 + 123;
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> s = as_float(audio);
  const FeatureMatrix a = compute_features(live_sphinx_options(), *cpu, s.data(), half);
  // The mean the first utterance leaves.
  const std::vector<float> left = live_mean_after(live_sphinx_options(), *cpu, s.data(), half);
  ASSERT_EQ(left.size(), 13u);
  FeatureOptions carried = live_sphinx_options();
  carried.norm.cmn_init = left;
  for (const char* carry : {"true", "false"}) {
    const bool carries = std::string(carry) == "true";
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}, {"cmn-carry", carry}});
    Output out;
    ASSERT_NO_FATAL_FAILURE(push_split_at_discont(t, audio, half, out));

    const FeatureMatrix c = compute_features(carries ? carried : live_sphinx_options(), *cpu,
                                             s.data() + half, s.size() - half);
    ASSERT_EQ(out.frames(), a.rows + c.rows);
    std::vector<float> expected = a.data;
    expected.insert(expected.end(), c.data.begin(), c.data.end());
    EXPECT_LE(max_rel_diff(out.data, expected), 1e-5) << "cmn-carry=" << carry;
    // The two differ (else this test could not tell them apart).
    const FeatureMatrix other = compute_features(carries ? live_sphinx_options() : carried, *cpu,
                                                 s.data() + half, s.size() - half);
    EXPECT_GT(max_rel_diff(c.data, other.data), 1e-2);
    // The second utterance's frames are timed from the DISCONT buffer and
    // flagged DISCONT.
    bool found = false;
    for (size_t i = 0; i < out.pts.size(); ++i)
      if (out.offset[i] == static_cast<guint64>(a.rows)) {
        EXPECT_EQ(out.pts[i], 10 * GST_SECOND);
        EXPECT_TRUE(out.discont[i]);
        found = true;
      }
    EXPECT_TRUE(found) << "no buffer starts the second utterance";
    std::vector<Message> ms = drain_bus(t.el.bus);
    EXPECT_EQ(count(ms, GST_MESSAGE_ELEMENT, "gpufeatures-utterance"), 2);
    free_messages(ms);
  }
}

// With remove-noise, a DISCONT's next utterance starts noise subtraction
// from the estimates the first left (noise-carry, the default), or with
// noise-carry=false afresh: the element's frames are the extractor's with
// the same carry, and the two differ.
TEST_F(GstGpuFeatures, NoiseCarryGoesOnAcrossADiscont) {
  const std::vector<int16_t> audio = speech_s16();
  const size_t half = audio.size() / 2 + 77;
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> s = as_float(audio);
  FeatureOptions o = live_sphinx_options();
  o.noise.remove_noise = true;
  auto two_utterances = [&](bool carry) {
    StreamingFeatureExtractor ex(o, *cpu);
    ex.set_noise_carry(carry);
    FeatureMatrix m;
    ex.accept(s.data(), half, m);
    ex.flush(m);
    ex.accept(s.data() + half, s.size() - half, m);
    ex.flush(m);
    return m;
  };
  const FeatureMatrix carried = two_utterances(true), afresh = two_utterances(false);
  ASSERT_EQ(carried.rows, afresh.rows);
  EXPECT_GT(max_rel_diff(carried.data, afresh.data), 1e-2) << "the test tells them apart";
  for (const char* carry : {"true", "false"}) {
    const bool carries = std::string(carry) == "true";
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"},
                 {"remove-noise", "true"}, {"cmn-carry", "false"}, {"noise-carry", carry}});
    Output out;
    ASSERT_NO_FATAL_FAILURE(push_split_at_discont(t, audio, half, out));
    const FeatureMatrix& expected = carries ? carried : afresh;
    ASSERT_EQ(out.frames(), expected.rows) << "noise-carry=" << carry;
    EXPECT_LE(max_rel_diff(out.data, expected.data), 1e-5) << "noise-carry=" << carry;
  }
}

// With live CMN the utterance message carries the running mean as the
// utterance left it, in the form cmn-init takes, so that the next stream
// of the channel can start from it; without live CMN it has none.
TEST_F(GstGpuFeatures, ReportsTheLiveMeanForTheNextStream) {
  const std::vector<int16_t> audio = speech_s16();
  const std::vector<float> samples = as_float(audio);
  BackendPtr cpu = make_cpu_backend();
  std::string reported;
  {
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
    ASSERT_TRUE(t.h);
    push_s16(t.h, audio, random_sizes(41, 3000));
    gst_harness_push_event(t.h, gst_event_new_eos());
    std::vector<Message> ms = drain_bus(t.el.bus);
    for (const Message& m : ms)
      if (m.name == "gpufeatures-utterance") {
        const gchar* v = gst_structure_get_string(m.s, "cmn-mean");
        ASSERT_NE(v, nullptr) << m.text;
        reported = v;
      }
    free_messages(ms);
  }
  std::vector<float> got;
  for (const char* p = reported.c_str(); *p;) {
    char* end = nullptr;
    got.push_back(static_cast<float>(g_ascii_strtod(p, &end)));
    ASSERT_NE(end, p) << reported;
    p = *end == ',' ? end + 1 : end;
  }
  // The extractor's own mean after the same audio.
  const std::vector<float> mean =
      live_mean_after(live_sphinx_options(), *cpu, samples.data(), samples.size());
  ASSERT_EQ(got.size(), mean.size());
  ASSERT_EQ(mean.size(), 13u);
  for (size_t d = 0; d < mean.size(); ++d) EXPECT_NEAR(got[d], mean[d], 6e-4) << "dim " << d;
  // It has moved from where it started, the first frame (no cmn-init
  // here): the test would pass vacuously on the start.
  FeatureOptions raw = live_sphinx_options();
  raw.norm.cmn = NormOptions::Cmn::kNone;
  raw.delta.layout = DeltaOptions::Layout::kNone;
  const FeatureMatrix cepstra = compute_features(raw, *cpu, samples.data(), samples.size());
  ASSERT_GT(cepstra.rows, 0);
  EXPECT_GT(std::fabs(mean[0] - cepstra.row(0)[0]), 1.0f);

  // The next stream starts from it: its first frame is normalised with it.
  {
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}, {"cmn-init", reported.c_str()}});
    ASSERT_TRUE(t.h);
    push_s16(t.h, audio, {1600});
    gst_harness_push_event(t.h, gst_event_new_eos());
    Output out;
    pull_all(t.h, 39, out);
    FeatureOptions o = live_sphinx_options();
    o.norm.cmn_init = got;
    const FeatureMatrix want = compute_features(o, *cpu, samples.data(), samples.size());
    ASSERT_EQ(out.frames(), want.rows);
    EXPECT_LE(max_rel_diff(out.data, want.data), 1e-5);
  }
  // Without live CMN there is no mean to carry.
  {
    Harnessed t({{"backend", "cpu"}, {"cmn", "batch"}});
    ASSERT_TRUE(t.h);
    push_s16(t.h, audio, {4000});
    gst_harness_push_event(t.h, gst_event_new_eos());
    std::vector<Message> ms = drain_bus(t.el.bus);
    ASSERT_EQ(count(ms, GST_MESSAGE_ELEMENT, "gpufeatures-utterance"), 1);
    for (const Message& m : ms) {
      if (m.name == "gpufeatures-utterance") {
        EXPECT_FALSE(gst_structure_has_field(m.s, "cmn-mean"));
      }
    }
    free_messages(ms);
  }
}

// Every buffer carries live CMN's trace (GpuspeechCmnMeta) of its own
// frames: added to them it gives the features with no CMN, deltas and all
// (what gpudecoder's utterance-cmn builds on); none without live CMN.
TEST_F(GstGpuFeatures, CarriesLiveCmnsTraceOnItsBuffers) {
  const std::vector<int16_t> audio = speech_s16();
  const std::vector<float> samples = as_float(audio);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions raw_opts = live_sphinx_options();
  raw_opts.norm.cmn = NormOptions::Cmn::kNone;
  const FeatureMatrix raw = compute_features(raw_opts, *cpu, samples.data(), samples.size());
  {
    Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
    ASSERT_TRUE(t.h);
    push_s16(t.h, audio, random_sizes(43, 2500));
    gst_harness_push_event(t.h, gst_event_new_eos());
    std::vector<float> undone;
    int64_t buffers = 0;
    while (GstBuffer* b = gst_harness_try_pull(t.h)) {
      ++buffers;
      GstMapInfo map;
      ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
      const float* f = reinterpret_cast<const float*>(map.data);
      const size_t n = map.size / sizeof(float);
      const GpuspeechCmnMeta* m = gpuspeech_buffer_get_cmn_meta(b);
      ASSERT_NE(m, nullptr) << "buffer " << buffers;
      EXPECT_EQ(m->dim, 39u);
      ASSERT_EQ(static_cast<size_t>(m->frames) * m->dim, n);
      for (size_t i = 0; i < n; ++i) undone.push_back(f[i] + m->offsets[i]);
      gst_buffer_unmap(b, &map);
      gst_buffer_unref(b);
    }
    ASSERT_GT(buffers, 1);
    ASSERT_EQ(undone.size(), raw.data.size());
    EXPECT_LE(max_rel_diff(undone, raw.data), 1e-4);
  }
  {
    Harnessed t({{"backend", "cpu"}, {"cmn", "batch"}, {"deltas", "1s_c_d_dd"}});
    ASSERT_TRUE(t.h);
    push_s16(t.h, audio, {4000});
    gst_harness_push_event(t.h, gst_event_new_eos());
    int64_t buffers = 0;
    while (GstBuffer* b = gst_harness_try_pull(t.h)) {
      ++buffers;
      EXPECT_EQ(gpuspeech_buffer_get_cmn_meta(b), nullptr);
      gst_buffer_unref(b);
    }
    EXPECT_GT(buffers, 0);
  }
}

TEST_F(GstGpuFeatures, GapEndsTheUtteranceAndIsForwarded) {
  const std::vector<int16_t> audio = speech_s16();
  const size_t half = audio.size() / 2;
  Harnessed t({{"backend", "cpu"}});
  push_s16(t.h, audio, {2000}, 0, 0, half);
  const GstClockTime half_t = gst_util_uint64_scale_int(half, GST_SECOND, 16000);
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_gap(half_t, GST_SECOND)));
  Output first;
  pull_all(t.h, 13, first);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  EXPECT_EQ(first.frames(), FeatureExtractor(o, *cpu).num_frames(half));
  bool saw_gap = false;
  while (GstEvent* e = gst_harness_try_pull_event(t.h)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_GAP) {
      GstClockTime ts, dur;
      gst_event_parse_gap(e, &ts, &dur);
      EXPECT_EQ(ts, half_t);
      EXPECT_EQ(dur, GST_SECOND);
      saw_gap = true;
    }
    gst_event_unref(e);
  }
  EXPECT_TRUE(saw_gap);
  push_s16(t.h, audio, {2000}, half_t + GST_SECOND, half, SIZE_MAX);
  gst_harness_push_event(t.h, gst_event_new_eos());
  Output second;
  pull_all(t.h, 13, second);
  ASSERT_FALSE(second.pts.empty());
  EXPECT_EQ(second.pts[0], half_t + GST_SECOND);
  EXPECT_TRUE(second.discont[0]);  // a new utterance
  EXPECT_EQ(second.frames(), FeatureExtractor(o, *cpu).num_frames(audio.size() - half));
}

// The detector's gpuspeech-vad events (with live CMN from speech and noise
// removal, as for gpudecoder): speech, 2 s of quiet noise, speech. They
// say silence from the start, speech, silence beginning inside the pause
// (within what the detector's hangover allows), speech again; each before
// the frames that follow it, so a speech event comes before the buffer of
// the onset. Exactly: the same changes, at the same place among the
// buffers, as the extractor gives fed the same pieces (an event sent
// after its buffer, as a first version did, fails here).
TEST_F(GstGpuFeatures, SendsTheDetectorsSpeechAndSilence) {
  const std::vector<int16_t> one = speech_s16();
  std::mt19937 gen(31);
  std::normal_distribution<float> hiss(0.0f, 20.0f);
  std::vector<int16_t> audio;
  auto pause = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) audio.push_back(static_cast<int16_t>(std::lround(hiss(gen))));
  };
  pause(8000);
  const size_t first_end = 8000 + one.size();
  for (int16_t x : one) audio.push_back(static_cast<int16_t>(x + std::lround(hiss(gen))));
  pause(32000);
  const size_t second_start = audio.size();
  for (int16_t x : one) audio.push_back(static_cast<int16_t>(x + std::lround(hiss(gen))));
  pause(8000);

  struct Change {
    gboolean speech;
    GstClockTime silence_start;
    guint64 frames_before;  // feature frames pushed before the event
  };
  struct Log {
    std::vector<Change> changes;
    guint64 frames = 0;
  } log;
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}, {"remove-noise", "true"}});
  ASSERT_TRUE(t.h);
  // Buffers and events in the order they leave the element.
  GstPad* src = gst_element_get_static_pad(t.el.element, "src");
  gst_pad_add_probe(
      src, (GstPadProbeType)(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      [](GstPad*, GstPadProbeInfo* info, gpointer data) -> GstPadProbeReturn {
        Log* l = static_cast<Log*>(data);
        if (GstBuffer* b = gst_pad_probe_info_get_buffer(info)) {
          l->frames = GST_BUFFER_OFFSET_END(b);  // frames counted from the start
        } else if (GstEvent* e = gst_pad_probe_info_get_event(info)) {
          gboolean speech;
          GstClockTime start;
          if (gpuspeech_vad_event_parse(e, &speech, &start))
            l->changes.push_back({speech, start, l->frames});
        }
        return GST_PAD_PROBE_OK;
      },
      &log, nullptr);
  gst_object_unref(src);
  const std::vector<size_t> sizes = random_sizes(32, 4000);
  push_s16(t.h, audio, sizes);
  gst_harness_push_event(t.h, gst_event_new_eos());
  const std::vector<Change>& changes = log.changes;

  // Exactly where they fall: the element's extractor fed the same pieces
  // (the options it builds for these properties) says after each piece
  // where its detector's silence began; each change is an event before
  // that piece's frames, after all frames of the pieces before.
  {
    FeatureOptions o = live_sphinx_options();
    o.noise.remove_noise = true;
    BackendPtr cpu = make_cpu_backend();
    StreamingFeatureExtractor ex(o, *cpu);
    const std::vector<float> samples = as_float(audio);
    std::vector<Change> want;
    int64_t sent = -2;  // nothing yet
    FeatureMatrix frames;
    for (size_t pos = 0, k = 0; pos < samples.size(); ++k) {
      const size_t n = std::min(sizes[k % sizes.size()], samples.size() - pos);
      const guint64 before = static_cast<guint64>(ex.frames_emitted());
      ex.accept(samples.data() + pos, n, frames);
      pos += n;
      const int64_t start = ex.vad_silence_start();
      if (start == sent || (start < 0 && sent == -2)) continue;
      sent = start;
      want.push_back({start < 0, start < 0 ? GST_CLOCK_TIME_NONE : static_cast<GstClockTime>(start) * GST_SECOND / 100,
                      before});
    }
    ASSERT_EQ(changes.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(changes[i].speech, want[i].speech) << "change " << i;
      EXPECT_EQ(changes[i].silence_start, want[i].silence_start) << "change " << i;
      EXPECT_EQ(changes[i].frames_before, want[i].frames_before) << "change " << i;
    }
  }
  ASSERT_GE(changes.size(), 4u);
  EXPECT_FALSE(changes[0].speech);
  EXPECT_EQ(changes[0].silence_start, 0u) << "a stream starts in silence";
  EXPECT_TRUE(changes[1].speech);
  // The silence that parts the two readings: the last silence event
  // before the last speech event.
  size_t last_speech = changes.size() - 1;
  while (last_speech > 0 && !changes[last_speech].speech) --last_speech;
  ASSERT_GE(last_speech, 3u);
  const Change& pause_start = changes[last_speech - 1];
  ASSERT_FALSE(pause_start.speech);
  const GstClockTime end1 = gst_util_uint64_scale_int(first_end, GST_SECOND, 16000);
  const GstClockTime start2 = gst_util_uint64_scale_int(second_start, GST_SECOND, 16000);
  // The reading's own quiet last half second may count as silence.
  EXPECT_GT(pause_start.silence_start + GST_SECOND / 2, end1);
  EXPECT_LT(pause_start.silence_start, start2 - GST_SECOND);
  // The second reading's onset: the speech event comes before the frames
  // of its first 100 ms (the detector confirms speech after 10 frames),
  // and not long before the onset (a pushed piece of audio, up to 25
  // frames here, and the reading's own first 30 frames of quiet).
  const guint64 onset_frame = second_start / 160;
  EXPECT_LE(changes[last_speech].frames_before, onset_frame + 10);
  EXPECT_GT(changes[last_speech].frames_before + 60, onset_frame);
}

TEST_F(GstGpuFeatures, FlushDropsPendingAudio) {
  const std::vector<int16_t> audio = speech_s16();
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"}});
  push_s16(t.h, audio, {1500}, 0, 0, 20000);  // an abandoned start
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_flush_stop(TRUE)));
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_segment(&seg)));
  while (GstBuffer* b = gst_harness_try_pull(t.h)) gst_buffer_unref(b);
  push_s16(t.h, audio, {1500});
  gst_harness_push_event(t.h, gst_event_new_eos());
  Output out;
  pull_all(t.h, 39, out);
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> s = as_float(audio);
  const FeatureMatrix ref = compute_features(live_sphinx_options(), *cpu, s.data(), s.size());
  ASSERT_EQ(out.frames(), ref.rows);
  EXPECT_LE(max_rel_diff(out.data, ref.data), 1e-5);
  ASSERT_FALSE(out.offset.empty());
  EXPECT_EQ(out.offset[0], 0u);  // frame counting restarts after a flush
}

TEST_F(GstGpuFeatures, SegmentsAreForwardedInTime) {
  Harnessed t({{"backend", "cpu"}});
  while (GstEvent* e = gst_harness_try_pull_event(t.h)) gst_event_unref(e);
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_DEFAULT);  // in samples
  seg.start = 16000;
  seg.time = 16000;
  seg.position = 16000;
  seg.stop = 48000;
  ASSERT_TRUE(gst_harness_push_event(t.h, gst_event_new_segment(&seg)));
  bool saw = false;
  while (GstEvent* e = gst_harness_try_pull_event(t.h)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_SEGMENT) {
      const GstSegment* out;
      gst_event_parse_segment(e, &out);
      EXPECT_EQ(out->format, GST_FORMAT_TIME);
      EXPECT_EQ(out->start, GST_SECOND);
      EXPECT_EQ(out->stop, 3 * GST_SECOND);
      EXPECT_EQ(out->time, GST_SECOND);
      saw = true;
    }
    gst_event_unref(e);
  }
  EXPECT_TRUE(saw);
}

TEST_F(GstGpuFeatures, LatencyIsUpstreamPlusFrameAndLookAhead) {
  Harnessed t({{"backend", "cpu"}, {"deltas", "1s_c_d_dd"}});
  gst_harness_set_upstream_latency(t.h, 20 * GST_MSECOND);
  // 410-sample frame + 3 frames of delta look-ahead of 160 samples at 16 kHz.
  const GstClockTime ours = gst_util_uint64_scale_int_ceil(410 + 3 * 160, GST_SECOND, 16000);
  EXPECT_EQ(gst_harness_query_latency(t.h), 20 * GST_MSECOND + ours);
}

TEST_F(GstGpuFeatures, BackendMessageSaysWhichBackend) {
  Harnessed t({{"backend", "auto"}});
  std::vector<Message> ms = drain_bus(t.el.bus);
  ASSERT_EQ(count(ms, GST_MESSAGE_ELEMENT, "gpufeatures-backend"), 1);
  for (const Message& m : ms)
    if (m.name == "gpufeatures-backend") {
      const std::string backend = gst_structure_get_string(m.s, "backend");
      EXPECT_TRUE(backend == "cpu" || backend == "opencl" || backend == "cuda") << backend;
      EXPECT_NE(gst_structure_get_string(m.s, "device"), nullptr);
      const char* reason = gst_structure_get_string(m.s, "reason");
      ASSERT_NE(reason, nullptr);
      EXPECT_NE(std::string(reason).find("auto"), std::string::npos) << reason;
    }
  free_messages(ms);
}

// An explicitly requested backend without a device: an error on the bus and
// a failed state change, no crash and no fallback.
TEST_F(GstGpuFeatures, UnavailableBackendIsAnError) {
  for (const BackendInfo& info : list_backends()) {
    if (info.usable) continue;
    Element el({{"backend", info.name.c_str()}});
    ASSERT_NE(el.element, nullptr);
    EXPECT_EQ(gst_element_set_state(el.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    std::vector<Message> ms = drain_bus(el.bus);
    const std::string err = first_text(ms, GST_MESSAGE_ERROR);
    EXPECT_NE(err.find("backend '" + info.name + "' is not available"), std::string::npos) << err;
    EXPECT_EQ(count(ms, GST_MESSAGE_ELEMENT, "gpufeatures-backend"), 0);
    free_messages(ms);
    return;
  }
  GTEST_SKIP() << "every backend is usable on this machine";
}

TEST_F(GstGpuFeatures, MissingFeatParamsIsAnErrorNamingTheFile) {
  const std::string path = "/nonexistent/dir/feat.params";
  Element el({{"backend", "cpu"}, {"feat-params", path.c_str()}});
  EXPECT_EQ(gst_element_set_state(el.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<Message> ms = drain_bus(el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  free_messages(ms);
}

TEST_F(GstGpuFeatures, MalformedFeatParamsIsAnErrorNamingTheFile) {
  char path[] = "/tmp/gpufeatures-bad-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "-lowerf 130\n-nfilt twenty-five\n";
  ASSERT_EQ(write(fd, text, sizeof text - 1), static_cast<ssize_t>(sizeof text - 1));
  close(fd);
  Element el({{"backend", "cpu"}, {"feat-params", path}});
  EXPECT_EQ(gst_element_set_state(el.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<Message> ms = drain_bus(el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("nfilt"), std::string::npos) << err;
  free_messages(ms);
  unlink(path);
}

TEST_F(GstGpuFeatures, FeatParamsOfTheEnUsModelConfigureTheStream) {
  const std::string path = gpuspeech::testing::model_dir() + "/en-us/en-us/feat.params";
  if (!g_file_test(path.c_str(), G_FILE_TEST_EXISTS)) GTEST_SKIP() << path << " missing";
  Harnessed t({{"backend", "cpu"}, {"feat-params", path.c_str()}});
  GstPad* src = gst_element_get_static_pad(t.el.element, "src");
  GstCaps* caps = gst_pad_get_current_caps(src);
  gst_object_unref(src);
  ASSERT_NE(caps, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  int dim = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "dim", &dim));
  EXPECT_EQ(dim, 39);  // -feat 1s_c_d_dd
  EXPECT_STREQ(gst_structure_get_string(s, "layout"), "1s_c_d_dd");
  EXPECT_STREQ(gst_structure_get_string(s, "cmn"), "batch");  // -cmn batch
  const std::string config = gst_structure_get_string(s, "config");
  EXPECT_NE(config.find("filters=25"), std::string::npos) << config;
  EXPECT_NE(config.find("low-freq=130"), std::string::npos) << config;
  EXPECT_NE(config.find("high-freq=6800"), std::string::npos) << config;
  gst_caps_unref(caps);
}

// The tidigits model's front end: s2_4x (four streams, 51 floats) with
// unrounded filter edges; both show in the caps so a decoder can check them.
TEST_F(GstGpuFeatures, FeatParamsOfTheTidigitsModelGiveS2_4x) {
  const std::string path = gpuspeech::testing::audio_dir() + "/tidigits/hmm/feat.params";
  if (!g_file_test(path.c_str(), G_FILE_TEST_EXISTS)) GTEST_SKIP() << path << " missing";
  Harnessed t({{"backend", "cpu"}, {"feat-params", path.c_str()}});
  GstPad* src = gst_element_get_static_pad(t.el.element, "src");
  GstCaps* caps = gst_pad_get_current_caps(src);
  gst_object_unref(src);
  ASSERT_NE(caps, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  int dim = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "dim", &dim));
  EXPECT_EQ(dim, 51);
  EXPECT_STREQ(gst_structure_get_string(s, "layout"), "s2_4x");
  const std::string config = gst_structure_get_string(s, "config");
  EXPECT_NE(config.find("round-filters"), std::string::npos) << config;
  EXPECT_NE(config.find("filters=20"), std::string::npos) << config;
  gst_caps_unref(caps);
}

TEST_F(GstGpuFeatures, ExplicitPropertiesOverrideFeatParams) {
  const std::string path = gpuspeech::testing::model_dir() + "/en-us/en-us/feat.params";
  if (!g_file_test(path.c_str(), G_FILE_TEST_EXISTS)) GTEST_SKIP() << path << " missing";
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"feat-params", path.c_str()},
               {"deltas", "none"}, {"num-ceps", "20"}});
  GstPad* src = gst_element_get_static_pad(t.el.element, "src");
  GstCaps* caps = gst_pad_get_current_caps(src);
  gst_object_unref(src);
  ASSERT_NE(caps, nullptr);
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  int dim = 0;
  EXPECT_TRUE(gst_structure_get_int(s, "dim", &dim));
  EXPECT_EQ(dim, 20);
  EXPECT_STREQ(gst_structure_get_string(s, "layout"), "c");
  EXPECT_STREQ(gst_structure_get_string(s, "cmn"), "live");
  // The model's 13-value -cmninit, padded with zeros to 20.
  const std::string config = gst_structure_get_string(s, "config");
  EXPECT_NE(config.find("cmn-init=41,"), std::string::npos) << config;
  EXPECT_NE(config.find(",1.16999996,0,0,0,0,0,0,0;"), std::string::npos) << config;
  gst_caps_unref(caps);
}

TEST_F(GstGpuFeatures, CmnInitPropertyStartsLiveCmn) {
  std::vector<int16_t> audio = speech_s16();
  audio.resize(20000);
  Harnessed t({{"backend", "cpu"}, {"cmn", "live"}, {"cmn-init", " 41.0, -5.29 ,3"}});
  push_s16(t.h, audio, {3333});
  gst_harness_push_event(t.h, gst_event_new_eos());
  Output out;
  pull_all(t.h, 13, out);
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.norm.cmn_init = {41.0f, -5.29f, 3.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  BackendPtr cpu = make_cpu_backend();
  const std::vector<float> s = as_float(audio);
  const FeatureMatrix ref = compute_features(o, *cpu, s.data(), s.size());
  ASSERT_EQ(out.frames(), ref.rows);
  EXPECT_LE(max_rel_diff(out.data, ref.data), 1e-5);

  Element bad({{"backend", "cpu"}, {"cmn", "live"}, {"cmn-init", "41,x"}});
  EXPECT_EQ(gst_element_set_state(bad.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<Message> ms = drain_bus(bad.bus);
  EXPECT_NE(first_text(ms, GST_MESSAGE_ERROR).find("cmn-init"), std::string::npos)
      << first_text(ms, GST_MESSAGE_ERROR);
  free_messages(ms);
}

TEST_F(GstGpuFeatures, InvalidPropertyCombinationIsAnError) {
  Element el({{"backend", "cpu"}, {"cvn", "true"}});  // cvn without batch CMN
  EXPECT_EQ(gst_element_set_state(el.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<Message> ms = drain_bus(el.bus);
  EXPECT_NE(first_text(ms, GST_MESSAGE_ERROR).find("cvn"), std::string::npos)
      << first_text(ms, GST_MESSAGE_ERROR);
  free_messages(ms);
}

// Features of `audio` pushed in pieces of `sizes` through gpufeatures with
// `stage`=true (a boolean property: remove-noise, declip) on `backend`:
// 39-dim live-CMN MFCC with deltas.
Output run_with_stage(const char* stage, const std::string& backend,
                      const std::vector<int16_t>& audio, const std::vector<size_t>& sizes) {
  Harnessed t({{"backend", backend.c_str()}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"},
               {stage, "true"}});
  Output out;
  if (!t.h) {
    ADD_FAILURE() << "gpufeatures not found";
    return out;
  }
  push_s16(t.h, audio, sizes);
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
  pull_all(t.h, 39, out);
  return out;
}

// On every backend under test, `audio` through gpufeatures with `stage`=true
// gives the frames of `ref` (compute_features with that stage on), not
// those of the element without it, and the same frames for each cutting:
// bitwise on the CPU; other backends round differently with the block size
// even without the stage (pocl: 2.6e-4 between cuttings, 2.3e-4 from the
// CPU, measured), so they are held to the 1e-3 of the sphinx_fe references.
void expect_stage_exact_across_cuttings(const char* stage, const std::vector<int16_t>& audio,
                                        const FeatureMatrix& ref,
                                        const std::vector<std::vector<size_t>>& cuttings) {
  const Output plain = run_s16(audio, {audio.size()});
  for (const std::string& backend : testing::backends_under_test()) {
    SCOPED_TRACE(backend);
    const Output whole = run_with_stage(stage, backend, audio, {audio.size()});
    const double tolerance = backend == "cpu" ? 1e-5 : 1e-3;
    ASSERT_EQ(whole.frames(), ref.rows);
    EXPECT_LE(max_rel_diff(whole.data, ref.data), tolerance);
    ASSERT_EQ(plain.frames(), whole.frames());
    EXPECT_GT(max_rel_diff(whole.data, plain.data), 1e-2) << stage << " changed nothing";
    for (const auto& sizes : cuttings) {
      const Output pieces = run_with_stage(stage, backend, audio, sizes);
      ASSERT_EQ(pieces.frames(), whole.frames());
      if (backend == "cpu")
        EXPECT_EQ(0, std::memcmp(pieces.data.data(), whole.data.data(),
                                 whole.data.size() * sizeof(float)))
            << "features differ when the audio is cut differently";
      else
        EXPECT_LE(max_rel_diff(pieces.data, whole.data), tolerance);
    }
  }
}

// Restoring clipped peaks (declip=true) on LibriVox speech pushed 12 dB
// past full scale: the frames of the whole utterance however the audio is
// cut (bitwise on the CPU), on every backend, and not those of the clipped
// audio.
TEST_F(GstGpuFeatures, DeclipIsExactAcrossBufferSizesOnEveryBackend) {
  std::vector<int16_t> audio = speech_s16();
  int peak = 1;
  for (int16_t v : audio) peak = std::max(peak, std::abs(static_cast<int>(v)));
  int64_t clipped = 0;
  for (int16_t& v : audio) {
    const long x = std::lround(4.0 * 32767.0 * v / peak);
    v = static_cast<int16_t>(std::max(-32768L, std::min(32767L, x)));
    clipped += std::abs(x) >= 32767;
  }
  ASSERT_GT(clipped, 1000);
  const std::vector<float> samples = as_float(audio);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = live_sphinx_options();
  o.declip.enabled = true;
  const FeatureMatrix ref = compute_features(o, *cpu, samples.data(), samples.size());
  expect_stage_exact_across_cuttings(
      "declip", audio, ref, {random_sizes(6, 3), random_sizes(7, 900), std::vector<size_t>{1}});
}

// Noise subtraction tracks the stream frame by frame: any cutting of the
// audio gives the frames of the whole utterance, bitwise on the CPU, within
// 1e-3 on other backends. The property changes the features.
TEST_F(GstGpuFeatures, RemoveNoiseIsExactAcrossBufferSizesOnEveryBackend) {
  const std::vector<int16_t> audio = speech_s16();
  const std::vector<float> samples = as_float(audio);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = live_sphinx_options();
  o.noise.remove_noise = true;
  const FeatureMatrix ref = compute_features(o, *cpu, samples.data(), samples.size());
  expect_stage_exact_across_cuttings("remove-noise", audio, ref,
                                     {random_sizes(4, 3), random_sizes(5, 900),
                                      std::vector<size_t>{160}, std::vector<size_t>{1}});
}

// noise-start=first-sound: a stream of digital zeros, then steady noise,
// then speech, gives the frames of the extractor with
// NoiseOptions::start_at_first_sound however it is cut (bitwise on the
// CPU), on every backend, and not those of the default start.
TEST_F(GstGpuFeatures, NoiseStartFirstSoundEqualsTheCoreOption) {
  const std::vector<int16_t> speech = speech_s16();
  uint32_t state = 12345;
  auto noise = [&state] {  // uniform in [-512, 512): about 40 dB below full scale
    state = state * 1664525u + 1013904223u;
    return static_cast<int>(state >> 22) - 512;
  };
  std::vector<int16_t> audio(8000, 0);  // 0.5 s of digital silence
  for (int i = 0; i < 16000; ++i) audio.push_back(static_cast<int16_t>(noise()));  // 1 s of noise
  for (int16_t v : speech)
    audio.push_back(static_cast<int16_t>(std::max(-32768, std::min(32767, v + noise()))));
  const std::vector<float> samples = as_float(audio);
  BackendPtr cpu = make_cpu_backend();
  FeatureOptions o = live_sphinx_options();
  o.noise.remove_noise = true;
  const FeatureMatrix first_frame = compute_features(o, *cpu, samples.data(), samples.size());
  o.noise.start_at_first_sound = true;
  const FeatureMatrix first_sound = compute_features(o, *cpu, samples.data(), samples.size());
  ASSERT_EQ(first_frame.rows, first_sound.rows);
  ASSERT_GT(max_rel_diff(first_frame.data, first_sound.data), 1e-2) << "the test tells them apart";
  for (const std::string& backend : testing::backends_under_test()) {
    SCOPED_TRACE(backend);
    const double tolerance = backend == "cpu" ? 1e-5 : 1e-3;
    for (const char* start : {"first-frame", "first-sound"}) {
      const FeatureMatrix& ref = std::string(start) == "first-sound" ? first_sound : first_frame;
      for (const auto& sizes : {std::vector<size_t>{audio.size()}, random_sizes(8, 900)}) {
        Harnessed t({{"backend", backend.c_str()}, {"cmn", "live"}, {"deltas", "1s_c_d_dd"},
                     {"remove-noise", "true"}, {"noise-start", start}});
        ASSERT_NE(t.h, nullptr);
        push_s16(t.h, audio, sizes);
        EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
        Output out;
        pull_all(t.h, 39, out);
        ASSERT_EQ(out.frames(), ref.rows) << start;
        EXPECT_LE(max_rel_diff(out.data, ref.data), tolerance) << start;
      }
    }
  }
}

// remove-noise=true gives the cepstra of sphinx_fe -remove_noise yes
// -remove_silence no (tests/data/sphinx_fe/generate.sh), through the element.
TEST_F(GstGpuFeatures, RemoveNoiseMatchesSphinxFe) {
  const AudioData a = read_raw_s16le_file(testing::audio_dir() + "/goforward.raw", 16000);
  std::vector<int16_t> audio(a.samples.begin(), a.samples.end());
  const FeatureMatrix ref =
      read_sphinx_mfc(testing::data_dir() + "/sphinx_fe/goforward-noise-only.mfc", 13);
  const std::string params = testing::data_dir() + "/sphinx_fe/feat-noise-only.params";
  for (const char* remove : {"true", "false"}) {
    Harnessed t({{"backend", "cpu"}, {"feat-params", params.c_str()}, {"cmn", "none"},
                 {"deltas", "none"}, {"remove-noise", remove}});
    ASSERT_NE(t.h, nullptr);
    push_s16(t.h, audio, {1234});
    gst_harness_push_event(t.h, gst_event_new_eos());
    Output out;
    pull_all(t.h, 13, out);
    ASSERT_EQ(out.frames(), ref.rows);
    double worst = 0.0;
    for (size_t i = 0; i < ref.data.size(); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(out.data[i]) - ref.data[i]));
    if (std::string(remove) == "true")
      EXPECT_LE(worst, 1e-3) << "remove-noise=true differs from sphinx_fe -remove_noise yes";
    else
      EXPECT_GT(worst, 1e-2) << "remove-noise=false should differ from sphinx_fe -remove_noise yes";
  }
}

// A stream keeps every frame: remove-silence=true is refused when the
// element starts, with a message that says why and where it applies.
TEST_F(GstGpuFeatures, RemoveSilenceIsRefusedWithAMessage) {
  Element el({{"backend", "cpu"}, {"remove-silence", "true"}});
  gboolean v = FALSE;
  g_object_get(el.element, "remove-silence", &v, nullptr);
  EXPECT_TRUE(v);
  EXPECT_EQ(gst_element_set_state(el.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::vector<Message> ms = drain_bus(el.bus);
  const std::string err = first_text(ms, GST_MESSAGE_ERROR);
  EXPECT_NE(err.find("remove-silence=true is not supported"), std::string::npos) << err;
  EXPECT_NE(err.find("gpuspeech-transcribe"), std::string::npos) << err;
  free_messages(ms);
  // Off, the same element starts.
  Element ok({{"backend", "cpu"}, {"remove-silence", "false"}, {"remove-noise", "true"}});
  EXPECT_NE(gst_element_set_state(ok.element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
}

}  // namespace
}  // namespace gpuspeech
