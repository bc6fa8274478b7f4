// The gpudecoder element: results against gpuspeech-transcribe, live
// partials and the stable prefix, silence endpointing, SRT / WebVTT read
// back by subparse, a Matroska subtitle track, caps and model errors, the
// latency query, a flushing seek, state cycles, four pipelines at once, and
// the gpuspeech-alignment upstream events (with their helpers).
// Small grammars (goforward.gram, cards.gram) keep it to seconds.
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <algorithm>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

#include "common/engine/adaptive_redecoder.h"
#include "common/engine/recognizer.h"
#include "common/fmllr/channel_priors.h"
#include "common/fmllr/fmllr_stats_io.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/model/mdef.h"
#include "common/features/wav_reader.h"
#include "gst/gpuspeech_alignment_event.h"
#include "gst/gpuspeech_vad_event.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};
const auto* const kGstEnv = ::testing::AddGlobalTestEnvironment(new GstEnvironment);

std::string data(const std::string& rel) { return testing::audio_dir() + "/" + rel; }
std::string hmm() { return testing::model_dir() + "/en-us/en-us"; }
std::string dict() { return testing::model_dir() + "/en-us/cmudict-en-us.dict"; }

// gpufeatures as the model wants it; cmn "live" or "batch".
std::string features(const char* cmn = "live", const std::string& extra = "") {
  return "gpufeatures backend=cpu feat-params=" + hmm() + "/feat.params cmn=" + cmn + " " + extra;
}
std::string decoder(const std::string& grammar, const std::string& extra = "") {
  return "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() + " jsgf=" + grammar +
         " " + extra;
}
std::string raw_source(const std::string& path) {
  return "filesrc location=" + path +
         " ! rawaudioparse format=pcm pcm-format=s16le sample-rate=16000 num-channels=1 "
         "! audioconvert";
}
std::string wav_source(const std::string& path) {
  return "filesrc location=" + path + " ! wavparse ! audioconvert ! audioresample";
}

struct Word {
  std::string text;
  guint64 start = 0, end = 0;
  double confidence = 0;
};

struct Result {
  std::string hypothesis;
  bool final = false;
  guint stable = 0;
  guint utterance = 0;
  guint64 frames = 0;
  guint64 timestamp = 0;
  guint64 trailing_silence = 0;
  double confidence = 0;
  std::string reason;
  std::vector<Word> words;
  int nbest = 0;
  int adapted = -1;  // the final's `adapted` field: -1 absent, else 0 or 1
  int utterance_cmn = -1;  // the final's `utterance-cmn` field, likewise
  bool has_channel = false;  // the final's `channel` field (adapt-channels)
  std::string channel;
};

Result parse_result(const GstStructure* s) {
  Result r;
  const gchar* h = gst_structure_get_string(s, "hypothesis");
  r.hypothesis = h ? h : "";
  gboolean fin = FALSE;
  gst_structure_get_boolean(s, "final", &fin);
  r.final = fin;
  gst_structure_get_uint(s, "stable-words", &r.stable);
  gst_structure_get_uint(s, "utterance", &r.utterance);
  gst_structure_get_uint64(s, "frames", &r.frames);
  gst_structure_get_uint64(s, "timestamp", &r.timestamp);
  EXPECT_TRUE(gst_structure_get_uint64(s, "trailing-silence", &r.trailing_silence));
  EXPECT_TRUE(gst_structure_get_double(s, "confidence", &r.confidence));
  const gchar* reason = gst_structure_get_string(s, "reason");
  r.reason = reason ? reason : "";
  const GValue* words = gst_structure_get_value(s, "words");
  EXPECT_TRUE(words && GST_VALUE_HOLDS_ARRAY(words));
  for (guint i = 0; words && i < gst_value_array_get_size(words); ++i) {
    const GstStructure* w = gst_value_get_structure(gst_value_array_get_value(words, i));
    Word x;
    x.text = gst_structure_get_string(w, "word");
    gst_structure_get_uint64(w, "start", &x.start);
    gst_structure_get_uint64(w, "end", &x.end);
    gst_structure_get_double(w, "confidence", &x.confidence);
    r.words.push_back(x);
  }
  const GValue* nb = gst_structure_get_value(s, "nbest");
  if (nb) r.nbest = static_cast<int>(gst_value_array_get_size(nb));
  gboolean adapted = FALSE;
  if (gst_structure_get_boolean(s, "adapted", &adapted)) r.adapted = adapted ? 1 : 0;
  gboolean own_cmn = FALSE;
  if (gst_structure_get_boolean(s, "utterance-cmn", &own_cmn)) r.utterance_cmn = own_cmn ? 1 : 0;
  if (const gchar* c = gst_structure_get_string(s, "channel")) {
    r.has_channel = true;
    r.channel = c;
  }
  return r;
}

struct PipelineRun {
  std::vector<Result> results;  // gpudecoder messages, in order
  std::vector<std::string> errors;
  bool eos = false;
  bool model_message = false;
  std::vector<Result> finals() const {
    std::vector<Result> f;
    for (const Result& r : results)
      if (r.final) f.push_back(r);
    return f;
  }
  std::string error_text() const {
    std::string s;
    for (const std::string& e : errors) s += e + "\n";
    return s;
  }
};

// Takes one message into `run`; returns true at EOS or an error.
bool take_message(GstMessage* m, PipelineRun& run) {
  bool done = false;
  switch (GST_MESSAGE_TYPE(m)) {
    case GST_MESSAGE_ERROR: {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      gst_message_parse_error(m, &err, &dbg);
      run.errors.push_back(std::string(err->message) + " | " + (dbg ? dbg : ""));
      g_clear_error(&err);
      g_free(dbg);
      done = true;
      break;
    }
    case GST_MESSAGE_EOS:
      run.eos = true;
      done = true;
      break;
    case GST_MESSAGE_ELEMENT: {
      const GstStructure* s = gst_message_get_structure(m);
      if (gst_structure_has_name(s, "gpudecoder")) run.results.push_back(parse_result(s));
      if (gst_structure_has_name(s, "gpudecoder-model")) run.model_message = true;
      break;
    }
    default:
      break;
  }
  return done;
}

// Runs a pipeline to EOS or an error (60 s at most).
PipelineRun run_pipeline(const std::string& desc) {
  PipelineRun run;
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(desc.c_str(), &err);
  if (!p) {
    ADD_FAILURE() << "cannot parse " << desc << ": " << (err ? err->message : "");
    g_clear_error(&err);
    return run;
  }
  g_clear_error(&err);
  GstBus* bus = gst_element_get_bus(p);
  gst_element_set_state(p, GST_STATE_PLAYING);
  while (GstMessage* m = gst_bus_timed_pop(bus, 60 * GST_SECOND)) {
    const bool done = take_message(m, run);
    gst_message_unref(m);
    if (done) break;
  }
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(p);
  return run;
}

// Finals with their reasons and times, for failure messages.
std::string described(const std::vector<Result>& finals) {
  std::string s;
  for (const Result& r : finals)
    s += "[" + r.hypothesis + "] (" + r.reason + ", utterance " + std::to_string(r.utterance) +
         ", from " + std::to_string(r.timestamp / 1000000) + " ms, " + std::to_string(r.frames) +
         " frames, trailing silence " + std::to_string(r.trailing_silence / 1000000) + " ms)\n";
  return s;
}

std::string joined(const std::vector<Result>& finals) {
  std::string s;
  for (const Result& r : finals) s += (s.empty() || r.hypothesis.empty() ? "" : " ") + r.hypothesis;
  return s;
}

// gpuspeech-transcribe's text for one file (the tool from this build).
std::string transcribe(const std::string& grammar, const std::string& audio) {
  const char* tool = std::getenv("GPUSPEECH_TRANSCRIBE");
  if (!tool) {
    ADD_FAILURE() << "GPUSPEECH_TRANSCRIBE is not set (meson sets it)";
    return "";
  }
  const std::string cmd = std::string(tool) + " --backend cpu --hmm " + hmm() + " --dict " +
                          dict() + " --jsgf " + grammar + " " + audio + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (f && fgets(buf, sizeof buf, f)) out += buf;
  EXPECT_EQ(f ? pclose(f) : -1, 0) << cmd;
  // "words (id)\n"
  const size_t paren = out.rfind(" (");
  return paren == std::string::npos ? out : out.substr(0, paren);
}

// The stable-prefix promise over a sequence of results of one utterance:
// once word i is reported stable, every later result has the same word i.
void expect_stable_prefix_kept(const std::vector<Result>& results) {
  std::vector<Word> stable;
  guint utterance = 0;
  for (const Result& r : results) {
    if (r.utterance != utterance) {
      stable.clear();
      utterance = r.utterance;
    }
    ASSERT_LE(r.stable, r.words.size());
    ASSERT_GE(r.words.size(), stable.size()) << "stable words vanished: " << r.hypothesis;
    for (size_t i = 0; i < stable.size(); ++i) {
      EXPECT_EQ(r.words[i].text, stable[i].text) << "stable word " << i << " changed";
      EXPECT_EQ(r.words[i].start, stable[i].start);
      EXPECT_EQ(r.words[i].end, stable[i].end);
    }
    if (r.final) {
      EXPECT_EQ(r.stable, r.words.size());
    }
    for (size_t i = stable.size(); i < r.stable; ++i) stable.push_back(r.words[i]);
  }
}

// ---------------------------------------------------------------------------
// Results

TEST(GpuDecoder, FinalTextEqualsTranscribeOnCards) {
  // Batch CMN: the same features as gpuspeech-transcribe computes.
  const std::string gram = data("cards/cards.gram");
  for (int i = 1; i <= 5; ++i) {
    const std::string wav = data("cards/00" + std::to_string(i) + ".wav");
    const PipelineRun run = run_pipeline(wav_source(wav) + " ! " + features("batch") + " ! " +
                                 decoder(gram, "endpoint-silence=0") + " ! fakesink");
    ASSERT_TRUE(run.eos) << run.error_text();
    EXPECT_TRUE(run.model_message);
    const auto finals = run.finals();
    ASSERT_EQ(finals.size(), 1u) << wav;
    EXPECT_EQ(finals[0].reason, "eos");
    EXPECT_EQ(finals[0].hypothesis, transcribe(gram, wav)) << wav;
    EXPECT_FALSE(finals[0].hypothesis.empty());
  }
}

// Every word's text, frames and confidence of every final result.
std::string final_words(const PipelineRun& run) {
  std::string s;
  for (const Result& r : run.finals())
    for (const Word& w : r.words)
      s += w.text + " " + std::to_string(w.start) + "-" + std::to_string(w.end) + " " +
           std::to_string(w.confidence) + "; ";
  return s;
}

