// The gpufmllr element: caps refused for another dimension, frames passed
// bit for bit while the transform is the identity, saved transforms by
// speaker tag, estimation from injected alignment events (and late ones
// counted), the live chain gpufeatures ! gpufmllr ! gpudecoder adapting
// from the decoder's own alignments with a speaker change in the middle,
// bad initial transforms as errors on the bus, one error for caps refused
// however often they come, and alignments of another segment (by the
// segment seqnum) dropped.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/model/acoustic_model.h"
#include "gst/gpuspeech_cmn_meta.h"
#include "gst/gpuspeech_alignment_event.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
const auto* const kGstEnv = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

constexpr int kDim = 39;  // the en-us model's features
constexpr GstClockTime kFrame = 10 * GST_MSECOND;

std::string data(const std::string& rel) { return testing::audio_dir() + "/" + rel; }
std::string hmm() { return testing::model_dir() + "/en-us/en-us"; }
std::string dict() { return testing::model_dir() + "/en-us/cmudict-en-us.dict"; }
std::string features() {
  return "gpufeatures backend=cpu feat-params=" + hmm() + "/feat.params cmn=live";
}
std::string fmllr(const std::string& extra) {
  return "gpufmllr name=fm backend=cpu hmm=" + hmm() + " " + extra;
}
const char* kFeatureCaps =
    "audio/x-gpuspeech-features, format=F32LE, dim=39, frame-rate=100/1";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/test_gst_gpufmllr_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::vector<int16_t> read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<int16_t> s(bytes.size() / 2);
  std::memcpy(s.data(), bytes.data(), s.size() * 2);
  return s;
}

GstBuffer* s16_buffer(const int16_t* samples, size_t n, GstClockTime pts) {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, n * 2, nullptr);
  gst_buffer_fill(b, 0, samples, n * 2);
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = gst_util_uint64_scale_int(n, GST_SECOND, 16000);
  return b;
}

GstBuffer* float_buffer(const std::vector<float>& v, GstClockTime pts) {
  GstBuffer* b = gst_buffer_new_allocate(nullptr, v.size() * sizeof(float), nullptr);
  gst_buffer_fill(b, 0, v.data(), v.size() * sizeof(float));
  GST_BUFFER_PTS(b) = pts;
  GST_BUFFER_DURATION(b) = (v.size() / kDim) * kFrame;
  return b;
}

std::vector<float> floats_of(GstBuffer* b) {
  std::vector<float> v(gst_buffer_get_size(b) / sizeof(float));
  gst_buffer_extract(b, 0, v.data(), v.size() * sizeof(float));
  return v;
}

// The bus messages a test looks at.
struct Messages {
  struct Estimation {
    std::string speaker, supervision, outcome, message, saved;
    double frames = 0, before = 0, after = 0, log_det = 0;
    guint64 late = 0, stale = 0, estimation = 0;
    size_t at_buffer = 0;  // buffers through gpufmllr when it was posted
  };
  struct Speaker {
    std::string speaker, transform, file;
    size_t at_buffer = 0;
  };
  std::vector<Estimation> estimations;
  std::vector<Speaker> speakers;
  std::vector<std::string> errors, warnings;
  std::vector<std::string> finals;  // gpudecoder's final hypotheses

