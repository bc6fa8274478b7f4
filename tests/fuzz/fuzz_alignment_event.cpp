// libFuzzer target: the "gpuspeech-alignment" upstream event's parser
// (gst/gpuspeech_alignment_event.h). gpufmllr trusts what it returns to index
// its model, and any element or application may send such an event, so the
// parser must refuse every malformed one.
//
// The fuzzed bytes describe the event, read from the front:
//   byte  structure name: 0 "gpuspeech-alignment", 1 a near miss, 2 another
//   byte  event type: 0 custom upstream, 1 custom downstream, 2 custom both,
//         3 custom downstream out-of-band
//   then fields until the bytes run out, each:
//   byte  name: 0..5 the six required fields of the header in its order,
//         6 another, 7 the optional "segment-seqnum"
//   byte  type: 0 guint64, 1 gint64, 2 gint, 3 guint, 4 string, 5 GBytes,
//         6 gdouble, 7 GstBuffer
//   value: numbers 8 bytes little-endian (cut to the type); a string one
//         length byte then its bytes (made valid UTF-8); GBytes a length
//         byte, an offset byte (0..3: the data need not be aligned for
//         gint32) then the bytes; a GstBuffer a length byte then its bytes.
// A field given twice keeps its last value. (The structure is built here
// rather than parsed with gst_structure_from_string(): that parser is
// GStreamer's, fuzzed by GStreamer, and in 1.22 leaks on some malformed
// lists, which would fail this target for a bug that is not ours.)
// tests/fuzz/make_alignment_event_seeds.py writes the seed corpus.
//
// The parser must either refuse the event and leave its outputs untouched,
// or accept it (only a custom upstream event) with every field within the
// rules of the header (a frame duration of at most a second, the end of the
// last frame within GstClockTimeDiff's range, a segment-seqnum that is a
// guint if present), and then the same values must make an event through
// gpuspeech_alignment_event_new() that parses back to them. Passing no
// outputs must not change the answer. Anything else is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gst/gst.h>

#include "gst/gpuspeech_alignment_event.h"