// A gpufeatures with no front-end property set takes the decoder's model
// front end (its feat.params, live CMN, noise subtraction unless
// remove-noise=false, declipping unless declip=false) from the decoder's
// caps: the same words, times and confidences as the explicitly configured
// pipeline with remove-noise=true declip=true.
// The decoder also accepts features without noise subtraction (the front
// end's choice).
TEST(GpuDecoder, PlainGpufeaturesAdoptsTheModelFrontEnd) {
  const std::string gram = data("goforward.gram");
  const std::string src = raw_source(data("goforward.raw"));
  const PipelineRun plain = run_pipeline(src + " ! gpufeatures backend=cpu ! " + decoder(gram) +
                                         " ! fakesink");
  ASSERT_TRUE(plain.eos) << plain.error_text();
  const PipelineRun configured = run_pipeline(src + " ! " + features("live", "remove-noise=true declip=true") +
                                              " ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(configured.eos) << configured.error_text();
  EXPECT_EQ(joined(plain.finals()), joined(configured.finals()));
  EXPECT_EQ(joined(plain.finals()), "go forward ten meters");
  EXPECT_EQ(final_words(plain), final_words(configured));
  const PipelineRun no_noise = run_pipeline(src + " ! " + features("live", "remove-noise=false declip=true") +
                                            " ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(no_noise.eos) << no_noise.error_text();
  EXPECT_EQ(joined(no_noise.finals()), "go forward ten meters");
  // On this recording noise subtraction moves two word boundaries by a
  // frame (deterministic on the CPU): the adopted front end subtracts.
  EXPECT_NE(final_words(plain), final_words(no_noise))
      << "the adopted front end does not subtract noise";
  // remove-noise=false on a plain gpufeatures combines with adopting the
  // model's front end.
  const PipelineRun plain_no_noise = run_pipeline(
      src + " ! gpufeatures backend=cpu remove-noise=false ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(plain_no_noise.eos) << plain_no_noise.error_text();
  EXPECT_EQ(final_words(plain_no_noise), final_words(no_noise));
  // So does where the noise estimate starts (noise-start): the decoder
  // accepts either start, as it accepts either noise choice.
  const PipelineRun first_sound = run_pipeline(
      src + " ! gpufeatures backend=cpu noise-start=first-sound ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(first_sound.eos) << first_sound.error_text();
  EXPECT_EQ(joined(first_sound.finals()), "go forward ten meters");
  // So does live CMN's start (an application that keeps a channel's mean
  // from an earlier stream): the model's own -cmninit given as cmn-init
  // gives the plain chain's words; a start far from it still negotiates,
  // and moves them.
  const PipelineRun model_start = run_pipeline(
      src + " ! gpufeatures backend=cpu cmn-init=41.00,-5.29,-0.12,5.09,2.48,-4.07,-1.37,-1.78,"
            "-5.08,-2.05,-6.45,-1.42,1.17 ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(model_start.eos) << model_start.error_text();
  EXPECT_EQ(final_words(model_start), final_words(plain));
  const PipelineRun other_start = run_pipeline(
      src + " ! gpufeatures backend=cpu cmn-init=100,20,-20 ! " + decoder(gram) + " ! fakesink");
  ASSERT_TRUE(other_start.eos) << other_start.error_text();
  EXPECT_NE(final_words(other_start), final_words(plain)) << "cmn-init had no effect";
  // A front-end property set by the application is respected: 20 filters
  // do not match the model, and negotiation fails naming the difference.
  const PipelineRun changed = run_pipeline(src + " ! gpufeatures backend=cpu num-filters=20 ! " +
                                           decoder(gram) + " ! fakesink");
  EXPECT_FALSE(changed.eos);
  EXPECT_NE(changed.error_text().find("filters"), std::string::npos) << changed.error_text();
}

TEST(GpuDecoder, WordTimesAndNbest) {
  const std::string gram = data("goforward.gram");
  const PipelineRun run = run_pipeline(raw_source(data("goforward.raw")) + " ! " + features() + " ! " +
                               decoder(gram, "nbest=3") + " ! fakesink");
  ASSERT_TRUE(run.eos) << run.error_text();
  const auto finals = run.finals();
  ASSERT_EQ(finals.size(), 1u);
  const Result& f = finals[0];
  EXPECT_EQ(f.hypothesis, "go forward ten meters");
  ASSERT_EQ(f.words.size(), 4u);
  guint64 prev_end = 0;
  for (const Word& w : f.words) {
    EXPECT_GE(w.start, prev_end) << w.text;
    EXPECT_GT(w.end, w.start) << w.text;
    EXPECT_EQ(w.start % (10 * GST_MSECOND), 0u) << "word times are whole 10 ms frames";
    EXPECT_GT(w.confidence, 0.0);
    EXPECT_LE(w.confidence, 1.0);
    prev_end = w.end;
  }
  EXPECT_LE(f.words.back().end, 2790 * GST_MSECOND);  // the file is 2.786 s
  EXPECT_GE(f.nbest, 1);
  EXPECT_LE(f.nbest, 3);
}

// ---------------------------------------------------------------------------
// Live: a timestamped source under GstHarness

std::vector<int16_t> read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<int16_t> s(bytes.size() / 2);
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<int16_t>(static_cast<uint8_t>(bytes[2 * i]) |
                                (static_cast<uint8_t>(bytes[2 * i + 1]) << 8));
  return s;
}

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

// What passed gpudecoder's sink pad: the feature buffers going down and
// the gpuspeech-alignment events coming up, each as the pad saw it.
struct SinkPadLog {
  struct FeatureBuffer {
    GstClockTime pts = 0;
    gsize bytes = 0;
  };
  struct Alignment {
    GstClockTime timestamp = 0;
    guint64 frame_duration = 0;
    std::vector<gint32> senones;
    gint num_senones = 0;
    std::string model;
    guint utterance = 0;
    guint32 segment_seqnum = GST_SEQNUM_INVALID;
    bool before_eos = false;  // sent while audio was still being pushed
  };
  std::vector<FeatureBuffer> buffers;
  std::vector<Alignment> alignments;
  int malformed = 0;           // named gpuspeech-alignment, but parse rejects it
  bool eos_pushed = false;
  int reached_harness = 0;     // alignment events out of gpufeatures' sink pad
  gint dim = 0;                // floats per feature frame (the sink caps)
  std::vector<guint32> segment_seqnums;  // of the SEGMENT events that came down
};

GstPadProbeReturn log_sink_pad(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* log = static_cast<SinkPadLog*>(user);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
    log->buffers.push_back({GST_BUFFER_PTS(b), gst_buffer_get_size(b)});
    return GST_PAD_PROBE_OK;
  }
  GstEvent* e = GST_PAD_PROBE_INFO_EVENT(info);
  if (GST_EVENT_TYPE(e) == GST_EVENT_SEGMENT) {
    log->segment_seqnums.push_back(gst_event_get_seqnum(e));
    return GST_PAD_PROBE_OK;
  }
  const GstStructure* s = gst_event_get_structure(e);
  if (!s || !gst_structure_has_name(s, GPUSPEECH_ALIGNMENT_EVENT)) return GST_PAD_PROBE_OK;
  SinkPadLog::Alignment a;
  GBytes* bytes = nullptr;
  const gchar* model = nullptr;
  if (!gpuspeech_alignment_event_parse(e, &a.timestamp, &a.frame_duration, &bytes, &a.num_senones,
                                       &model, &a.utterance, &a.segment_seqnum)) {
    ++log->malformed;
    return GST_PAD_PROBE_OK;
  }
  gsize size = 0;
  const void* data = g_bytes_get_data(bytes, &size);
  a.senones.resize(size / sizeof(gint32));
  memcpy(a.senones.data(), data, a.senones.size() * sizeof(gint32));
  g_bytes_unref(bytes);
  a.model = model;
  a.before_eos = !log->eos_pushed;
  log->alignments.push_back(std::move(a));
  return GST_PAD_PROBE_OK;
}

// Counts the alignment events that came up to the harness' src pad.
void drain_upstream_events(GstHarness* h, SinkPadLog* log) {
  while (GstEvent* e = gst_harness_try_pull_upstream_event(h)) {
    if (log && gpuspeech_alignment_event_parse(e, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr))
      ++log->reached_harness;
    gst_event_unref(e);
  }
}

struct LiveRun {
  PipelineRun run;
  int partials_before_eos = 0;
  std::vector<std::string> texts;  // src pad buffers
};

// What a test adds to push_live(): a probe on gpudecoder's sink pad before
// any audio, and events pushed after the buffer that starts at sample pos.
struct LiveHooks {
  std::function<void(GstPad* dec_sink)> on_sink_pad;
  std::function<void(GstHarness* h, size_t pos)> after_buffer;
};

// Pushes `audio` in 100 ms buffers with timestamps through
// gpufeatures ! gpudecoder, reading the bus after every buffer. With
// `sink_log`, records what passes gpudecoder's sink pad.
LiveRun push_live(const std::vector<int16_t>& audio, const std::string& gram,
                  const std::string& dec_extra = "", SinkPadLog* sink_log = nullptr,
                  const LiveHooks& hooks = {}) {
  LiveRun out;
  GstHarness* h =
      gst_harness_new_parse((features() + " ! " + decoder(gram, dec_extra)).c_str());
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  GstElement* dec = gst_bin_get_by_name(GST_BIN(h->element), "dec");
  GstPad* dec_sink = gst_element_get_static_pad(dec, "sink");
  if (sink_log)
    gst_pad_add_probe(dec_sink,
                      (GstPadProbeType)(GST_PAD_PROBE_TYPE_BUFFER |
                                        GST_PAD_PROBE_TYPE_EVENT_UPSTREAM |
                                        GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
                      log_sink_pad, sink_log, nullptr);
  if (hooks.on_sink_pad) hooks.on_sink_pad(dec_sink);
  gst_harness_set_src_caps_str(
      h, "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved");
  const size_t chunk = 1600;
  for (size_t pos = 0; pos < audio.size(); pos += chunk) {
    const size_t n = std::min(chunk, audio.size() - pos);
    EXPECT_EQ(gst_harness_push(h, s16_buffer(audio.data() + pos, n,
                                             gst_util_uint64_scale_int(pos, GST_SECOND, 16000))),
              GST_FLOW_OK);
    if (hooks.after_buffer) hooks.after_buffer(h, pos);
    while (GstMessage* m = gst_bus_pop(bus)) {
      take_message(m, out.run);
      gst_message_unref(m);
    }
    drain_upstream_events(h, sink_log);
  }
  for (const Result& r : out.run.results)
    if (!r.final && !r.hypothesis.empty()) ++out.partials_before_eos;
  if (sink_log) sink_log->eos_pushed = true;
  gst_harness_push_event(h, gst_event_new_eos());
  while (GstMessage* m = gst_bus_pop(bus)) {
    take_message(m, out.run);
    gst_message_unref(m);
  }
  drain_upstream_events(h, sink_log);
  if (sink_log) {
    GstCaps* caps = gst_pad_get_current_caps(dec_sink);
    if (caps) gst_structure_get_int(gst_caps_get_structure(caps, 0), "dim", &sink_log->dim);
    if (caps) gst_caps_unref(caps);
  }
  gst_object_unref(dec_sink);
  gst_object_unref(dec);
  while (GstBuffer* b = gst_harness_try_pull(h)) {
    GstMapInfo map;
    gst_buffer_map(b, &map, GST_MAP_READ);
    out.texts.emplace_back(reinterpret_cast<const char*>(map.data), map.size);
    gst_buffer_unmap(b, &map);
    gst_buffer_unref(b);
  }
  gst_element_set_bus(h->element, nullptr);
  gst_object_unref(bus);
  gst_harness_teardown(h);
  return out;
}

TEST(GpuDecoder, LivePartialsStablePrefixAndFinal) {
  const std::string gram = data("goforward.gram");
  const std::string raw = data("goforward.raw");
  const LiveRun live = push_live(read_raw(raw), gram);
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  EXPECT_GE(live.partials_before_eos, 3) << "partial hypotheses must come while audio flows";
  expect_stable_prefix_kept(live.run.results);
  // Some partial marked words stable before the end.
  bool some_stable = false;
  for (const Result& r : live.run.results)
    if (!r.final && r.stable > 0) some_stable = true;
  EXPECT_TRUE(some_stable);
  const auto finals = live.run.finals();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].hypothesis, transcribe(gram, raw));
  // The src pad carried the same words as timed text.
  std::string text;
  for (const std::string& t : live.texts) text += (text.empty() ? "" : " ") + t;
  for (char& c : text)
    if (c == '\n') c = ' ';
  EXPECT_EQ(text, finals[0].hypothesis);
}

// gpuspeech-vad events from upstream's detector (gpufeatures sends them;
// here its own are held back and one is sent by hand, marked "injected"):
// a detector that calls the whole stream silent leaves no words (each
// stretch dropped), whatever the search hears; vad-endpointing=false
// ignores it.
PipelineRun push_with_silent_detector(const std::string& dec_extra) {
  LiveHooks hooks;
  hooks.on_sink_pad = [](GstPad* dec_sink) {
    gst_pad_add_probe(
        dec_sink, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        [](GstPad*, GstPadProbeInfo* info, gpointer) -> GstPadProbeReturn {
          GstEvent* e = gst_pad_probe_info_get_event(info);
          const GstStructure* st = gst_event_get_structure(e);
          if (st && gst_structure_has_name(st, GPUSPEECH_VAD_EVENT) &&
              !gst_structure_has_field(st, "injected"))
            return GST_PAD_PROBE_DROP;
          return GST_PAD_PROBE_OK;
        },
        nullptr, nullptr);
  };
  hooks.after_buffer = [](GstHarness* h, size_t pos) {
    if (pos != 0) return;
    GstEvent* silent = gpuspeech_vad_event_new(FALSE, 0);
    gst_structure_set(gst_event_writable_structure(silent), "injected", G_TYPE_BOOLEAN, TRUE,
                      nullptr);
    EXPECT_TRUE(gst_harness_push_event(h, silent));
  };
  return push_live(read_raw(data("goforward.raw")), data("goforward.gram"), dec_extra, nullptr,
                   hooks)
      .run;
}

TEST(GpuDecoder, TheDetectorsSilenceDropsWhatTheSearchHears) {
  const PipelineRun silent = push_with_silent_detector("");
  EXPECT_TRUE(silent.errors.empty()) << silent.error_text();
  for (const Result& r : silent.finals()) EXPECT_EQ(r.hypothesis, "") << "words in the detector's silence";
  const PipelineRun ignored = push_with_silent_detector("vad-endpointing=false");
  EXPECT_TRUE(ignored.errors.empty()) << ignored.error_text();
  ASSERT_EQ(ignored.finals().size(), 1u) << joined(ignored.finals());
  EXPECT_EQ(ignored.finals()[0].hypothesis, "go forward ten meters");
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gboolean on = FALSE;
  g_object_get(dec, "vad-endpointing", &on, nullptr);
  EXPECT_TRUE(on) << "vad-endpointing is on by default";
  gst_object_unref(dec);
}

TEST(GpuDecoder, SilenceEndpointingSplitsUtterances) {
  const std::string gram = data("goforward.gram");
  const std::vector<int16_t> one = read_raw(data("goforward.raw"));
  std::vector<int16_t> two = one;
  two.insert(two.end(), 32000, 0);  // 2 s of silence
  two.insert(two.end(), one.begin(), one.end());
  const LiveRun live = push_live(two, gram, "endpoint-silence=700");
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  const auto finals = live.run.finals();
  ASSERT_EQ(finals.size(), 2u) << joined(finals);
  EXPECT_EQ(finals[0].reason, "silence");
  EXPECT_EQ(finals[1].reason, "eos");
  EXPECT_EQ(finals[0].utterance, 0u);
  EXPECT_EQ(finals[1].utterance, 1u);
  EXPECT_EQ(finals[0].hypothesis, "go forward ten meters");
  EXPECT_EQ(finals[1].hypothesis, "go forward ten meters");
  // Word times are stream times: the second copy's words lie one copy plus
  // the silence later (within two frames).
  ASSERT_EQ(finals[0].words.size(), finals[1].words.size());
  const gint64 offset = gst_util_uint64_scale_int(one.size() + 32000, GST_SECOND, 16000);
  for (size_t i = 0; i < finals[0].words.size(); ++i)
    EXPECT_NEAR(static_cast<double>(finals[1].words[i].start - finals[0].words[i].start),
                static_cast<double>(offset), 20e6)
        << finals[1].words[i].text;
  expect_stable_prefix_kept(live.run.results);
  // The first utterance ended because its path had been in silence for
  // endpoint-silence (checked every 300 ms: less than 300 ms more).
  EXPECT_GE(finals[0].trailing_silence, 700 * GST_MSECOND);
  EXPECT_LT(finals[0].trailing_silence, 1000 * GST_MSECOND);
  // Partials say 0 while the path is inside a word: at every partial whose
  // end lies well inside one of the final words, the trailing silence is 0.
  int inside = 0;
  for (const Result& r : live.run.results) {
    if (r.final || r.utterance != 0) continue;
    const guint64 end = r.frames * 10 * GST_MSECOND;  // utterance 0 starts at 0
    for (const Word& w : finals[0].words)
      if (end >= w.start + 50 * GST_MSECOND && end + 50 * GST_MSECOND <= w.end) {
        ++inside;
        EXPECT_EQ(r.trailing_silence, 0u) << "inside '" << w.text << "' at " << end;
      }
  }
  EXPECT_GE(inside, 2);
  // Without endpointing, one utterance.
  const LiveRun whole = push_live(two, gram, "endpoint-silence=0");
  EXPECT_EQ(whole.run.finals().size(), 1u);
}

// ---------------------------------------------------------------------------
// Alignment events (gst/gpuspeech_alignment_event.h)

// The times of every frame of the feature buffers that reached gpudecoder.
std::set<GstClockTime> feature_frame_times(const SinkPadLog& log, guint64 frame_duration) {
  std::set<GstClockTime> times;
  const gsize frame_bytes = sizeof(float) * static_cast<gsize>(log.dim);
  for (const SinkPadLog::FeatureBuffer& b : log.buffers) {
    EXPECT_TRUE(GST_CLOCK_TIME_IS_VALID(b.pts));
    for (gsize j = 0; frame_bytes > 0 && j < b.bytes / frame_bytes; ++j)
      times.insert(b.pts + j * frame_duration);
  }
  return times;
}

// Checks the alignment events of a live run against its final results:
// fields valid for this model, events in order and not overlapping, every
// frame a frame of a feature buffer that was pushed, every frame of every
// final word aligned, in its utterance.
void expect_alignments_of(const SinkPadLog& log, const std::vector<Result>& finals) {
  EXPECT_EQ(log.malformed, 0);
  ASSERT_FALSE(log.alignments.empty());
  EXPECT_EQ(log.reached_harness, static_cast<int>(log.alignments.size()))
      << "the events must pass gpufeatures on their way upstream";
  const int num_senones = ModelDefinition::load(hmm() + "/mdef").num_senones();
  ASSERT_GT(log.dim, 0);
  const guint64 frame = 10 * GST_MSECOND;  // 160 samples at 16 kHz
  const std::set<GstClockTime> pushed = feature_frame_times(log, frame);
  ASSERT_FALSE(pushed.empty());
  // Frame time -> (utterance, senone), over all events.
  std::map<GstClockTime, std::pair<guint, gint32>> aligned;
  GstClockTime prev_end = 0;
  guint prev_utterance = 0;
  // One segment (the harness'): every event names it.
  ASSERT_EQ(log.segment_seqnums.size(), 1u);
  for (size_t k = 0; k < log.alignments.size(); ++k) {
    const SinkPadLog::Alignment& a = log.alignments[k];
    SCOPED_TRACE("event " + std::to_string(k) + " at " + std::to_string(a.timestamp));
    EXPECT_EQ(a.segment_seqnum, log.segment_seqnums[0]);
    EXPECT_EQ(a.num_senones, num_senones);
    EXPECT_EQ(a.model, hmm());
    EXPECT_EQ(a.frame_duration, frame);
    ASSERT_FALSE(a.senones.empty());
    EXPECT_GE(a.utterance, prev_utterance) << "utterances in order";
    EXPECT_GE(a.timestamp, prev_end) << "events in order, not overlapping";
    prev_utterance = a.utterance;
    prev_end = a.timestamp + a.senones.size() * a.frame_duration;
    for (size_t i = 0; i < a.senones.size(); ++i) {
      const GstClockTime t = a.timestamp + i * a.frame_duration;
      EXPECT_TRUE(pushed.count(t)) << "frame " << i << " at " << t
                                   << " is not a frame of a buffer pushed";
      EXPECT_GE(a.senones[i], -1);
      EXPECT_LT(a.senones[i], num_senones);
      aligned[t] = {a.utterance, a.senones[i]};
    }
  }
  // Every frame of every final word is aligned, in that utterance, to a
  // senone (the decoder found a path through these words' HMMs, so the
  // aligner can fit them all). The harness' segment starts at 0: the
  // messages' stream times equal buffer times.
  for (const Result& f : finals) {
    std::set<gint32> distinct;
    for (const Word& w : f.words) {
      for (GstClockTime t = w.start; t < w.end; t += frame) {
        const auto it = aligned.find(t);
        ASSERT_TRUE(it != aligned.end())
            << "'" << w.text << "' of utterance " << f.utterance << ": frame at " << t
            << " not in any alignment event";
        EXPECT_EQ(it->second.first, f.utterance);
        EXPECT_GE(it->second.second, 0) << "'" << w.text << "' frame at " << t << " not aligned";
        distinct.insert(it->second.second);
      }
    }
    // Four words, about 17 phones of 3 states each: an alignment worth the
    // name visits many senones (a constant or empty one would not).
    EXPECT_GE(distinct.size(), 20u) << "utterance " << f.utterance;
  }
  // And no more: an event spans from a word's first frame to a word's last
  // (Recognizer::align's span), frames between words are -1, so a time
  // offset of even one frame would show.
  for (const SinkPadLog::Alignment& a : log.alignments) {
    const Result* f = nullptr;
    for (const Result& r : finals)
      if (r.utterance == a.utterance) f = &r;
    ASSERT_TRUE(f) << "an event of utterance " << a.utterance << ", which has no result";
    const GstClockTime end = a.timestamp + a.senones.size() * a.frame_duration;
    bool starts_a_word = false, ends_a_word = false;
    for (const Word& w : f->words) {
      starts_a_word |= w.start == a.timestamp;
      ends_a_word |= w.end == end;
    }
    EXPECT_TRUE(starts_a_word) << "event at " << a.timestamp << " does not start at a word";
    EXPECT_TRUE(ends_a_word) << "event ending at " << end << " does not end at a word's end";
    for (size_t i = 0; i < a.senones.size(); ++i) {
      const GstClockTime t = a.timestamp + i * a.frame_duration;
      bool in_word = false;
      for (const Word& w : f->words) in_word |= t >= w.start && t < w.end;
      if (!in_word) {
        EXPECT_EQ(a.senones[i], -1) << "frame at " << t << " between words";
      }
    }
  }
}

// Two utterances (silence endpointing between two copies of goforward), fed
// live: the frames of the final words come back up as alignment events,
// the first ones while audio still flows, in order, without overlap, on the
// feature buffers' clock, covering every final word with valid senones.
TEST(GpuDecoder, SendsAlignmentsOfFinalWordsUpstream) {
  const std::string gram = data("goforward.gram");
  const std::vector<int16_t> one = read_raw(data("goforward.raw"));
  std::vector<int16_t> two = one;
  two.insert(two.end(), 32000, 0);  // 2 s of silence
  two.insert(two.end(), one.begin(), one.end());
  SinkPadLog log;
  const LiveRun live = push_live(two, gram, "endpoint-silence=700", &log);
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  const auto finals = live.run.finals();
  ASSERT_EQ(finals.size(), 2u) << joined(finals);
  EXPECT_EQ(finals[1].hypothesis, "go forward ten meters");
  // The second utterance ends only at EOS: an event of it before EOS came
  // from a partial result's stable words.
  int partial_events = 0;
  for (const SinkPadLog::Alignment& a : log.alignments)
    if (a.utterance == 1 && a.before_eos) ++partial_events;
  EXPECT_GE(partial_events, 1) << "stable words must be aligned before the utterance ends";
  expect_alignments_of(log, finals);
}

// Above, the events came at partials, a word each. Cut right after the last
// word, the audio ends before "meters" is stable: its frames are aligned
// when EOS ends the utterance.
TEST(GpuDecoder, SendsTheRestOfTheAlignmentAtTheEnd) {
  const std::string gram = data("goforward.gram");
  std::vector<int16_t> audio = read_raw(data("goforward.raw"));
  audio.resize(static_cast<size_t>(2.2 * 16000));  // "meters" ends at about 2.13 s
  SinkPadLog log;
  const LiveRun live = push_live(audio, gram, "endpoint-silence=0", &log);
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  const auto finals = live.run.finals();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].hypothesis, "go forward ten meters");
  int at_end = 0;
  for (const SinkPadLog::Alignment& a : log.alignments)
    if (!a.before_eos) ++at_end;
  EXPECT_GE(at_end, 1) << "the words not yet stable are aligned at EOS";
  expect_alignments_of(log, finals);
}