  void take(GstMessage* m, size_t buffers_so_far) {
    switch (GST_MESSAGE_TYPE(m)) {
      case GST_MESSAGE_ERROR:
      case GST_MESSAGE_WARNING: {
        GError* err = nullptr;
        gchar* dbg = nullptr;
        if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR)
          gst_message_parse_error(m, &err, &dbg);
        else
          gst_message_parse_warning(m, &err, &dbg);
        (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR ? errors : warnings)
            .push_back(std::string(err->message) + " | " + (dbg ? dbg : ""));
        g_clear_error(&err);
        g_free(dbg);
        break;
      }
      case GST_MESSAGE_ELEMENT: {
        const GstStructure* s = gst_message_get_structure(m);
        if (gst_structure_has_name(s, "gpufmllr")) {
          Estimation e;
          e.speaker = gst_structure_get_string(s, "speaker");
          e.supervision = gst_structure_get_string(s, "supervision");
          e.outcome = gst_structure_get_string(s, "outcome");
          e.message = gst_structure_get_string(s, "message");
          e.saved = gst_structure_get_string(s, "saved");
          EXPECT_TRUE(gst_structure_get_double(s, "frames", &e.frames));
          EXPECT_TRUE(gst_structure_get_double(s, "objective-before", &e.before));
          EXPECT_TRUE(gst_structure_get_double(s, "objective-after", &e.after));
          EXPECT_TRUE(gst_structure_get_double(s, "log-det", &e.log_det));
          EXPECT_TRUE(gst_structure_get_uint64(s, "late-frames", &e.late));
          EXPECT_TRUE(gst_structure_get_uint64(s, "stale-frames", &e.stale));
          EXPECT_TRUE(gst_structure_get_uint64(s, "estimation", &e.estimation));
          e.at_buffer = buffers_so_far;
          estimations.push_back(e);
        } else if (gst_structure_has_name(s, "gpufmllr-speaker")) {
          speakers.push_back({gst_structure_get_string(s, "speaker"),
                              gst_structure_get_string(s, "transform"),
                              gst_structure_get_string(s, "file"), buffers_so_far});
        } else if (gst_structure_has_name(s, "gpudecoder")) {
          gboolean fin = FALSE;
          gst_structure_get_boolean(s, "final", &fin);
          if (fin) finals.push_back(gst_structure_get_string(s, "hypothesis"));
        }
        break;
      }
      default:
        break;
    }
  }
  std::string error_text() const {
    std::string s;
    for (const std::string& e : errors) s += e + "\n";
    return s;
  }
};

// Frames in and out of gpufmllr, buffer by buffer (pad probes: in-place
// processing changes the buffer in between, so the input is copied).
struct FrameLog {
  std::vector<std::vector<float>> in, out;
  std::vector<GstClockTime> pts;
};

GstPadProbeReturn log_in(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* log = static_cast<FrameLog*>(user);
  GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
  log->in.push_back(floats_of(b));
  log->pts.push_back(GST_BUFFER_PTS(b));
  return GST_PAD_PROBE_OK;
}
GstPadProbeReturn log_out(GstPad*, GstPadProbeInfo* info, gpointer user) {
  static_cast<FrameLog*>(user)->out.push_back(floats_of(GST_PAD_PROBE_INFO_BUFFER(info)));
  return GST_PAD_PROBE_OK;
}

void watch_frames(GstElement* bin_or_element, FrameLog* log) {
  GstElement* fm = GST_IS_BIN(bin_or_element)
                       ? gst_bin_get_by_name(GST_BIN(bin_or_element), "fm")
                       : GST_ELEMENT(gst_object_ref(bin_or_element));
  ASSERT_NE(fm, nullptr);
  GstPad* sink = gst_element_get_static_pad(fm, "sink");
  GstPad* src = gst_element_get_static_pad(fm, "src");
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, log_in, log, nullptr);
  gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, log_out, log, nullptr);
  gst_object_unref(sink);
  gst_object_unref(src);
  gst_object_unref(fm);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A harness around `desc` with its own bus.