namespace {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{byte()} << (8 * i);
    return v;
  }
  std::string bytes(size_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

const char* const kFieldNames[] = {"timestamp", "frame-duration", "senones",
                                   "num-senones", "model",          "utterance",
                                   "senone",    "segment-seqnum"};

void set_field(GstStructure* s, Reader& in) {
  const char* name = kFieldNames[in.byte() % 8];
  GValue v = G_VALUE_INIT;
  switch (in.byte() % 8) {
    case 0:
      g_value_init(&v, G_TYPE_UINT64);
      g_value_set_uint64(&v, in.u64());
      break;
    case 1:
      g_value_init(&v, G_TYPE_INT64);
      g_value_set_int64(&v, static_cast<gint64>(in.u64()));
      break;
    case 2:
      g_value_init(&v, G_TYPE_INT);
      g_value_set_int(&v, static_cast<gint>(static_cast<uint32_t>(in.u64())));
      break;
    case 3:
      g_value_init(&v, G_TYPE_UINT);
      g_value_set_uint(&v, static_cast<guint>(in.u64()));
      break;
    case 4: {
      g_value_init(&v, G_TYPE_STRING);
      // GstStructure drops (with a warning) a string that is not UTF-8.
      const std::string text = in.bytes(in.byte());
      gchar* utf8 = g_utf8_make_valid(text.data(), static_cast<gssize>(text.size()));
      g_value_take_string(&v, utf8);
      break;
    }
    case 5: {
      const size_t n = in.byte();
      const size_t offset = in.byte() % 4;
      const std::string data = std::string(offset, '\0') + in.bytes(n);
      GBytes* whole = g_bytes_new(data.data(), data.size());
      g_value_init(&v, G_TYPE_BYTES);
      g_value_take_boxed(&v, g_bytes_new_from_bytes(whole, offset, data.size() - offset));
      g_bytes_unref(whole);
      break;
    }
    case 6: {
      const uint64_t bits = in.u64();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      g_value_init(&v, G_TYPE_DOUBLE);
      g_value_set_double(&v, d);
      break;
    }
    default: {
      const std::string data = in.bytes(in.byte());
      g_value_init(&v, GST_TYPE_BUFFER);
      g_value_take_boxed(&v, data.empty() ? gst_buffer_new()  // memdup refuses 0 bytes
                                          : gst_buffer_new_memdup(data.data(), data.size()));
      break;
    }
  }
  gst_structure_take_value(s, name, &v);
}

struct Parsed {
  GstClockTime timestamp = 11;
  guint64 frame_duration = 22;
  GBytes* senones = nullptr;
  gint num_senones = 33;
  const gchar* model = nullptr;
  guint utterance = 44;
  guint32 segment_seqnum = 55;
};

gboolean parse(GstEvent* event, Parsed* p) {
  return gpuspeech_alignment_event_parse(event, &p->timestamp, &p->frame_duration, &p->senones,
                                         &p->num_senones, &p->model, &p->utterance,
                                         &p->segment_seqnum);
}

// The senones as gint32 (the GBytes data need not be aligned).
std::vector<gint32> senone_values(GBytes* bytes) {
  gsize size = 0;
  const void* data = g_bytes_get_data(bytes, &size);
  std::vector<gint32> v(size / sizeof(gint32));
  if (!v.empty()) std::memcpy(v.data(), data, v.size() * sizeof(gint32));
  return v;
}

void check_accepted(const Parsed& p) {
  if (!GST_CLOCK_TIME_IS_VALID(p.timestamp) || p.frame_duration == 0 ||
      p.frame_duration > GPUSPEECH_ALIGNMENT_MAX_FRAME_DURATION)
    __builtin_trap();
  if (p.num_senones <= 0 || !p.model || !p.senones) __builtin_trap();
  const gsize size = g_bytes_get_size(p.senones);
  if (size == 0 || size % sizeof(gint32) != 0) __builtin_trap();
  // The end of the last frame fits in a GstClockTimeDiff (checked in 128
  // bits, so that this check cannot overflow where the parser's might).
  const unsigned __int128 end =
      static_cast<unsigned __int128>(p.timestamp) +
      static_cast<unsigned __int128>(size / sizeof(gint32)) * p.frame_duration;
  if (end > static_cast<unsigned __int128>(G_MAXINT64)) __builtin_trap();
  const std::vector<gint32> senones = senone_values(p.senones);
  for (const gint32 s : senones)
    if (s < -1 || s >= p.num_senones) __builtin_trap();

  // What was accepted must be what the constructor makes and accepts.
  GstEvent* again = gpuspeech_alignment_event_new(p.timestamp, p.frame_duration, senones.data(),
                                                  senones.size(), p.num_senones, p.model,
                                                  p.utterance, p.segment_seqnum);
  if (!again) __builtin_trap();
  Parsed q;
  if (!parse(again, &q)) __builtin_trap();
  if (q.timestamp != p.timestamp || q.frame_duration != p.frame_duration ||
      q.num_senones != p.num_senones || std::strcmp(q.model, p.model) != 0 ||
      q.utterance != p.utterance || q.segment_seqnum != p.segment_seqnum ||
      !g_bytes_equal(q.senones, p.senones))
    __builtin_trap();
  g_bytes_unref(q.senones);
  gst_event_unref(again);
}

// The structure is built within GLib's rules, so a critical can only come
// from the parser misusing an API (a getter of the wrong type): a bug. It
// aborts, which libFuzzer reports with the input (GLib's own fatal criticals
// end in SIGTRAP, which it does not catch).
void abort_on_critical(const gchar* domain, GLogLevelFlags level, const gchar* message,
                       gpointer data) {
  g_log_default_handler(domain, level, message, data);
  if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Only the core types are needed: no plugin registry to load or scan.
  g_setenv("GST_REGISTRY_DISABLE", "yes", TRUE);
  gst_init(nullptr, nullptr);
  g_log_set_default_handler(abort_on_critical, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  static const char* const kNames[] = {GPUSPEECH_ALIGNMENT_EVENT, "gpuspeech-alignmen",
                                       "gpuspeech-alignment-x"};
  static const GstEventType kTypes[] = {GST_EVENT_CUSTOM_UPSTREAM, GST_EVENT_CUSTOM_DOWNSTREAM,
                                        GST_EVENT_CUSTOM_BOTH, GST_EVENT_CUSTOM_DOWNSTREAM_OOB};
  GstStructure* s = gst_structure_new_empty(kNames[in.byte() % 3]);
  const GstEventType type = kTypes[in.byte() % 4];
  while (!in.done()) set_field(s, in);

  GstEvent* event = gst_event_new_custom(type, s);
  if (!event) __builtin_trap();
  Parsed p;
  const gboolean accepted = parse(event, &p);
  if (gpuspeech_alignment_event_parse(event, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      nullptr) != accepted)
    __builtin_trap();
  if (accepted) {
    if (type != GST_EVENT_CUSTOM_UPSTREAM) __builtin_trap();
    check_accepted(p);
    // The optional field: what the event holds, or unknown without it.
    const GValue* seqnum = gst_structure_get_value(gst_event_get_structure(event), "segment-seqnum");
    if (seqnum ? !G_VALUE_HOLDS_UINT(seqnum) || g_value_get_uint(seqnum) != p.segment_seqnum
               : p.segment_seqnum != GST_SEQNUM_INVALID)
      __builtin_trap();
    g_bytes_unref(p.senones);
  } else {
    const Parsed untouched;
    if (p.timestamp != untouched.timestamp || p.frame_duration != untouched.frame_duration ||
        p.senones || p.num_senones != untouched.num_senones || p.model ||
        p.utterance != untouched.utterance || p.segment_seqnum != untouched.segment_seqnum)
      __builtin_trap();
  }
  gst_event_unref(event);
  return 0;
}