// A new segment restarts the buffer times: the events name the segment of
// their frames by the seqnum of its SEGMENT event, also those of the
// utterance that the new SEGMENT ends (sent while handling it: the first
// copy is cut right after "meters", which is not stable before the end).
TEST(GpuDecoder, AlignmentsNameTheSegmentOfTheirFrames) {
  std::vector<int16_t> one = read_raw(data("goforward.raw"));
  one.resize(static_cast<size_t>(2.2 * 16000));  // "meters" ends at about 2.13 s
  GstHarness* h = gst_harness_new_parse(
      (features() + " ! " + decoder(data("goforward.gram"), "endpoint-silence=0")).c_str());
  GstElement* dec = gst_bin_get_by_name(GST_BIN(h->element), "dec");
  GstPad* dec_sink = gst_element_get_static_pad(dec, "sink");
  SinkPadLog log;
  gst_pad_add_probe(dec_sink,
                    (GstPadProbeType)(GST_PAD_PROBE_TYPE_EVENT_UPSTREAM |
                                      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
                    log_sink_pad, &log, nullptr);
  gst_harness_set_src_caps_str(
      h, "audio/x-raw, format=S16LE, rate=16000, channels=1, layout=interleaved");
  size_t events_of_first = 0;
  for (int rep = 0; rep < 2; ++rep) {
    if (rep == 1) {
      events_of_first = log.alignments.size();
      GstSegment segment;
      gst_segment_init(&segment, GST_FORMAT_TIME);
      gst_harness_push_event(h, gst_event_new_segment(&segment));
      // The events of the first utterance's last words came while the
      // SEGMENT was handled.
      EXPECT_GT(log.alignments.size(), events_of_first);
      events_of_first = log.alignments.size();
    }
    for (size_t pos = 0; pos < one.size(); pos += 1600)
      ASSERT_EQ(gst_harness_push(h, s16_buffer(one.data() + pos,
                                               std::min<size_t>(1600, one.size() - pos),
                                               gst_util_uint64_scale_int(pos, GST_SECOND, 16000))),
                GST_FLOW_OK);
  }
  gst_harness_push_event(h, gst_event_new_eos());
  ASSERT_EQ(log.segment_seqnums.size(), 2u);
  EXPECT_NE(log.segment_seqnums[0], log.segment_seqnums[1]);
  ASSERT_GT(events_of_first, 0u);
  ASSERT_GT(log.alignments.size(), events_of_first);
  EXPECT_EQ(log.malformed, 0);
  for (size_t k = 0; k < log.alignments.size(); ++k) {
    const SinkPadLog::Alignment& a = log.alignments[k];
    EXPECT_EQ(a.utterance, k < events_of_first ? 0u : 1u) << "event " << k;
    EXPECT_EQ(a.segment_seqnum, log.segment_seqnums[k < events_of_first ? 0 : 1]) << "event " << k;
  }
  gst_object_unref(dec_sink);
  gst_object_unref(dec);
  gst_harness_teardown(h);
}

TEST(GpuDecoder, NoAlignmentsWhenDisabled) {
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gboolean send = FALSE;
  g_object_get(dec, "send-alignments", &send, nullptr);
  EXPECT_TRUE(send) << "on by default";
  gst_object_unref(dec);

  const std::string gram = data("goforward.gram");
  SinkPadLog log;
  const LiveRun live = push_live(read_raw(data("goforward.raw")), gram, "send-alignments=false",
                                 &log);
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  ASSERT_EQ(live.run.finals().size(), 1u);
  EXPECT_EQ(live.run.finals()[0].hypothesis, "go forward ten meters");
  EXPECT_FALSE(log.buffers.empty()) << "the probe saw the features";
  EXPECT_TRUE(log.alignments.empty());
  EXPECT_EQ(log.malformed, 0);
  EXPECT_EQ(log.reached_harness, 0);
}

// batched-search: off by default, settable; a decoder whose search runs
// on the CPU (here) ignores it and gives the same words.
TEST(GpuDecoder, BatchedSearchProperty) {
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gboolean batched = TRUE;
  g_object_get(dec, "batched-search", &batched, nullptr);
  EXPECT_FALSE(batched) << "off by default";
  g_object_set(dec, "batched-search", TRUE, nullptr);
  g_object_get(dec, "batched-search", &batched, nullptr);
  EXPECT_TRUE(batched);
  gst_object_unref(dec);

  const LiveRun live = push_live(read_raw(data("goforward.raw")), data("goforward.gram"),
                                 "batched-search=true");
  EXPECT_TRUE(live.run.errors.empty()) << live.run.error_text();
  ASSERT_EQ(live.run.finals().size(), 1u);
  EXPECT_EQ(live.run.finals()[0].hypothesis, "go forward ten meters");
}

// The helpers alone: what new() makes, parse() gives back.
TEST(AlignmentEvent, RoundTrip) {
  const std::vector<gint32> senones = {-1, 0, 5, 5, 137, -1};
  GstEvent* e = gpuspeech_alignment_event_new(1234567890, 10 * GST_MSECOND, senones.data(),
                                              senones.size(), 138, "/models/en-us", 7, 4711);
  ASSERT_TRUE(e);
  EXPECT_EQ(GST_EVENT_TYPE(e), GST_EVENT_CUSTOM_UPSTREAM);
  EXPECT_TRUE(gst_structure_has_name(gst_event_get_structure(e), "gpuspeech-alignment"));
  GstClockTime ts = 0;
  guint64 dur = 0;
  GBytes* bytes = nullptr;
  gint num = 0;
  const gchar* model = nullptr;
  guint utt = 0;
  guint32 seqnum = 0;
  ASSERT_TRUE(gpuspeech_alignment_event_parse(e, &ts, &dur, &bytes, &num, &model, &utt, &seqnum));
  EXPECT_EQ(ts, 1234567890u);
  EXPECT_EQ(dur, 10 * GST_MSECOND);
  EXPECT_EQ(num, 138);
  EXPECT_STREQ(model, "/models/en-us");
  EXPECT_EQ(utt, 7u);
  EXPECT_EQ(seqnum, 4711u);
  ASSERT_TRUE(bytes);
  gsize size = 0;
  const void* data_ptr = g_bytes_get_data(bytes, &size);
  ASSERT_EQ(size, senones.size() * sizeof(gint32));
  std::vector<gint32> back(senones.size());
  memcpy(back.data(), data_ptr, size);
  EXPECT_EQ(back, senones);
  g_bytes_unref(bytes);
  // Every output is optional.
  EXPECT_TRUE(gpuspeech_alignment_event_parse(e, nullptr, nullptr, nullptr, nullptr, nullptr,
                                              nullptr, nullptr));
  // A copy (what elements may make of it) parses the same.
  GstEvent* copy = gst_event_copy(e);
  EXPECT_TRUE(gpuspeech_alignment_event_parse(copy, nullptr, nullptr, nullptr, &num, nullptr,
                                              nullptr, nullptr));
  EXPECT_EQ(num, 138);
  gst_event_unref(copy);
  gst_event_unref(e);
}

// A well-formed structure with one thing changed by `change`, as an event
// of `type`; parse() must reject it and leave the outputs alone.
void expect_rejected(const char* what, void (*change)(GstStructure*),
                     GstEventType type = GST_EVENT_CUSTOM_UPSTREAM) {
  const gint32 senones[] = {3, -1, 4, 0};
  GBytes* bytes = g_bytes_new(senones, sizeof senones);
  GstStructure* s = gst_structure_new(
      GPUSPEECH_ALIGNMENT_EVENT, "timestamp", G_TYPE_UINT64, (guint64)GST_SECOND,
      "frame-duration", G_TYPE_UINT64, (guint64)(10 * GST_MSECOND), "senones", G_TYPE_BYTES, bytes,
      "num-senones", G_TYPE_INT, 5, "model", G_TYPE_STRING, "m", "utterance", G_TYPE_UINT, 1u,
      nullptr);
  g_bytes_unref(bytes);
  {
    // The unchanged structure is accepted (so each rejection below is
    // caused by its change alone).
    GstEvent* good = gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, gst_structure_copy(s));
    EXPECT_TRUE(gpuspeech_alignment_event_parse(good, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                nullptr, nullptr));
    gst_event_unref(good);
  }
  if (change) change(s);
  GstEvent* e = gst_event_new_custom(type, s);
  gint num = -42;
  GBytes* out = nullptr;
  guint32 seqnum = 42;
  EXPECT_FALSE(
      gpuspeech_alignment_event_parse(e, nullptr, nullptr, &out, &num, nullptr, nullptr, &seqnum))
      << what;
  EXPECT_EQ(num, -42) << what;
  EXPECT_EQ(seqnum, 42u) << what;
  EXPECT_EQ(out, nullptr) << what;
  gst_event_unref(e);
}