struct Harness {
  GstHarness* h = nullptr;
  GstBus* bus = nullptr;
  Messages messages;
  size_t buffers = 0;  // pushed so far
  explicit Harness(const std::string& desc) {
    h = gst_harness_new_parse(desc.c_str());
    bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
  }
  ~Harness() {
    drain();
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
  void drain() {
    while (GstMessage* m = gst_bus_pop(bus)) {
      messages.take(m, buffers);
      gst_message_unref(m);
    }
    while (GstEvent* e = gst_harness_try_pull_upstream_event(h)) gst_event_unref(e);
  }
  GstFlowReturn push(GstBuffer* b) {
    const GstFlowReturn r = gst_harness_push(h, b);
    ++buffers;
    drain();
    return r;
  }
  GstElement* fm() { return gst_bin_get_by_name(GST_BIN(h->element), "fm"); }
};

std::vector<float> random_frames(int frames, std::mt19937& rng) {
  std::normal_distribution<float> z(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(frames) * kDim);
  for (float& x : v) x = z(rng);
  return v;
}

TEST(GpuFmllr, RefusesFeaturesOfAnotherDimension) {
  Harness t(fmllr(""));
  gst_harness_set_src_caps_str(
      t.h, "audio/x-gpuspeech-features, format=F32LE, dim=13, frame-rate=100/1");
  std::vector<float> frames(13 * 10, 1.0f);
  EXPECT_NE(t.push(float_buffer(frames, 0)), GST_FLOW_OK);
  ASSERT_FALSE(t.messages.errors.empty());
  const std::string e = t.messages.errors[0];
  EXPECT_NE(e.find("dimension 13"), std::string::npos) << e;
  EXPECT_NE(e.find("39-dimensional"), std::string::npos) << e;
  EXPECT_NE(e.find(hmm()), std::string::npos) << e;
}

// Caps that are refused come again with every buffer upstream pushes
// (sticky events are retried): one error all the same, not one a buffer
// (gst-launch could go on prerolling behind a flood of them). Caps that fit
// are accepted after it.
TEST(GpuFmllr, RefusedCapsAreOneErrorHoweverManyBuffersFollow) {
  Harness t(fmllr(""));
  gst_harness_set_src_caps_str(
      t.h, "audio/x-gpuspeech-features, format=F32LE, dim=13, frame-rate=100/1");
  std::vector<float> frames(13 * 10, 1.0f);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(t.push(float_buffer(frames, i * 10 * kFrame)), GST_FLOW_NOT_NEGOTIATED);
  ASSERT_EQ(t.messages.errors.size(), 1u) << t.messages.error_text();
  EXPECT_NE(t.messages.errors[0].find("dimension 13"), std::string::npos);

  gst_harness_set_src_caps_str(t.h, kFeatureCaps);
  std::mt19937 rng(7);
  EXPECT_EQ(t.push(float_buffer(random_frames(10, rng), 50 * kFrame)), GST_FLOW_OK);
  EXPECT_EQ(t.messages.errors.size(), 1u) << t.messages.error_text();
}

// The same from the command line: gst-launch ends with gpufmllr's one
// error, rather than waiting behind a flood of them. The source is live:
// gst-launch quits its main loop from its bus sync handler, in the thread
// that posts the error, and an error posted before the loop starts running
// is lost (g_main_loop_run() marks the loop running again). A non-live
// pipeline that fails while prerolling then leaves gst-launch waiting
// forever (seen here under load in one run of three); a live one still
// reaches PLAYING and ends at its EOS (50 buffers, 3.2 s) with the error's
// exit status. The race is gst-launch's, not the element's.
TEST(GpuFmllr, GstLaunchWithRefusedCapsEndsWithOneError) {
  const char* launch = std::getenv("GPUSPEECH_GST_LAUNCH");
  if (!launch || !*launch) GTEST_SKIP() << "no gst-launch-1.0 (GPUSPEECH_GST_LAUNCH)";
  const std::string pipeline =
      "audiotestsrc is-live=true num-buffers=50 ! audio/x-raw,rate=16000,channels=1,format=S16LE ! "
      "gpufeatures backend=cpu feat-params=" + hmm() + "/feat.params deltas=none ! " +
      fmllr("") + " ! fakesink";
  // timeout(1) turns a hang into exit status 124.
  std::vector<std::string> args = {"timeout", "60", launch, "-q"};
  std::string tok;
  for (const char c : pipeline + " ") {
    if (c != ' ') {
      tok += c;
    } else if (!tok.empty()) {
      args.push_back(tok);
      tok.clear();
    }
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  gchar *out = nullptr, *err = nullptr;
  gint status = 0;
  GError* error = nullptr;
  ASSERT_TRUE(g_spawn_sync(nullptr, argv.data(), nullptr, G_SPAWN_SEARCH_PATH, nullptr, nullptr,
                           &out, &err, &status, &error))
      << error->message;
  const std::string text = std::string(out ? out : "") + (err ? err : "");
  g_free(out);
  g_free(err);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 1) << "124: gst-launch hung\n" << text;
  size_t errors = 0;
  for (size_t at = text.find("ERROR: from element"); at != std::string::npos;
       at = text.find("ERROR: from element", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << text;
  EXPECT_NE(text.find("GstGpuFmllr:fm: gpufmllr: the features have dimension 13"),
            std::string::npos)
      << text;
}

TEST(GpuFmllr, IdentityPassesFramesBitForBit) {
  Harness t(fmllr("supervision=decoder"));
  gst_harness_set_src_caps_str(t.h, kFeatureCaps);
  std::mt19937 rng(1);
  for (int b = 0; b < 4; ++b) {
    std::vector<float> in = random_frames(50, rng);
    in[3] = -0.0f;     // x * 1 + 0 would make it +0
    in[4] = 1e-42f;    // a denormal
    in[5] = 3.4e38f;
    ASSERT_EQ(t.push(float_buffer(in, b * 50 * kFrame)), GST_FLOW_OK);
    GstBuffer* out = gst_harness_pull(t.h);
    ASSERT_NE(out, nullptr);
    EXPECT_TRUE(same_bits(floats_of(out), in)) << "buffer " << b;
    EXPECT_EQ(GST_BUFFER_PTS(out), b * 50 * kFrame);
    gst_buffer_unref(out);
  }
  EXPECT_TRUE(t.messages.errors.empty()) << t.messages.error_text();
  EXPECT_TRUE(t.messages.estimations.empty());
}

// Live CMN's trace (GpuspeechCmnMeta) describes frames as gpufeatures made
// them; gpufmllr changes them, so it takes the trace off.
TEST(GpuFmllr, TakesLiveCmnsTraceOff) {
  Harness t(fmllr("supervision=decoder"));
  gst_harness_set_src_caps_str(t.h, kFeatureCaps);
  std::mt19937 rng(3);
  const std::vector<float> in = random_frames(20, rng);
  GstBuffer* b = float_buffer(in, 0);
  const std::vector<float> offsets(in.size(), 1.5f);
  const std::vector<guint8> learned(20, 1);
  ASSERT_NE(gpuspeech_buffer_add_cmn_meta(b, 20, kDim, offsets.data(), learned.data()), nullptr);
  ASSERT_NE(gpuspeech_buffer_get_cmn_meta(b), nullptr);
  ASSERT_EQ(t.push(b), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(t.h);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(gpuspeech_buffer_get_cmn_meta(out), nullptr);
  EXPECT_EQ(floats_of(out).size(), in.size());
  gst_buffer_unref(out);
}

TEST(GpuFmllr, SpeakerTagLoadsTheSavedTransform) {
  TempDir dir;
  std::mt19937 rng(2);
  FmllrTransform alice = FmllrTransform::identity(kDim);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (double& w : alice.w) w += u(rng);
  write_fmllr_transform(dir.path + "/alice.mat", alice);

  Harness t(fmllr("supervision=decoder transform-dir=" + dir.path));
  gst_harness_set_src_caps_str(t.h, kFeatureCaps);
  gst_harness_push_event(t.h, gst_event_new_tag(gst_tag_list_new(GST_TAG_PERFORMER, "alice",
                                                                 NULL)));
  const std::vector<float> in = random_frames(20, rng);
  ASSERT_EQ(t.push(float_buffer(in, 0)), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(t.h);
  ASSERT_NE(out, nullptr);
  const std::vector<float> got = floats_of(out);
  gst_buffer_unref(out);
  std::vector<float> want(in.size());
  apply_fmllr_reference(alice, in.data(), 20, want.data());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
  // (The harness starts the element before its bus is set: the message
  // for the anonymous speaker at start is not seen here.)
  ASSERT_EQ(t.messages.speakers.size(), 1u);
  EXPECT_EQ(t.messages.speakers[0].speaker, "alice");
  EXPECT_EQ(t.messages.speakers[0].transform, "saved");
  EXPECT_EQ(t.messages.speakers[0].file, dir.path + "/alice.mat");
  GstElement* fm = t.fm();
  gchar* speaker = nullptr;
  g_object_get(fm, "speaker", &speaker, NULL);
  EXPECT_STREQ(speaker, "alice");
  g_free(speaker);
  gst_object_unref(fm);
}

int model_senones() {
  static const int n = AcousticModel::load(hmm()).mixtures().num_senones;
  return n;
}

// An alignment event for `frames` frames from `pts`, each aligned to some
// senone (a fixed pattern: this test is about the mechanics, not accuracy);
// of the segment whose SEGMENT event had `seqnum` (default: unknown).
GstEvent* alignment_event(GstClockTime pts, int frames,
                          guint32 seqnum = GST_SEQNUM_INVALID) {
  std::vector<gint32> senones(static_cast<size_t>(frames));
  for (int i = 0; i < frames; ++i) senones[static_cast<size_t>(i)] = (i * 37) % model_senones();
  return gpuspeech_alignment_event_new(pts, kFrame, senones.data(), senones.size(),
                                       model_senones(), hmm().c_str(), 0, seqnum);
}

TEST(GpuFmllr, InjectedAlignmentsUpdateTheTransformAndLateOnesAreCounted) {
  const std::vector<int16_t> audio = read_raw(data("goforward.raw"));
  ASSERT_GT(audio.size(), 16000u * 2);
  TempDir dir;
  Harness t(features() + " ! " +
            fmllr("supervision=decoder update-interval=0.5 min-frames=50 update-type=diag "
                  "speaker=carol transform-dir=" + dir.path));
  FrameLog log;
  watch_frames(t.h->element, &log);
  gst_harness_set_src_caps_str(
      t.h, "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved");
  auto push_audio = [&](size_t from, size_t to) {
    for (size_t pos = from; pos < to; pos += 1600)
      ASSERT_EQ(t.push(s16_buffer(audio.data() + pos, std::min<size_t>(1600, to - pos),
                                  gst_util_uint64_scale_int(pos, GST_SECOND, 16000))),
                GST_FLOW_OK);
    while (GstBuffer* b = gst_harness_try_pull(t.h)) gst_buffer_unref(b);
  };
  // 1.5 s of features, then alignments for their first 0.6 s.
  push_audio(0, 24000);
  ASSERT_GE(log.in.size(), 2u);
  for (size_t i = 0; i < log.in.size(); ++i) EXPECT_TRUE(same_bits(log.in[i], log.out[i]));
  EXPECT_TRUE(t.messages.estimations.empty());
  gst_harness_push_upstream_event(t.h, alignment_event(0, 30));
  t.drain();
  EXPECT_TRUE(t.messages.estimations.empty()) << "0.3 s: less than the update interval";
  gst_harness_push_upstream_event(t.h, alignment_event(30 * kFrame, 30));
  t.drain();
  ASSERT_EQ(t.messages.estimations.size(), 1u) << t.messages.error_text();
  const Messages::Estimation& e = t.messages.estimations[0];
  EXPECT_EQ(e.speaker, "carol");
  EXPECT_EQ(e.supervision, "decoder");
  EXPECT_EQ(e.outcome, "updated") << e.message;
  EXPECT_NEAR(e.frames, 60.0, 1e-2);
  EXPECT_GT(e.after, e.before);
  EXPECT_TRUE(std::isfinite(e.log_det));
  EXPECT_EQ(e.saved, dir.path + "/carol.mat");
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/carol.mat"));

  // The frames that follow are transformed.
  const size_t before = log.in.size();
  push_audio(24000, 32000);
  ASSERT_GT(log.in.size(), before);
  for (size_t i = before; i < log.in.size(); ++i)
    EXPECT_FALSE(same_bits(log.in[i], log.out[i])) << "buffer " << i;

  // A flushing seek forgets the history: alignments for older frames are
  // late, counted in the next message.
  gst_harness_push_event(t.h, gst_event_new_flush_start());
  gst_harness_push_event(t.h, gst_event_new_flush_stop(TRUE));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  gst_harness_push_event(t.h, gst_event_new_segment(&segment));
  gst_harness_push_upstream_event(t.h, alignment_event(100 * kFrame, 30));
  push_audio(32000, audio.size());  // from 2 s on
  gst_harness_push_upstream_event(t.h, alignment_event(200 * kFrame, 60));
  t.drain();
  ASSERT_EQ(t.messages.estimations.size(), 2u);
  EXPECT_EQ(t.messages.estimations[1].late, 30u);
  EXPECT_NEAR(t.messages.estimations[1].frames, 120.0, 1e-2) << "the speaker's statistics grow";
  EXPECT_TRUE(t.messages.errors.empty()) << t.messages.error_text();

  // An event from another model is ignored with a warning.
  std::vector<gint32> one(10, 0);
  gst_harness_push_upstream_event(
      t.h, gpuspeech_alignment_event_new(200 * kFrame, kFrame, one.data(), 10, 99, "other", 0,
                                         GST_SEQNUM_INVALID));
  t.drain();
  ASSERT_EQ(t.messages.warnings.size(), 1u);
  EXPECT_NE(t.messages.warnings[0].find("99 senones"), std::string::npos)
      << t.messages.warnings[0];
}

// Buffer times start again in a new segment: a late alignment of the old
// segment must not be matched to the new segment's frames of the same
// times. The event's segment-seqnum tells them apart: an alignment of
// another segment is dropped (stale-frames), one of the segment of the
// frames kept is used, one without a seqnum (an older sender) is matched
// by time.
TEST(GpuFmllr, AlignmentsOfAnotherSegmentAreDropped) {
  Harness t(fmllr("supervision=decoder update-interval=0.5 min-frames=50 update-type=offset"));
  gst_harness_set_src_caps_str(t.h, kFeatureCaps);
  std::mt19937 rng(3);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  GstEvent* first = gst_event_new_segment(&segment);
  const guint32 first_seqnum = gst_event_get_seqnum(first);
  gst_harness_push_event(t.h, first);
  ASSERT_EQ(t.push(float_buffer(random_frames(100, rng), 0)), GST_FLOW_OK);
  // The first segment's alignment, while its frames are kept: used.
  gst_harness_push_upstream_event(t.h, alignment_event(0, 30, first_seqnum));
  t.drain();
  EXPECT_TRUE(t.messages.estimations.empty()) << "30 frames: less than the update interval";

  // A new segment; its frames have the same times as the first one's.
  GstEvent* second = gst_event_new_segment(&segment);
  const guint32 second_seqnum = gst_event_get_seqnum(second);
  ASSERT_NE(first_seqnum, second_seqnum);
  gst_harness_push_event(t.h, second);
  ASSERT_EQ(t.push(float_buffer(random_frames(100, rng), 0)), GST_FLOW_OK);
  while (GstBuffer* b = gst_harness_try_pull(t.h)) gst_buffer_unref(b);

  // A late alignment of the first segment: 40 frames that would make 70
  // with the 30 above, past the update interval, if they were matched.
  gst_harness_push_upstream_event(t.h, alignment_event(30 * kFrame, 40, first_seqnum));
  t.drain();
  EXPECT_TRUE(t.messages.estimations.empty()) << "the old segment's alignment was used";

  // The new segment's own alignment is used: 30 + 40 frames.
  gst_harness_push_upstream_event(t.h, alignment_event(30 * kFrame, 40, second_seqnum));
  t.drain();
  ASSERT_EQ(t.messages.estimations.size(), 1u) << t.messages.error_text();
  EXPECT_NEAR(t.messages.estimations[0].frames, 70.0, 1e-2);
  EXPECT_EQ(t.messages.estimations[0].stale, 40u);
  EXPECT_EQ(t.messages.estimations[0].late, 0u);

  // Without a seqnum: matched by time (the new segment's frames).
  gst_harness_push_upstream_event(t.h, alignment_event(0, 30));
  gst_harness_push_upstream_event(t.h, alignment_event(70 * kFrame, 30));
  t.drain();
  ASSERT_EQ(t.messages.estimations.size(), 2u);
  EXPECT_NEAR(t.messages.estimations[1].frames, 130.0, 1e-2);
  EXPECT_EQ(t.messages.estimations[1].stale, 40u);
  EXPECT_TRUE(t.messages.errors.empty()) << t.messages.error_text();
  EXPECT_TRUE(t.messages.warnings.empty());
}

// gpufeatures ! gpufmllr ! gpudecoder with the decoder's own alignments:
// goforward.raw three times over, the speaker changed before the third.
// Live CMN and noise subtraction restart at each utterance (cmn-carry=false,
// noise-carry=false), so that the third repetition's frames are the
// first's and the new speaker's first estimate can be compared with the
// first speaker's.
TEST(GpuFmllr, LiveDecoderSupervisionAdaptsAndASpeakerChangeResets) {
  const std::vector<int16_t> one = read_raw(data("goforward.raw"));
  Harness t(features() + " cmn-carry=false noise-carry=false ! " +
            fmllr("supervision=decoder update-interval=1 min-frames=100 update-type=diag") +
            " ! gpudecoder backend=cpu hmm=" + hmm() + " dict=" + dict() +
            " jsgf=" + data("goforward.gram") + " endpoint-silence=0");
  FrameLog log;
  watch_frames(t.h->element, &log);
  gst_harness_set_src_caps_str(
      t.h, "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved");
  size_t change_at_buffer = 0;
  for (size_t rep = 0; rep < 3; ++rep) {
    if (rep == 2) {
      GstElement* fm = t.fm();
      g_object_set(fm, "speaker", "second", NULL);
      gst_object_unref(fm);
      change_at_buffer = log.in.size();
    }
    for (size_t pos = 0; pos < one.size(); pos += 1600) {
      const size_t n = std::min<size_t>(1600, one.size() - pos);
      GstBuffer* b = s16_buffer(one.data() + pos, n,
                                gst_util_uint64_scale_int(rep * one.size() + pos, GST_SECOND, 16000));
      // One utterance per repetition.
      if (pos == 0 && rep > 0) GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
      ASSERT_EQ(t.push(b), GST_FLOW_OK);
      while (GstBuffer* o = gst_harness_try_pull(t.h)) gst_buffer_unref(o);
    }
  }
  gst_harness_push_event(t.h, gst_event_new_eos());
  t.drain();
  ASSERT_TRUE(t.messages.errors.empty()) << t.messages.error_text();
  for (const std::string& f : t.messages.finals) std::printf("final: %s\n", f.c_str());
  for (const auto& e : t.messages.estimations)
    std::printf("estimation %llu: speaker '%s' %s %s, %.0f frames, objective %.3f -> %.3f, "
                "ln|det A| %.3f, after buffer %zu\n",
                static_cast<unsigned long long>(e.estimation), e.speaker.c_str(),
                e.supervision.c_str(), e.outcome.c_str(), e.frames, e.before, e.after, e.log_det,
                e.at_buffer);

  // The first speaker's transform changed from the decoder's alignments.
  size_t first_update = 0;
  for (const auto& e : t.messages.estimations)
    if (e.speaker.empty() && e.outcome == "updated" && first_update == 0) {
      EXPECT_EQ(e.supervision, "decoder");
      EXPECT_GT(e.after, e.before);
      first_update = e.at_buffer;
    }
  ASSERT_GT(first_update, 0u) << "no update before the speaker change";
  ASSERT_LT(first_update, change_at_buffer);
  // Frames before the first update pass unchanged, frames after it differ.
  // (at_buffer counts audio buffers; gpufeatures makes one feature buffer
  // of each after the first few, so compare feature buffers by position
  // in the log instead: the log's first differing buffer comes after the
  // first identical run.)
  size_t first_changed = log.in.size();
  for (size_t i = 0; i < log.in.size(); ++i)
    if (!same_bits(log.in[i], log.out[i])) {
      first_changed = i;
      break;
    }
  ASSERT_LT(first_changed, change_at_buffer) << "the transform changed the output";
  for (size_t i = 0; i < first_changed; ++i) EXPECT_TRUE(same_bits(log.in[i], log.out[i]));

  // The speaker change: identity again until the new speaker's first update.
  bool saw_second = false;
  for (const auto& s : t.messages.speakers)
    if (s.speaker == "second") {
      saw_second = true;
      EXPECT_EQ(s.transform, "identity");
    }
  EXPECT_TRUE(saw_second);
  ASSERT_LT(change_at_buffer, log.in.size());
  EXPECT_TRUE(same_bits(log.in[change_at_buffer], log.out[change_at_buffer]))
      << "the first buffer of the new speaker is not transformed";
  // The third repetition is the first one's audio: restarted from the
  // identity with empty statistics, the new speaker's first estimate is
  // the first speaker's first estimate again.
  const Messages::Estimation* first = nullptr;
  const Messages::Estimation* second = nullptr;
  for (const auto& e : t.messages.estimations) {
    if (e.speaker.empty() && !first) first = &e;
    if (e.speaker == "second" && !second) second = &e;
  }
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->frames, first->frames);
  EXPECT_NEAR(second->before, first->before, 1e-9);
  EXPECT_NEAR(second->after, first->after, 1e-6);

  // Adaptation keeps the words right (all three repetitions).
  ASSERT_EQ(t.messages.finals.size(), 3u);
  for (const std::string& f : t.messages.finals) EXPECT_EQ(f, t.messages.finals[0]);
}

// Starting with a bad initial transform fails with an error naming the file.
std::string start_error(const std::string& extra) {
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(
      ("appsrc caps=\"" + std::string(kFeatureCaps) + "\" ! " + fmllr(extra) + " ! fakesink").c_str(),
      &err);
  EXPECT_NE(p, nullptr) << (err ? err->message : "");
  g_clear_error(&err);
  if (!p) return "";
  GstBus* bus = gst_element_get_bus(p);
  EXPECT_EQ(gst_element_set_state(p, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  std::string text;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* e = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_error(m, &e, &dbg);
    if (text.empty()) text = e->message;
    g_clear_error(&e);
    g_free(dbg);
    gst_message_unref(m);
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(p);
  return text;
}

TEST(GpuFmllr, BadInitialTransformIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string malformed = dir.path + "/malformed.mat";
  { std::ofstream(malformed) << "[\n 1 0 0\n 0 nan 0 ]\n"; }
  std::string e = start_error("initial-transform=" + malformed);
  EXPECT_NE(e.find(malformed + ":3"), std::string::npos) << e;
  EXPECT_NE(e.find("not a finite number"), std::string::npos) << e;

  const std::string wrong = dir.path + "/wrong.mat";
  write_fmllr_transform(wrong, FmllrTransform::identity(13));
  e = start_error("initial-transform=" + wrong);
  EXPECT_NE(e.find(wrong), std::string::npos) << e;
  EXPECT_NE(e.find("13 x 14"), std::string::npos) << e;
  EXPECT_NE(e.find("39"), std::string::npos) << e;

  e = start_error("initial-transform=" + dir.path + "/missing.mat");
  EXPECT_NE(e.find(dir.path + "/missing.mat"), std::string::npos) << e;
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;

  e = start_error("hmm=" + dir.path + "/no-model");
  EXPECT_NE(e.find(dir.path + "/no-model"), std::string::npos) << e;

  // A good one starts.
  const std::string good = dir.path + "/good.mat";
  write_fmllr_transform(good, FmllrTransform::identity(kDim));
  GstElement* p = gst_parse_launch(
      ("appsrc ! " + fmllr("initial-transform=" + good) + " ! fakesink").c_str(), nullptr);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(gst_element_set_state(p, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
}

}  // namespace
}  // namespace gpuspeech