void set_bytes(GstStructure* s, const void* data, gsize size) {
  GBytes* b = g_bytes_new(data, size);
  gst_structure_set(s, "senones", G_TYPE_BYTES, b, nullptr);
  g_bytes_unref(b);
}

TEST(AlignmentEvent, ParseRejectsMalformed) {
  // Not an alignment event at all.
  GstEvent* eos = gst_event_new_eos();
  EXPECT_FALSE(gpuspeech_alignment_event_parse(eos, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr));
  gst_event_unref(eos);
  expect_rejected("downstream event", nullptr, GST_EVENT_CUSTOM_DOWNSTREAM);
  expect_rejected("other name", [](GstStructure* s) { gst_structure_set_name(s, "alignment"); });
  // Fields missing or of the wrong type.
  expect_rejected("no senones", [](GstStructure* s) { gst_structure_remove_field(s, "senones"); });
  expect_rejected("no model", [](GstStructure* s) { gst_structure_remove_field(s, "model"); });
  expect_rejected("no utterance",
                  [](GstStructure* s) { gst_structure_remove_field(s, "utterance"); });
  expect_rejected("timestamp gint64", [](GstStructure* s) {
    gst_structure_set(s, "timestamp", G_TYPE_INT64, (gint64)GST_SECOND, nullptr);
  });
  expect_rejected("num-senones guint", [](GstStructure* s) {
    gst_structure_set(s, "num-senones", G_TYPE_UINT, 5u, nullptr);
  });
  expect_rejected("senones a string", [](GstStructure* s) {
    gst_structure_set(s, "senones", G_TYPE_STRING, "3 -1 4 0", nullptr);
  });
  // Values outside the rules.
  expect_rejected("6 bytes", [](GstStructure* s) {
    const guint8 six[6] = {1, 0, 0, 0, 2, 0};
    set_bytes(s, six, sizeof six);
  });
  expect_rejected("no frames", [](GstStructure* s) { set_bytes(s, "", 0); });
  expect_rejected("senone == num-senones", [](GstStructure* s) {
    const gint32 v[] = {0, 5};
    set_bytes(s, v, sizeof v);
  });
  expect_rejected("senone -2", [](GstStructure* s) {
    const gint32 v[] = {-2, 1};
    set_bytes(s, v, sizeof v);
  });
  expect_rejected("num-senones 0", [](GstStructure* s) {
    gst_structure_set(s, "num-senones", G_TYPE_INT, 0, nullptr);
  });
  expect_rejected("frame-duration 0", [](GstStructure* s) {
    gst_structure_set(s, "frame-duration", G_TYPE_UINT64, (guint64)0, nullptr);
  });
  expect_rejected("timestamp NONE", [](GstStructure* s) {
    gst_structure_set(s, "timestamp", G_TYPE_UINT64, GST_CLOCK_TIME_NONE, nullptr);
  });
  // Times no sender can mean: frames more than a second apart, and a last
  // frame (4 frames of 10 ms here) that ends past GstClockTimeDiff's range,
  // or wraps around GstClockTime altogether.
  expect_rejected("frame-duration 1 s + 1 ns", [](GstStructure* s) {
    gst_structure_set(s, "frame-duration", G_TYPE_UINT64, (guint64)(GST_SECOND + 1), nullptr);
  });
  expect_rejected("end past G_MAXINT64", [](GstStructure* s) {
    gst_structure_set(s, "timestamp", G_TYPE_UINT64,
                      (guint64)G_MAXINT64 - 4 * 10 * GST_MSECOND + 1, nullptr);
  });
  expect_rejected("timestamp past G_MAXINT64", [](GstStructure* s) {
    gst_structure_set(s, "timestamp", G_TYPE_UINT64, (guint64)G_MAXINT64 + 1, nullptr);
  });
  expect_rejected("end wraps around", [](GstStructure* s) {
    gst_structure_set(s, "timestamp", G_TYPE_UINT64, G_MAXUINT64 - 2, "frame-duration",
                      G_TYPE_UINT64, (guint64)GST_SECOND, nullptr);
  });
  // The optional segment-seqnum, when present, is a guint.
  expect_rejected("segment-seqnum gint", [](GstStructure* s) {
    gst_structure_set(s, "segment-seqnum", G_TYPE_INT, 12, nullptr);
  });
  expect_rejected("segment-seqnum a string", [](GstStructure* s) {
    gst_structure_set(s, "segment-seqnum", G_TYPE_STRING, "12", nullptr);
  });
}

// The limits themselves are accepted: frames a second apart, and a last
// frame that ends exactly at G_MAXINT64; an event without segment-seqnum
// (older senders) says "unknown".
TEST(AlignmentEvent, ParseAcceptsTheLimitsAndAMissingSeqnum) {
  const gint32 senones[] = {3, -1, 4, 0};
  auto parse_with = [&](guint64 ts, guint64 dur, guint32* seqnum) {
    GBytes* bytes = g_bytes_new(senones, sizeof senones);
    GstStructure* s = gst_structure_new(
        GPUSPEECH_ALIGNMENT_EVENT, "timestamp", G_TYPE_UINT64, ts, "frame-duration", G_TYPE_UINT64,
        dur, "senones", G_TYPE_BYTES, bytes, "num-senones", G_TYPE_INT, 5, "model", G_TYPE_STRING,
        "m", "utterance", G_TYPE_UINT, 1u, nullptr);
    g_bytes_unref(bytes);
    GstEvent* e = gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, s);
    const gboolean ok =
        gpuspeech_alignment_event_parse(e, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, seqnum);
    gst_event_unref(e);
    return ok;
  };
  guint32 seqnum = 42;
  EXPECT_TRUE(parse_with(GST_SECOND, GST_SECOND, &seqnum));
  EXPECT_EQ(seqnum, GST_SEQNUM_INVALID) << "no segment-seqnum: unknown";
  EXPECT_TRUE(parse_with((guint64)G_MAXINT64 - 4 * 10 * GST_MSECOND, 10 * GST_MSECOND, nullptr));
  // new() makes the same: the field only when the seqnum is known.
  GstEvent* e = gpuspeech_alignment_event_new(0, GST_SECOND, senones, 4, 5, "m", 0,
                                              GST_SEQNUM_INVALID);
  ASSERT_TRUE(e);
  EXPECT_FALSE(gst_structure_has_field(gst_event_get_structure(e), "segment-seqnum"));
  seqnum = 42;
  EXPECT_TRUE(
      gpuspeech_alignment_event_parse(e, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &seqnum));
  EXPECT_EQ(seqnum, GST_SEQNUM_INVALID);
  gst_event_unref(e);
}

// Words longer than endpoint-silence are not cut: endpointing counts the
// path's time in silence, not the time since the last word ended. "forward"
// and "meters" last over half a second; with endpoint-silence=200 and
// analyses every 100 ms, a word-end rule would end the utterance inside
// them. A real pause of a second still ends it.
TEST(GpuDecoder, LongWordIsNotCutBySilenceEndpointing) {
  const std::string gram = data("goforward.gram");
  const std::vector<int16_t> one = read_raw(data("goforward.raw"));
  const std::string settings = "endpoint-silence=200 partial-interval=100";
  const LiveRun single = push_live(one, gram, settings);
  EXPECT_TRUE(single.run.errors.empty()) << single.run.error_text();
  // The file's last 200+ ms are silence: the utterance may end there (and
  // an empty one follow at EOS), but only one final has words, all four.
  std::vector<Result> finals;
  for (const Result& r : single.run.finals())
    if (!r.hypothesis.empty()) finals.push_back(r);
  ASSERT_EQ(finals.size(), 1u) << described(single.run.finals());
  EXPECT_EQ(finals[0].hypothesis, "go forward ten meters");
  bool long_word = false;
  for (const Word& w : finals[0].words)
    if (w.end - w.start > 400 * GST_MSECOND) long_word = true;
  EXPECT_TRUE(long_word) << "the test needs a word longer than twice endpoint-silence";
  std::vector<int16_t> two = one;
  two.insert(two.end(), 16000, 0);  // 1 s of silence
  two.insert(two.end(), one.begin(), one.end());
  const LiveRun pair = push_live(two, gram, settings);
  std::vector<Result> pair_finals;
  for (const Result& r : pair.run.finals())
    if (!r.hypothesis.empty()) pair_finals.push_back(r);
  ASSERT_EQ(pair_finals.size(), 2u) << described(pair.run.finals());
  EXPECT_EQ(pair_finals[0].reason, "silence");
  EXPECT_EQ(joined(pair_finals), "go forward ten meters go forward ten meters");
}

// Long audio without a word does not grow an utterance: 10 s of silence
// before the speech are dropped without a result (5 x endpoint-silence in
// silence), and the utterance with the words starts less than 5 s before
// them, with the same words and stream times as without the silence.
// (Noise is another matter with a small grammar: the search may explain it
// as the start of a word, and a path inside a word is never endpointed.)
std::string temp_path(const char* suffix);  // a fresh file name (below)
std::string write_temp_raw(const std::vector<int16_t>& samples);  // (below)

TEST(GpuDecoder, LongSilenceDoesNotAccumulate) {
  const std::string gram = data("goforward.gram");
  const std::string raw = data("goforward.raw");
  const std::vector<int16_t> one = read_raw(raw);
  const PipelineRun plain = run_pipeline(raw_source(raw) + " ! " + features() + " ! " +
                                         decoder(gram) + " ! fakesink");
  const auto plain_finals = plain.finals();
  ASSERT_EQ(plain_finals.size(), 1u) << plain.error_text();
  const guint64 lead = 10 * GST_SECOND;
  for (int noisy = 0; noisy < 1; ++noisy) {  // 1: noise (see above), not asserted
    // Silence as a recording has it, dithered (+-1), or low white noise
    // (+-128); a fixed LCG, the same every run. (10 s of exact digital
    // zeros are a different matter: the live CMN's running mean sinks so
    // far that the speech after them is not recognised even without
    // endpointing.)
    std::vector<int16_t> audio(160000, 0);
    uint32_t x = 12345;
    for (int16_t& v : audio) {
      x = x * 1664525u + 1013904223u;
      v = noisy ? static_cast<int16_t>(static_cast<int>(x >> 24) - 128)
                : static_cast<int16_t>(static_cast<int>(x >> 30) % 3 - 1);
    }
    audio.insert(audio.end(), one.begin(), one.end());
    const std::string path = write_temp_raw(audio);
    // endpoint-silence 1000 by default
    const PipelineRun run =
        run_pipeline(raw_source(path) + " ! " + features() + " ! " + decoder(gram) + " ! fakesink");
    g_remove(path.c_str());
    const std::string what = noisy ? "noise" : "silence";
    ASSERT_TRUE(run.eos) << run.error_text();
    const auto finals = run.finals();
    ASSERT_EQ(finals.size(), 1u) << what << ": " << described(finals);
    EXPECT_EQ(finals[0].hypothesis, "go forward ten meters") << what << "\n" << described(run.results);
    EXPECT_EQ(finals[0].utterance, 0u) << what;
    EXPECT_GE(finals[0].timestamp, 5 * GST_SECOND) << what << ": the silence was kept";
    EXPECT_LE(finals[0].timestamp, lead) << what;
    ASSERT_EQ(finals[0].words.size(), plain_finals[0].words.size()) << what;
    for (size_t i = 0; i < finals[0].words.size(); ++i)
      EXPECT_NEAR(static_cast<double>(finals[0].words[i].start),
                  static_cast<double>(plain_finals[0].words[i].start + lead), 60e6)
          << what << " " << finals[0].words[i].text;
    // No utterance grew past 5 s + one analysis + the overlap + the speech.
    for (const Result& r : run.results)
      EXPECT_LE(r.frames, 500u + 30u + 50u + one.size() / 160) << what;
  }
}

// ---------------------------------------------------------------------------
// Subtitles

struct TextBuffer {
  std::string text;
  GstClockTime pts = 0, duration = 0;
  // gpudecoder's final results posted when the buffer reached the sink.
  int finals_before = 0;
};

// What collect_text's callbacks share: the buffers, and the finals posted
// so far, counted by a sync bus handler in the thread that posts them (so
// a final posted before a buffer is pushed is counted before it arrives).
struct TextCollection {
  std::vector<TextBuffer> buffers;
  std::atomic<int> finals{0};
};

void on_handoff(GstElement*, GstBuffer* b, GstPad*, gpointer user) {
  auto* c = static_cast<TextCollection*>(user);
  GstMapInfo map;
  gst_buffer_map(b, &map, GST_MAP_READ);
  c->buffers.push_back({std::string(reinterpret_cast<const char*>(map.data), map.size),
                        GST_BUFFER_PTS(b), GST_BUFFER_DURATION(b), c->finals.load()});
  gst_buffer_unmap(b, &map);
}

GstBusSyncReply count_finals(GstBus*, GstMessage* m, gpointer user) {
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT) {
    const GstStructure* s = gst_message_get_structure(m);
    gboolean fin = FALSE;
    if (gst_structure_has_name(s, "gpudecoder") && gst_structure_get_boolean(s, "final", &fin) &&
        fin)
      ++static_cast<TextCollection*>(user)->finals;
  }
  return GST_BUS_PASS;
}

// Runs `desc`, whose last element is "fakesink name=out signal-handoffs=true",
// and returns what reached it.
std::vector<TextBuffer> collect_text(const std::string& desc, PipelineRun* run_out = nullptr) {
  TextCollection out;
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(desc.c_str(), &err);
  EXPECT_TRUE(p) << desc << ": " << (err ? err->message : "");
  g_clear_error(&err);
  if (!p) return {};
  GstElement* sink = gst_bin_get_by_name(GST_BIN(p), "out");
  g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &out);
  GstBus* bus = gst_element_get_bus(p);
  gst_bus_set_sync_handler(bus, count_finals, &out, nullptr);
  PipelineRun run;
  gst_element_set_state(p, GST_STATE_PLAYING);
  while (GstMessage* m = gst_bus_timed_pop(bus, 60 * GST_SECOND)) {
    const bool done = take_message(m, run);
    gst_message_unref(m);
    if (done) break;
  }
  EXPECT_TRUE(run.eos) << desc << "\n" << run.error_text();
  gst_element_set_state(p, GST_STATE_NULL);
  gst_bus_set_sync_handler(bus, nullptr, nullptr, nullptr);
  gst_object_unref(sink);
  gst_object_unref(bus);
  gst_object_unref(p);
  if (run_out) *run_out = run;
  return std::move(out.buffers);
}

std::string temp_path(const char* suffix) {
  gchar* tmpl = g_build_filename(g_get_tmp_dir(), "gpudecoder-XXXXXX", nullptr);
  const int fd = g_mkstemp(tmpl);
  close(fd);
  std::string path = std::string(tmpl) + suffix;
  g_unlink(tmpl);
  g_free(tmpl);
  return path;
}

// `samples` as 16-bit little-endian raw audio in a fresh file (read_raw's
// format); returns its path.
std::string write_temp_raw(const std::vector<int16_t>& samples) {
  const std::string path = temp_path(".raw");
  std::ofstream out(path, std::ios::binary);
  for (int16_t v : samples) {
    const char b[2] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff)};
    out.write(b, 2);
  }
  return path;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  std::string x;
  while (in >> x) w.push_back(x);
  return w;
}

guint64 parse_time(const std::string& t) {  // HH:MM:SS,mmm or HH:MM:SS.mmm
  unsigned h = 0, m = 0, s = 0, ms = 0;
  char sep = 0;
  EXPECT_EQ(std::sscanf(t.c_str(), "%u:%u:%u%c%u", &h, &m, &s, &sep, &ms), 5) << t;
  return ((h * 3600ull + m * 60 + s) * 1000 + ms) * GST_MSECOND;
}

struct FileCue {
  guint64 start = 0, end = 0;
  std::string text;
};

// Cues of an SRT or WebVTT file (blocks with a "-->" line).
std::vector<FileCue> parse_cues(const std::string& file) {
  std::vector<FileCue> cues;
  std::istringstream in(file);
  std::string line;
  FileCue* cur = nullptr;
  while (std::getline(in, line)) {
    const size_t arrow = line.find(" --> ");
    if (arrow != std::string::npos) {
      cues.push_back({parse_time(line.substr(0, arrow)), parse_time(line.substr(arrow + 5)), ""});
      cur = &cues.back();
    } else if (line.empty()) {
      cur = nullptr;
    } else if (cur) {
      cur->text += (cur->text.empty() ? "" : " ") + line;
    }
  }
  return cues;
}

void check_subtitle_file(const char* format, const char* header) {
  const std::string gram = data("cards/cards.gram");
  const std::string wav = data("cards/005.wav");
  const std::string path = temp_path(format);
  // Short cues, so that the file has several.
  PipelineRun run = run_pipeline(wav_source(wav) + " ! " + features() + " ! " +
                         decoder(gram, std::string("cue-max-chars=16 output-format=") + format) +
                         " ! filesink location=" + path);
  ASSERT_TRUE(run.eos) << run.error_text();
  const auto finals = run.finals();
  ASSERT_EQ(finals.size(), 1u);
  const Result& f = finals[0];
  ASSERT_GE(f.words.size(), 4u);
  const std::string file = read_text(path);
  EXPECT_EQ(file.rfind(header, 0), 0u) << file;
  const std::vector<FileCue> cues = parse_cues(file);
  ASSERT_GE(cues.size(), 2u) << file;
  // Cue times increase and equal the times of the words they hold.
  size_t w = 0;
  guint64 prev_end = 0;
  std::string all;
  for (const FileCue& c : cues) {
    EXPECT_GE(c.start, prev_end);
    EXPECT_GT(c.end, c.start);
    const std::vector<std::string> cw = split_words(c.text);
    ASSERT_LE(w + cw.size(), f.words.size());
    EXPECT_EQ(c.start, f.words[w].start / GST_MSECOND * GST_MSECOND) << c.text;
    EXPECT_EQ(c.end, f.words[w + cw.size() - 1].end / GST_MSECOND * GST_MSECOND) << c.text;
    for (const std::string& x : cw) EXPECT_EQ(x, f.words[w++].text);
    prev_end = c.end;
    all += (all.empty() ? "" : " ") + c.text;
  }
  EXPECT_EQ(w, f.words.size());
  // GStreamer's own parser reads it back: the same words, the same times.
  const std::vector<TextBuffer> parsed = collect_text(
      "filesrc location=" + path + " ! subparse ! fakesink name=out signal-handoffs=true sync=false");
  ASSERT_EQ(parsed.size(), cues.size());
  std::string back;
  for (size_t i = 0; i < parsed.size(); ++i) {
    back += (back.empty() ? "" : " ") + parsed[i].text;
    EXPECT_EQ(parsed[i].pts, cues[i].start);
    EXPECT_EQ(parsed[i].pts + parsed[i].duration, cues[i].end);
  }
  EXPECT_EQ(split_words(back), split_words(f.hypothesis));
  g_unlink(path.c_str());
}

TEST(GpuDecoder, SrtReadBackBySubparse) { check_subtitle_file("srt", "1\n"); }
TEST(GpuDecoder, WebvttReadBackBySubparse) { check_subtitle_file("webvtt", "WEBVTT\n\n"); }

TEST(GpuDecoder, MatroskaSubtitleTrack) {
  if (!gst_element_factory_find("matroskamux")) GTEST_SKIP() << "no matroskamux";
  const std::string gram = data("cards/cards.gram");
  const std::string path = temp_path(".mkv");
  PipelineRun run = run_pipeline(wav_source(data("cards/005.wav")) + " ! " + features() + " ! " +
                         decoder(gram, "cue-max-chars=16") + " ! matroskamux ! filesink location=" +
                         path);
  ASSERT_TRUE(run.eos) << run.error_text();
  const auto finals = run.finals();
  ASSERT_EQ(finals.size(), 1u);
  const std::vector<TextBuffer> track = collect_text(
      "filesrc location=" + path +
      " ! matroskademux ! text/x-raw ! fakesink name=out signal-handoffs=true sync=false");
  ASSERT_GE(track.size(), 2u);
  std::string back;
  guint64 prev = 0;
  for (const TextBuffer& t : track) {
    back += (back.empty() ? "" : " ") + t.text;
    EXPECT_GE(t.pts, prev);
    prev = t.pts;
  }
  EXPECT_EQ(split_words(back), split_words(finals[0].hypothesis));
  EXPECT_EQ(track[0].pts / GST_MSECOND, finals[0].words[0].start / GST_MSECOND);
  g_unlink(path.c_str());
}

TEST(GpuDecoder, JsonLinesOutput) {
  const std::string path = temp_path(".json");
  PipelineRun run = run_pipeline(raw_source(data("goforward.raw")) + " ! " + features() + " ! " +
                                 decoder(data("goforward.gram"), "output-format=json nbest=2") +
                                 " ! filesink location=" + path);
  ASSERT_TRUE(run.eos) << run.error_text();
  ASSERT_EQ(run.finals().size(), 1u);
  const std::string json = read_text(path);
  // One line, one object, with the final result's words and times.
  EXPECT_EQ(json.find('\n'), json.size() - 1) << json;
  EXPECT_EQ(json.rfind("{\"utterance\":0,\"start\":0,\"end\":2.78,\"reason\":\"eos\","
                       "\"hypothesis\":\"go forward ten meters\",",
                       0),
            0u)
      << json;
  const Result& f = run.finals()[0];
  char first[96];
  std::snprintf(first, sizeof first, "\"words\":[{\"word\":\"go\",\"start\":%g,\"end\":%g,",
                f.words[0].start / 1e9, f.words[0].end / 1e9);
  EXPECT_NE(json.find(first), std::string::npos) << json << "\n" << first;
  EXPECT_NE(json.find("\"nbest\":[{\"hypothesis\":\"go forward ten meters\""), std::string::npos)
      << json;
  g_unlink(path.c_str());
}

// ---------------------------------------------------------------------------
// Caps and model errors

TEST(GpuDecoder, FeatureMismatchFailsNegotiationNamingBoth) {
  const std::string gram = data("goforward.gram");
  const std::string src = raw_source(data("goforward.raw"));
  struct Case {
    std::string features;
    std::string expect;
  } cases[] = {
      {features("live", "deltas=none"), "dim: upstream 13, model 39"},
      {features("live", "low-freq=200"), "low-freq: upstream 200, model 130"},
      {"gpufeatures backend=cpu flavour=htk deltas=1s_c_d_dd", "flavour: upstream htk, model sphinx"},
      {features("none"), "cmn: upstream none, model batch"},
  };
  for (const Case& c : cases) {
    const PipelineRun run = run_pipeline(src + " ! " + c.features + " ! " + decoder(gram) + " ! fakesink");
    ASSERT_EQ(run.errors.size(), 1u) << c.features;
    EXPECT_NE(run.errors[0].find(c.expect), std::string::npos) << run.errors[0];
    EXPECT_NE(run.errors[0].find("upstream offers"), std::string::npos) << run.errors[0];
    EXPECT_NE(run.errors[0].find("the model expects kind=mfcc"), std::string::npos) << run.errors[0];
    EXPECT_TRUE(run.finals().empty());
  }
}

// Refused caps come again with every buffer upstream pushes (sticky
// events are retried), and a producer without caps may go on pushing:
// either way one error, not one a buffer (gst-launch could go on
// prerolling behind a flood of them).
TEST(GpuDecoder, RefusedCapsAreOneErrorHoweverManyBuffersFollow) {
  const std::string gram = data("goforward.gram");
  for (const bool with_caps : {true, false}) {
    SCOPED_TRACE(with_caps ? "refused caps" : "no caps");
    GstHarness* h = gst_harness_new_parse(decoder(gram).c_str());
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    if (with_caps)
      gst_harness_set_src_caps_str(
          h, "audio/x-gpuspeech-features, format=F32LE, kind=mfcc, flavour=sphinx, dim=13, "
             "base-dim=13, frame-rate=100/1, layout=c, num-warps=1, sample-rate=16000, cmn=live");
    for (int i = 0; i < 5; ++i) {
      GstBuffer* b = gst_buffer_new_allocate(nullptr, 13 * 10 * sizeof(float), nullptr);
      gst_buffer_memset(b, 0, 0, gst_buffer_get_size(b));
      GST_BUFFER_PTS(b) = i * 100 * GST_MSECOND;
      EXPECT_EQ(gst_harness_push(h, b), GST_FLOW_NOT_NEGOTIATED);
    }
    PipelineRun run;
    while (GstMessage* m = gst_bus_pop(bus)) {
      take_message(m, run);
      gst_message_unref(m);
    }
    ASSERT_EQ(run.errors.size(), 1u) << run.error_text();
    EXPECT_NE(run.errors[0].find(with_caps ? "dim: upstream 13, model 39"
                                           : "received features before accepted caps"),
              std::string::npos)
        << run.errors[0];
    gst_element_set_bus(h->element, nullptr);
    gst_object_unref(bus);
    gst_harness_teardown(h);
  }
}

TEST(GpuDecoder, ModelErrorsNameTheFile) {
  const std::string src = raw_source(data("goforward.raw")) + " ! " + features() + " ! ";
  const std::string bad_gram = temp_path(".gram");
  {
    std::ofstream out(bad_gram);
    out << "#JSGF V1.0;\ngrammar x;\npublic <a> = go (forward ;\n";
  }
  struct Case {
    std::string dec;
    std::vector<std::string> expect;
  } cases[] = {
      {"gpudecoder hmm=/nonexistent/model jsgf=" + data("goforward.gram"),
       {"/nonexistent/model", "does not exist"}},
      {decoder(bad_gram), {bad_gram}},
      {decoder(data("goforward.gram"), "lm=" + data("turtle.lm.bin")), {"at most one", "lm, jsgf"}},
      {decoder(data("goforward.gram"), "lattice-lw=8.5"), {"lattice-lw needs an n-gram"}},
      {"gpudecoder hmm=" + hmm() + " dict=/no/such.dict jsgf=" + data("goforward.gram"),
       {"/no/such.dict"}},
  };
  for (const Case& c : cases) {
    const PipelineRun run = run_pipeline(src + c.dec + " ! fakesink");
    ASSERT_FALSE(run.errors.empty()) << c.dec;
    for (const std::string& e : c.expect)
      EXPECT_NE(run.errors[0].find(e), std::string::npos) << run.errors[0];
  }
  g_unlink(bad_gram.c_str());
}

// The word-lattice pass (lattice-lw): auto (-1) by default, reads back,
// and refused, naming why, where there is no word-end rescoring for it to
// follow: a grammar (ModelErrorsNameTheFile), or an LM small enough to be
// compiled into the graph whole (turtle.lm.bin); auto leaves such an LM
// without the pass, with no error. (It runs with the en-us LM;
// transcribe's LibriVox test covers that path of the recognizer.)
TEST(GpuDecoder, LatticePassProperty) {
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gdouble lw = 0.0;
  g_object_get(dec, "lattice-lw", &lw, nullptr);
  EXPECT_EQ(lw, -1.0) << "auto by default";
  g_object_set(dec, "lattice-lw", 8.5, nullptr);
  g_object_get(dec, "lattice-lw", &lw, nullptr);
  EXPECT_EQ(lw, 8.5);
  // Its word cost: auto by default, read back when set.
  gdouble wip = 0.0;
  g_object_get(dec, "lattice-wip", &wip, nullptr);
  EXPECT_EQ(wip, -1.0);
  g_object_set(dec, "lattice-wip", 2e-5, nullptr);
  g_object_get(dec, "lattice-wip", &wip, nullptr);
  EXPECT_EQ(wip, 2e-5);
  gst_object_unref(dec);

  const std::string src = raw_source(data("goforward.raw")) + " ! " + features() + " ! ";
  const std::string dec_desc = "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() +
                               " lm=" + data("turtle.lm.bin");
  const PipelineRun plain = run_pipeline(src + dec_desc + " ! fakesink");
  ASSERT_TRUE(plain.errors.empty()) << plain.error_text();
  ASSERT_EQ(plain.finals().size(), 1u);
  EXPECT_EQ(plain.finals()[0].hypothesis, "go forward ten meters");
  const PipelineRun lattice = run_pipeline(src + dec_desc + " lattice-lw=8.5 ! fakesink");
  ASSERT_FALSE(lattice.errors.empty());
  EXPECT_NE(lattice.errors[0].find("small enough to compile whole"), std::string::npos)
      << lattice.errors[0];
  EXPECT_NE(lattice.errors[0].find("turtle.lm.bin"), std::string::npos) << lattice.errors[0];
}

// goforward.raw three times, 1.5 s of silence between (endpointing's 1 s
// and more: three utterances), in a fresh raw file; its path, or "" when
// the recording is missing or too short.
std::string three_goforwards_file() {
  const std::vector<int16_t> go = read_raw(data("goforward.raw"));
  EXPECT_GT(go.size(), 16000u);
  if (go.size() <= 16000u) return "";
  std::vector<int16_t> three;
  for (int k = 0; k < 3; ++k) {
    if (k > 0) three.insert(three.end(), 24000, 0);
    three.insert(three.end(), go.begin(), go.end());
  }
  return write_temp_raw(three);
}

// The adapt property (on by default with an n-gram LM): three utterances
// of the same recording, parted by silence. The first has too little
// speech for a transform (its final says adapted=FALSE); once the stream
// has enough, the finals come from the second decoding (adapted=TRUE), and
// the words stay right. adapt=false: no field, and the same words. A
// grammar never adapts (no field).
TEST(GpuDecoder, AdaptsToTheSpeakerAcrossUtterances) {
  const std::string path = three_goforwards_file();
  ASSERT_FALSE(path.empty());
  const std::string src = raw_source(path) + " ! " + features() + " ! ";
  const std::string lm = "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() +
                         " lm=" + data("turtle.lm.bin");
  const PipelineRun adapted = run_pipeline(src + lm + " ! fakesink");
  const PipelineRun plain = run_pipeline(src + lm + " adapt=false ! fakesink");
  const PipelineRun gram = run_pipeline(src + decoder(data("goforward.gram")) + " ! fakesink");
  g_unlink(path.c_str());
  for (const PipelineRun* r : {&adapted, &plain, &gram}) {
    ASSERT_TRUE(r->eos) << r->error_text();
    ASSERT_EQ(r->finals().size(), 3u) << described(r->finals());
  }
  const std::vector<Result> a = adapted.finals();
  EXPECT_EQ(a[0].adapted, 0);
  EXPECT_EQ(a[2].adapted, 1) << "no second pass with three utterances of speech";
  for (const Result& r : a) EXPECT_EQ(r.hypothesis, "go forward ten meters");
  for (const Result& r : plain.finals()) {
    EXPECT_EQ(r.adapted, -1);
    EXPECT_EQ(r.hypothesis, "go forward ten meters");
  }
  for (const Result& r : gram.finals()) EXPECT_EQ(r.adapted, -1);
  // Until the first transform both decode the same features the same way.
  EXPECT_EQ(a[0].words.size(), plain.finals()[0].words.size());
  // gpufeatures' live CMN trace reached the decoder: every utterance was
  // normalised with its own mean (utterance-cmn, on by default).
  for (const Result& r : a) EXPECT_EQ(r.utterance_cmn, 1);
  for (const Result& r : plain.finals()) EXPECT_EQ(r.utterance_cmn, -1);

  // redecode-min-gain (0.01 by default): a gain no estimate reaches keeps
  // each first pass. The utterance that made the first transform is then
  // not adapted; the next one is, decoded under that transform from its
  // start.
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gdouble min_gain = -1.0;
  g_object_get(dec, "redecode-min-gain", &min_gain, nullptr);
  EXPECT_DOUBLE_EQ(min_gain, 0.01);
  gst_object_unref(dec);
  const std::string path2 = three_goforwards_file();
  ASSERT_FALSE(path2.empty());
  // With utterance-cmn=false too, so that only the transform decides.
  const PipelineRun kept = run_pipeline(raw_source(path2) + " ! " + features() + " ! " + lm +
                                        " redecode-min-gain=1000 utterance-cmn=false ! fakesink");
  g_unlink(path2.c_str());
  ASSERT_TRUE(kept.eos) << kept.error_text();
  const std::vector<Result> k = kept.finals();
  ASSERT_EQ(k.size(), 3u) << described(k);
  size_t first = 0;
  while (first < a.size() && a[first].adapted != 1) ++first;
  ASSERT_EQ(first, 1u) << "the first transform was expected from the second utterance";
  EXPECT_EQ(k[0].adapted, 0);
  EXPECT_EQ(k[1].adapted, 0) << "a second decoding despite redecode-min-gain=1000";
  EXPECT_EQ(k[2].adapted, 1);
  for (const Result& r : k) {
    EXPECT_EQ(r.hypothesis, "go forward ten meters");
    EXPECT_EQ(r.utterance_cmn, 0);
  }

  // adapt-young-frames and adapt-young-update (a stream's first estimate
  // in three blocks by default): with the threshold beyond any stream's
  // speech every transform is diagonal, and the stream still adapts with
  // the right words.
  dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gdouble young_frames = -1.0;
  gint young_update = -1, update = -1;
  g_object_get(dec, "adapt-young-frames", &young_frames, "adapt-young-update", &young_update, "adapt-update",
               &update, nullptr);
  EXPECT_DOUBLE_EQ(young_frames, AdaptiveRedecoderOptions().young_below_frames);
  EXPECT_EQ(young_update, static_cast<gint>(AdaptiveRedecoderOptions().young_update));
  EXPECT_EQ(update, static_cast<gint>(FmllrUpdateType::kFull));
  g_object_set(dec, "adapt-update", static_cast<gint>(FmllrUpdateType::kBlock), nullptr);
  g_object_get(dec, "adapt-update", &update, nullptr);
  EXPECT_EQ(update, static_cast<gint>(FmllrUpdateType::kBlock));
  gst_object_unref(dec);
  const std::string path3 = three_goforwards_file();
  ASSERT_FALSE(path3.empty());
  const PipelineRun diag = run_pipeline(raw_source(path3) + " ! " + features() + " ! " + lm +
                                        " adapt-young-frames=1e9 adapt-young-update=diag ! fakesink");
  g_unlink(path3.c_str());
  ASSERT_TRUE(diag.eos) << diag.error_text();
  const std::vector<Result> dg = diag.finals();
  ASSERT_EQ(dg.size(), 3u) << described(dg);
  EXPECT_EQ(dg[2].adapted, 1);
  for (const Result& r : dg) EXPECT_EQ(r.hypothesis, "go forward ten meters");

  // adapt-young-vtln (off by default): the first estimate a VTLN warp;
  // the stream adapts and keeps its words.
  dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gboolean young_vtln = TRUE;
  g_object_get(dec, "adapt-young-vtln", &young_vtln, nullptr);
  EXPECT_EQ(young_vtln, AdaptiveRedecoderOptions().young_vtln ? TRUE : FALSE);
  gst_object_unref(dec);
  const std::string path5 = three_goforwards_file();
  ASSERT_FALSE(path5.empty());
  const PipelineRun warp = run_pipeline(raw_source(path5) + " ! " + features() + " ! " + lm +
                                        " adapt-young-vtln=true ! fakesink");
  g_unlink(path5.c_str());
  ASSERT_TRUE(warp.eos) << warp.error_text();
  const std::vector<Result> wp = warp.finals();
  ASSERT_EQ(wp.size(), 3u) << described(wp);
  EXPECT_EQ(wp[2].adapted, 1);
  for (const Result& r : wp) EXPECT_EQ(r.hypothesis, "go forward ten meters");

  // adapt-update=block by its nick, as gst-launch sets it: the stream
  // adapts and keeps its words.
  const std::string path4 = three_goforwards_file();
  ASSERT_FALSE(path4.empty());
  const PipelineRun blk = run_pipeline(raw_source(path4) + " ! " + features() + " ! " + lm +
                                       " adapt-update=block adapt-young-frames=0 ! fakesink");
  g_unlink(path4.c_str());
  ASSERT_TRUE(blk.eos) << blk.error_text();
  const std::vector<Result> bk = blk.finals();
  ASSERT_EQ(bk.size(), 3u) << described(bk);
  EXPECT_EQ(bk[2].adapted, 1);
  for (const Result& r : bk) EXPECT_EQ(r.hypothesis, "go forward ten meters");
}

// For the adaptation-prior tests: a CPU recognizer of the goforward
// grammar that keeps its features (AdaptiveRedecoder needs them), the
// recording's features through it, and the statistics AdaptiveRedecoder
// learns from features as one utterance (the recognizer reset after).
RecognizerConfig goforward_adapting_config() {
  RecognizerConfig c = RecognizerConfig::en_us_defaults(testing::model_dir() + "/en-us");
  c.grammar_kind = GrammarKind::kJsgf;
  c.grammar = data("goforward.gram");
  c.scoring_backend = "cpu";
  c.search_backend = "cpu";
  c.keep_features_for_alignment = true;
  return c;
}

std::vector<float> goforward_features(Recognizer& rec) {
  const std::vector<int16_t> go = read_raw(data("goforward.raw"));
  const std::vector<float> samples(go.begin(), go.end());
  return rec.compute_features(samples.data(), static_cast<int64_t>(samples.size()));
}

FmllrStats learnt_stats(Recognizer& rec, const std::vector<float>& f) {
  AdaptiveRedecoderOptions o;
  o.estimation.min_frames = 50.0;
  AdaptiveRedecoder a(rec, o);
  a.push_features(f.data(), static_cast<int64_t>(f.size()) / rec.feature_dim());
  a.finish();
  a.reset();  // the recognizer ready for the next call
  return a.stats();
}

// adapt-prior: a channel's fMLLR statistics (here the goforward
// recording's own, learnt by the library's AdaptiveRedecoder and saved as
// gpuspeech-transcribe saves them). Every stream then starts adapted: the
// first utterance, which alone has too little speech for a transform
// (AdaptsToTheSpeakerAcrossUtterances), is estimated with the prior's
// statistics and decoded again (adapted=TRUE), and the words stay right. A
// missing or malformed file is an error that names it.
TEST(GpuDecoder, AdaptPriorAdaptsAStreamsFirstUtterance) {
  std::string stats_path = temp_path(".stats");
  {
    Recognizer rec(goforward_adapting_config());
    const FmllrStats learnt = learnt_stats(rec, goforward_features(rec));
    ASSERT_GT(learnt.beta, 50.0);
    write_fmllr_stats(stats_path, learnt);
  }
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gdouble frames = -1.0;
  gchar* prior = nullptr;
  g_object_get(dec, "adapt-prior-frames", &frames, "adapt-prior", &prior, nullptr);
  EXPECT_DOUBLE_EQ(frames, 500.0);
  EXPECT_EQ(prior, nullptr);
  gst_object_unref(dec);

  const std::string path = three_goforwards_file();
  ASSERT_FALSE(path.empty());
  const std::string src = raw_source(path) + " ! " + features() + " ! ";
  const std::string lm = "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() +
                         " lm=" + data("turtle.lm.bin");
  const PipelineRun with_prior = run_pipeline(src + lm + " adapt-prior=" + stats_path + " ! fakesink");
  ASSERT_TRUE(with_prior.eos) << with_prior.error_text();
  const std::vector<Result> r = with_prior.finals();
  ASSERT_EQ(r.size(), 3u) << described(r);
  EXPECT_EQ(r[0].adapted, 1) << "the first utterance was not adapted with the prior";
  for (const Result& x : r) EXPECT_EQ(x.hypothesis, "go forward ten meters");

  const std::string bad = temp_path(".stats");
  {
    std::ofstream out(bad);
    out << "[\n 1 0 0\n 0 1 0 ]\n";
  }
  const PipelineRun missing = run_pipeline(src + lm + " adapt-prior=/no/such.stats ! fakesink");
  ASSERT_FALSE(missing.errors.empty());
  EXPECT_NE(missing.errors[0].find("/no/such.stats"), std::string::npos) << missing.errors[0];
  EXPECT_NE(missing.errors[0].find("does not exist"), std::string::npos) << missing.errors[0];
  const PipelineRun malformed = run_pipeline(src + lm + " adapt-prior=" + bad + " ! fakesink");
  ASSERT_FALSE(malformed.errors.empty());
  EXPECT_NE(malformed.errors[0].find(bad), std::string::npos) << malformed.errors[0];
  EXPECT_NE(malformed.errors[0].find("not fMLLR statistics"), std::string::npos) << malformed.errors[0];
  g_unlink(path.c_str());
  g_unlink(bad.c_str());
  g_unlink(stats_path.c_str());
}

// adapt-channels: a library of channel priors, one chosen per stream. The
// library here: the goforward recording's statistics as the channel "own"
// and, as the reference, those of the recording through an affine
// distortion, so that the stream (the recording as it is) takes "own" and
// says so in every final's `channel` field; a threshold out of reach
// leaves it none (""). The default names the library made for the default
// model; a library made with another model, or a missing directory, is an
// error that names it.
TEST(GpuDecoder, AdaptChannelsGivesAStreamTheChannelItCameThrough) {
  gchar* tmpl = g_build_filename(g_get_tmp_dir(), "gpudecoder-channels-XXXXXX", nullptr);
  ASSERT_NE(g_mkdtemp(tmpl), nullptr);
  const std::string lib = tmpl;
  g_free(tmpl);
  {
    Recognizer rec(goforward_adapting_config());
    const std::vector<float> f = goforward_features(rec);
    const int dim = rec.feature_dim();
    const int64_t rows = static_cast<int64_t>(f.size()) / dim;
    FmllrTransform distortion = FmllrTransform::identity(dim);
    for (int i = 0; i < dim; ++i) {
      distortion.at(i, i) = 0.7;
      distortion.at(i, dim) = (i % 13 == 0) ? 0.0 : 0.5 * ((i % 3) - 1);
    }
    std::vector<float> g(f.size());
    apply_fmllr_reference(distortion, f.data(), rows, g.data());
    auto stats_of = [&](const std::vector<float>& x, const std::string& to) {
      FmllrStats s = learnt_stats(rec, x);
      ASSERT_GT(s.beta, 50.0);
      // A library needs the frames of a transform estimate (300); scaled
      // statistics give the same transform.
      s.scale(4.0);
      write_fmllr_stats(to, s);
    };
    stats_of(f, lib + "/own.stats");
    stats_of(g, lib + "/reference.stats");
  }
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gchar* shipped = nullptr;
  gdouble min_gain = 0.0;
  g_object_get(dec, "adapt-channels", &shipped, "adapt-channel-min-gain", &min_gain, nullptr);
  ASSERT_NE(shipped, nullptr) << "no default channel library";
  EXPECT_TRUE(g_file_test((std::string(shipped) + "/reference.stats").c_str(), G_FILE_TEST_IS_REGULAR)) << shipped;
  EXPECT_TRUE(g_file_test((std::string(shipped) + "/gsm.stats").c_str(), G_FILE_TEST_IS_REGULAR)) << shipped;
  EXPECT_DOUBLE_EQ(min_gain, 1.5);
  g_free(shipped);
  gst_object_unref(dec);

  const std::string path = three_goforwards_file();
  ASSERT_FALSE(path.empty());
  const std::string src = raw_source(path) + " ! " + features() + " ! ";
  const std::string lm = "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() +
                         " lm=" + data("turtle.lm.bin") + " adapt-channels=" + lib;
  const PipelineRun taken = run_pipeline(src + lm + " adapt-channel-min-gain=0.1 ! fakesink");
  ASSERT_TRUE(taken.eos) << taken.error_text();
  const std::vector<Result> r = taken.finals();
  ASSERT_EQ(r.size(), 3u) << described(r);
  for (const Result& x : r) {
    EXPECT_TRUE(x.has_channel);
    EXPECT_EQ(x.channel, "own") << "utterance " << x.utterance;
    EXPECT_EQ(x.hypothesis, "go forward ten meters");
  }
  const PipelineRun none = run_pipeline(src + lm + " adapt-channel-min-gain=1e9 ! fakesink");
  ASSERT_TRUE(none.eos) << none.error_text();
  const std::vector<Result> n = none.finals();
  ASSERT_EQ(n.size(), 3u) << described(n);
  for (const Result& x : n) {
    EXPECT_TRUE(x.has_channel);
    EXPECT_EQ(x.channel, "");
  }
  // Without a library no final carries the field.
  const PipelineRun off = run_pipeline(src + "gpudecoder backend=cpu hmm=" + hmm() + " dict=" + dict() +
                                       " lm=" + data("turtle.lm.bin") + " adapt-channels=\"\" ! fakesink");
  ASSERT_TRUE(off.eos) << off.error_text();
  EXPECT_EQ(off.finals().size(), 3u);
  for (const Result& x : off.finals()) EXPECT_FALSE(x.has_channel);
  // "none" likewise (a shell eats the quotes of adapt-channels="").
  const PipelineRun none_word = run_pipeline(src + "gpudecoder backend=cpu hmm=" + hmm() + " dict=" + dict() +
                                             " lm=" + data("turtle.lm.bin") + " adapt-channels=none ! fakesink");
  ASSERT_TRUE(none_word.eos) << none_word.error_text();
  EXPECT_EQ(none_word.finals().size(), 3u);
  for (const Result& x : none_word.finals()) EXPECT_FALSE(x.has_channel);

  {
    std::ofstream(lib + "/model") << "means 1 0000000000000000\n";
  }
  const PipelineRun other_model = run_pipeline(src + lm + " ! fakesink");
  ASSERT_FALSE(other_model.errors.empty());
  EXPECT_NE(other_model.errors[0].find("another acoustic model"), std::string::npos) << other_model.errors[0];
  EXPECT_NE(other_model.errors[0].find(lib), std::string::npos) << other_model.errors[0];
  const PipelineRun missing = run_pipeline(src + lm + "/absent ! fakesink");
  ASSERT_FALSE(missing.errors.empty());
  EXPECT_NE(missing.errors[0].find(lib + "/absent"), std::string::npos) << missing.errors[0];
  g_unlink((lib + "/model").c_str());
  g_unlink((lib + "/own.stats").c_str());
  g_unlink((lib + "/reference.stats").c_str());
  g_rmdir(lib.c_str());
  g_unlink(path.c_str());
}

// Word-level edit distance (substitutions, insertions, deletions).
int word_edit_distance(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> w;
    std::istringstream in(s);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  const std::vector<std::string> x = split(a), y = split(b);
  std::vector<int> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= x.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= y.size(); ++j) {
      const int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[y.size()];
}

// cue-timing: where a second pass decides the final words (adapt, on by
// default with an LM), auto pushes each utterance's text when it ends, the
// final result's words; stable pushes words as they become stable, before
// the utterance's final; without a second pass auto is stable. One-word
// cues (cue-max-chars=1) so that a cue is complete as soon as the next
// word is stable.
TEST(GpuDecoder, CueTimingFollowsTheFinalResultWhenASecondPassDecides) {
  GstElement* dec = gst_element_factory_make("gpudecoder", nullptr);
  ASSERT_TRUE(dec);
  gint timing = -1;
  g_object_get(dec, "cue-timing", &timing, nullptr);
  EXPECT_EQ(timing, 0) << "auto by default";
  gst_object_unref(dec);

  const std::string path = three_goforwards_file();
  ASSERT_FALSE(path.empty());
  const std::string src = raw_source(path) + " ! " + features() + " ! ";
  const std::string lm = "gpudecoder name=dec backend=cpu hmm=" + hmm() + " dict=" + dict() +
                         " lm=" + data("turtle.lm.bin") + " output-format=text cue-max-chars=1";
  const std::string sink = " ! fakesink name=out signal-handoffs=true sync=false";
  PipelineRun auto_run, stable_run, plain_run;
  const std::vector<TextBuffer> at_end = collect_text(src + lm + sink, &auto_run);
  const std::vector<TextBuffer> stable = collect_text(src + lm + " cue-timing=stable" + sink,
                                                      &stable_run);
  const std::vector<TextBuffer> plain = collect_text(src + lm + " adapt=false" + sink, &plain_run);
  g_unlink(path.c_str());
  for (const PipelineRun* r : {&auto_run, &stable_run, &plain_run})
    ASSERT_EQ(r->finals().size(), 3u) << described(r->finals());
  ASSERT_EQ(auto_run.finals()[2].adapted, 1) << "the last final should come from the second pass";

  // auto with adapt: every buffer after its utterance's final; the buffers
  // pushed after final k (and before final k + 1) are its words, in order.
  std::vector<std::string> after(3);
  for (const TextBuffer& b : at_end) {
    ASSERT_GE(b.finals_before, 1) << "text before any final: " << b.text;
    ASSERT_LE(b.finals_before, 3);
    std::string& s = after[static_cast<size_t>(b.finals_before - 1)];
    s += (s.empty() ? "" : " ") + b.text;
  }
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(after[k], auto_run.finals()[k].hypothesis) << k;

  // stable and adapt=false: some text before the first final. Without a
  // second pass all of it is the finals' words; with one (stable) the
  // words pushed early are the first pass's, which the final result may
  // change, by a word an utterance at most here (docs/gpudecoder.md).
  for (const std::vector<TextBuffer>* bufs : {&stable, &plain}) {
    std::string all;
    int early = 0;
    for (const TextBuffer& b : *bufs) {
      all += (all.empty() ? "" : " ") + b.text;
      early += b.finals_before == 0;
    }
    EXPECT_GT(early, 0) << "no text pushed before the first utterance ended";
    if (bufs == &plain) {
      EXPECT_EQ(all, joined(plain_run.finals()));
    } else {
      EXPECT_LE(word_edit_distance(all, joined(stable_run.finals())), 3)
          << all << " | " << joined(stable_run.finals());
    }
  }
}

// ---------------------------------------------------------------------------
// Live use and state

GstElement* launch(const std::string& desc) {
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(desc.c_str(), &err);
  EXPECT_TRUE(p) << desc << ": " << (err ? err->message : "");
  g_clear_error(&err);
  return p;
}

TEST(GpuDecoder, AnswersLatencyQuery) {
  GstElement* p = launch(
      "audiotestsrc is-live=true wave=silence samplesperbuffer=160 ! audioconvert ! " +
      features() + " name=feat ! " + decoder(data("goforward.gram"), "partial-interval=250") +
      " ! fakesink");
  ASSERT_TRUE(p);
  ASSERT_NE(gst_element_set_state(p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  // Once a result is posted, audio flows and every element knows its rate.
  GstBus* bus = gst_element_get_bus(p);
  PipelineRun run;
  while (GstMessage* m = gst_bus_timed_pop(bus, 30 * GST_SECOND)) {
    const bool done = take_message(m, run);
    gst_message_unref(m);
    if (done || !run.results.empty()) break;
  }
  gst_object_unref(bus);
  ASSERT_FALSE(run.results.empty()) << run.error_text();
  GstElement* feat = gst_bin_get_by_name(GST_BIN(p), "feat");
  GstElement* dec = gst_bin_get_by_name(GST_BIN(p), "dec");
  GstQuery* q1 = gst_query_new_latency();
  GstQuery* q2 = gst_query_new_latency();
  GstPad* fsrc = gst_element_get_static_pad(feat, "src");
  GstPad* dsrc = gst_element_get_static_pad(dec, "src");
  ASSERT_TRUE(gst_pad_query(fsrc, q1));
  ASSERT_TRUE(gst_pad_query(dsrc, q2));
  gboolean live1, live2;
  GstClockTime min1, max1, min2, max2;
  gst_query_parse_latency(q1, &live1, &min1, &max1);
  gst_query_parse_latency(q2, &live2, &min2, &max2);
  EXPECT_TRUE(live2);
  EXPECT_EQ(min2, min1 + 250 * GST_MSECOND);
  EXPECT_EQ(max2, GST_CLOCK_TIME_NONE);
  gst_query_unref(q1);
  gst_query_unref(q2);
  gst_object_unref(fsrc);
  gst_object_unref(dsrc);
  gst_object_unref(feat);
  gst_object_unref(dec);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
}

// Holds the stream after the first non-empty partial until a flush starts,
// so that the seek lands mid-utterance whatever the machine's speed.
struct SeekGate {
  GMutex lock;
  GCond cond;
  bool partial_seen = false;
  bool flushing = false;
  bool released = false;
  bool flush_stopped = false;
};

GstBusSyncReply gate_sync(GstBus*, GstMessage* m, gpointer user) {
  auto* g = static_cast<SeekGate*>(user);
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT) {
    const GstStructure* s = gst_message_get_structure(m);
    const gchar* h = gst_structure_get_string(s, "hypothesis");
    if (gst_structure_has_name(s, "gpudecoder") && h && *h) {
      g_mutex_lock(&g->lock);
      g->partial_seen = true;
      g_mutex_unlock(&g->lock);
    }
  }
  return GST_BUS_PASS;
}

GstPadProbeReturn gate_probe(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* g = static_cast<SeekGate*>(user);
  g_mutex_lock(&g->lock);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_FLUSH) {
    if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_FLUSH_START) {
      g->flushing = true;
      g_cond_broadcast(&g->cond);
    } else {
      g->flush_stopped = true;
    }
    g_mutex_unlock(&g->lock);
    return GST_PAD_PROBE_OK;
  }
  GstPadProbeReturn ret = GST_PAD_PROBE_OK;
  if (g->partial_seen && !g->released) {
    while (!g->flushing) g_cond_wait(&g->cond, &g->lock);
    g->released = true;
    // A buffer from before the seek is dropped; one from after it (the
    // seek was quicker than the stream got here) passes.
    if (!g->flush_stopped) ret = GST_PAD_PROBE_DROP;
  }
  g_mutex_unlock(&g->lock);
  return ret;
}

TEST(GpuDecoder, FlushingSeekMidUtterance) {
  const std::string gram = data("cards/cards.gram");
  const std::string wav = data("cards/005.wav");
  const PipelineRun ref = run_pipeline(wav_source(wav) + " ! " + features() + " ! " + decoder(gram) +
                               " ! fakesink");
  ASSERT_EQ(ref.finals().size(), 1u) << ref.error_text();

  GstElement* p = launch(wav_source(wav) + " ! " + features() + " ! " + decoder(gram) +
                         " ! fakesink sync=false");
  ASSERT_TRUE(p);
  SeekGate gate;
  g_mutex_init(&gate.lock);
  g_cond_init(&gate.cond);
  GstBus* bus = gst_element_get_bus(p);
  gst_bus_set_sync_handler(bus, gate_sync, &gate, nullptr);
  GstElement* dec = gst_bin_get_by_name(GST_BIN(p), "dec");
  GstPad* sink = gst_element_get_static_pad(dec, "sink");
  gst_pad_add_probe(sink,
                    (GstPadProbeType)(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_FLUSH),
                    gate_probe, &gate, nullptr);
  gst_element_set_state(p, GST_STATE_PLAYING);
  PipelineRun run;
  bool seeked = false;
  int finals_before_seek = -1;
  while (GstMessage* m = gst_bus_timed_pop(bus, 60 * GST_SECOND)) {
    const bool done = take_message(m, run);
    gst_message_unref(m);
    if (done) break;
    if (!seeked && !run.results.empty() && !run.results.back().hypothesis.empty()) {
      finals_before_seek = static_cast<int>(run.finals().size());
      ASSERT_TRUE(gst_element_seek_simple(p, GST_FORMAT_TIME,
                                          (GstSeekFlags)(GST_SEEK_FLAG_FLUSH), 0));
      seeked = true;
    }
  }
  EXPECT_TRUE(seeked);
  EXPECT_EQ(finals_before_seek, 0);
  EXPECT_TRUE(run.eos) << run.error_text();
  const auto finals = run.finals();
  ASSERT_EQ(finals.size(), 1u) << "the interrupted utterance must not give a result";
  EXPECT_EQ(finals[0].hypothesis, ref.finals()[0].hypothesis);
  EXPECT_EQ(finals[0].frames, ref.finals()[0].frames);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(dec);
  gst_object_unref(bus);
  gst_object_unref(p);
  g_mutex_clear(&gate.lock);
  g_cond_clear(&gate.cond);
}

TEST(GpuDecoder, TwentyStateCycles) {
  const std::string gram = data("goforward.gram");
  GstElement* p = launch(raw_source(data("goforward.raw")) + " ! " + features() + " ! " +
                         decoder(gram) + " ! fakesink");
  ASSERT_TRUE(p);
  GstBus* bus = gst_element_get_bus(p);
  for (int cycle = 0; cycle < 20; ++cycle) {
    ASSERT_NE(gst_element_set_state(p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    PipelineRun run;
    // Odd cycles stop at the first partial, mid-utterance; even ones run to
    // the end and must give the full result.
    while (GstMessage* m = gst_bus_timed_pop(bus, 60 * GST_SECOND)) {
      const bool done = take_message(m, run);
      gst_message_unref(m);
      if (done || (cycle % 2 == 1 && !run.results.empty())) break;
    }
    EXPECT_TRUE(run.errors.empty()) << "cycle " << cycle << ": " << run.error_text();
    if (cycle % 2 == 0) {
      ASSERT_TRUE(run.eos) << "cycle " << cycle;
      ASSERT_EQ(run.finals().size(), 1u) << "cycle " << cycle;
      EXPECT_EQ(run.finals()[0].hypothesis, "go forward ten meters") << "cycle " << cycle;
    } else {
      EXPECT_FALSE(run.results.empty()) << "cycle " << cycle;
    }
    ASSERT_EQ(gst_element_set_state(p, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_bus_set_flushing(bus, TRUE);  // drop what the stopped run left
    gst_bus_set_flushing(bus, FALSE);
  }
  gst_object_unref(bus);
  gst_object_unref(p);
}

TEST(GpuDecoder, FourPipelinesAtOnceEqualOneAtATime) {
  const std::string gram = data("cards/cards.gram");
  std::vector<std::string> descs;
  for (int i = 2; i <= 5; ++i)
    descs.push_back(wav_source(data("cards/00" + std::to_string(i) + ".wav")) + " ! " +
                    features() + " ! " + decoder(gram) + " ! fakesink");
  std::vector<std::vector<Result>> alone;
  for (const std::string& d : descs) {
    const PipelineRun r = run_pipeline(d);
    ASSERT_TRUE(r.eos) << r.error_text();
    alone.push_back(r.finals());
  }
  std::vector<GstElement*> ps;
  for (const std::string& d : descs) ps.push_back(launch(d));
  for (GstElement* p : ps) ASSERT_NE(gst_element_set_state(p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  for (size_t i = 0; i < ps.size(); ++i) {
    GstBus* bus = gst_element_get_bus(ps[i]);
    PipelineRun run;
    while (GstMessage* m = gst_bus_timed_pop(bus, 60 * GST_SECOND)) {
      const bool done = take_message(m, run);
      gst_message_unref(m);
      if (done) break;
    }
    EXPECT_TRUE(run.eos) << run.error_text();
    const auto finals = run.finals();
    ASSERT_EQ(finals.size(), alone[i].size());
    for (size_t k = 0; k < finals.size(); ++k) {
      EXPECT_EQ(finals[k].hypothesis, alone[i][k].hypothesis);
      ASSERT_EQ(finals[k].words.size(), alone[i][k].words.size());
      for (size_t w = 0; w < finals[k].words.size(); ++w) {
        EXPECT_EQ(finals[k].words[w].start, alone[i][k].words[w].start);
        EXPECT_EQ(finals[k].words[w].end, alone[i][k].words[w].end);
      }
    }
    gst_object_unref(bus);
  }
  for (GstElement* p : ps) {
    gst_element_set_state(p, GST_STATE_NULL);
    gst_object_unref(p);
  }
}

}  // namespace
}  // namespace gpuspeech
