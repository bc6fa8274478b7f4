/**
 * SECTION:element-gpufmllr
 * @title: gpufmllr
 * @see_also: gpufeatures, gpudecoder
 *
 * Adapts a feature stream to its speaker while it flows: feature-space
 * MLLR (fMLLR, constrained MLLR), x' = A x + b, estimated online under the
 * acoustic model that scores the features downstream (common/fmllr/
 * online_fmllr.h; docs/fmllr.md explains the scheme). It goes between
 * `gpufeatures` and `gpudecoder`; caps in and out are the same
 * `audio/x-gpuspeech-features` (docs/feature-caps.md), and only the values
 * of the frames change. The transform is applied on the chosen backend
 * (one matrix product per buffer); until there is a transform (identity)
 * frames pass bit for bit. Live CMN's trace on the buffers
 * (GpuspeechCmnMeta, which gpudecoder's `utterance-cmn` reads) is taken
 * off: it describes the frames as gpufeatures made them.
 *
 * Supervision (`supervision`): gpudecoder (with `send-alignments`, its
 * default) sends a `gpuspeech-alignment` event up its sink pad for every
 * group of words that became final: the senone each of their frames was
 * aligned to (gst/gpuspeech_alignment_event.h). gpufmllr keeps the last
 * 30 s of frames (raw and adapted, by buffer time), finds the aligned
 * frames among them, and accumulates fMLLR statistics: posteriors within
 * the aligned senone on the adapted frames, statistics on the raw ones.
 * Aligned frames that already left the history are dropped and counted
 * (`late-frames`, and a warning in the debug log). `unsupervised` instead
 * takes posteriors from all of the model's Gaussians as one flat mixture
 * for every frame, with no decoder needed; `auto` (the default) does that
 * until the first alignment event arrives and uses the decoder alone from
 * then on. After every `update-interval` seconds of new supervised speech
 * the transform is re-estimated from all statistics of the current
 * speaker, starting from the current transform; it applies to the frames
 * that follow. What is estimated grows with the statistics (`update-type`
 * auto, the default): the offset b alone at first, A's diagonal as well
 * once there are `frames-per-parameter` (2) frames for each of its 2d
 * parameters (156 frames for d = 39), the full matrix once there are
 * 2 d (d+1) (3120 frames, 31 s of speech): a full transform from a few
 * seconds overfits (docs/fmllr.md).
 * With less than `min-frames` frames of statistics, or
 * statistics that give no usable transform, the transform is kept and the
 * message says why.
 *
 * The alignment events must come from a decoder that uses the same
 * acoustic model (`hmm`); events whose `num-senones` differs are ignored
 * with a warning. Buffer times start again in a new segment (a flushing
 * seek, a segment seek, concatenated streams), so an alignment that comes
 * late could name frames of the new segment that have the old ones' times:
 * an event whose `segment-seqnum` is not the seqnum of the SEGMENT event
 * that came before the frames now in the history (the last one followed by
 * a buffer) is dropped, and its frames counted (`stale-frames`, and a line
 * in the debug log); an event without one (an older sender) is matched by
 * time alone. Elements between gpufmllr and the decoder must forward
 * SEGMENT events keeping their seqnum, as GStreamer's rules ask. The events
 * are forwarded upstream after use.
 *
 * Speakers. The `speaker` property names the current speaker, and so does
 * a tag event (the tag named by `speaker-tag`: GST_TAG_PERFORMER,
 * "performer", by default, the reader of a recording; artist would name an
 * author for audiobooks): whichever comes last. A new speaker starts with
 * empty statistics and the transform saved for it in `transform-dir`
 * (`transform-dir/<speaker>.mat`, Kaldi text matrix, as `copy-matrix
 * --binary=false` writes and `transform-feats` reads; characters other
 * than letters, digits, '-', '_' and '.' are written %XX), else the
 * `initial-transform`, else the identity. Every successful estimation
 * rewrites the speaker's file. The anonymous speaker (`speaker` unset, no
 * tag) is adapted but never saved or loaded.
 *
 * Bus messages (with `post-messages`, the default):
 *
 * `gpufmllr`, at every estimation:
 * - `speaker` (string): the speaker whose statistics were used ("" for the
 *   anonymous one).
 * - `supervision` (string): "decoder" or "unsupervised": where the
 *   statistics came from.
 * - `outcome` (string): "updated" (the new transform applies from the next
 *   buffer), "too-few-frames" (fewer than `min-frames`: the transform is
 *   kept) or "refused" (statistics that give no safe transform: kept).
 * - `update-type` (string): "full", "block", "diag" or "offset": the part of
 *   [A b] estimated (with `update-type` auto, chosen by `frames`).
 * - `message` (string): why not updated, or which dimensions needed
 *   regularisation; "" otherwise.
 * - `frames` (gdouble): the speaker's statistics, in (posterior-weighted)
 *   frames.
 * - `objective-before`, `objective-after` (gdouble): the fMLLR auxiliary
 *   function per frame (log-likelihood up to a constant, Jacobian
 *   included) of the transform before and after; equal when not updated.
 * - `log-det` (gdouble): ln |det A| of the transform in use afterwards.
 * - `estimation` (guint64): estimations so far (all speakers), from 1.
 * - `updates` (guint64): how many of them changed the transform.
 * - `late-frames` (guint64): aligned frames dropped so far because they
 *   had left the history.
 * - `stale-frames` (guint64): aligned frames dropped so far because their
 *   event named another segment (`segment-seqnum`).
 * - `saved` (string): the file the transform was written to, "" if none.
 *
 * `gpufmllr-speaker`, when the speaker changes (and once at start):
 * - `speaker` (string).
 * - `transform` (string): where its transform came from: "saved",
 *   "initial" or "identity".
 * - `file` (string): the speaker's file in `transform-dir` ("" without
 *   one).
 *
 * Errors. A missing or malformed `hmm`, or an `initial-transform` that
 * cannot be read, is malformed or does not have the model's size (d rows
 * of d + 1), is an error message naming the file and the reason
 * (RESOURCE/NOT_FOUND or RESOURCE/SETTINGS) when the element starts, and
 * the state change fails; so is a malformed saved transform of the
 * speaker it starts with. A malformed saved transform of a speaker that
 * arrives later is a warning (the speaker starts from the initial
 * transform or the identity). Feature caps whose `dim` is not the model's
 * fail negotiation with an error naming both (once for the same caps, as
 * upstream retries them with every buffer). A transform file that cannot
 * be written is a warning. A failure of the adaptation itself (the backend
 * cannot take a speaker's transform, or memory runs out) while switching
 * speakers is an error naming the speaker, its file and the reason, and
 * the stream stops; while using an alignment it is a warning, and later
 * alignments are ignored (the transform in use stays). Frames with NaN or
 * infinite values pass unchanged by the identity (transformed otherwise)
 * and never enter the statistics, so no estimate is ever NaN.
 *
 * Threads: alignment events arrive from gpudecoder's streaming thread
 * (gpudecoder pushes them from its chain function), buffers in this
 * element's; the adaptation state has a lock of its own, held neither
 * while pushing nor while posting messages, and lives until the last of
 * them is done with it (an alignment may still be in use when the element
 * stops).
 *
 * ## Example launch lines
 * |[
 * M=/usr/share/pocketsphinx/model/en-us/en-us
 * gst-launch-1.0 -m filesrc location=speech.wav ! decodebin ! audioconvert ! \
 *     audioresample ! gpufeatures feat-params=$M/feat.params cmn=live ! \
 *     gpufmllr speaker=alice transform-dir=fmllr ! gpudecoder ! fakesink
 * ]| Decodes with online adaptation, supervised by the decoder's own
 * words; saves alice's transform as fmllr/alice.mat and starts from it next
 * time.
 * |[
 * gst-launch-1.0 ... ! gpufeatures feat-params=$M/feat.params ! \
 *     gpufmllr supervision=unsupervised ! filesink location=adapted.feat
 * ]| Writes speaker-adapted features, without a decoder.
 */
#include "gstgpufmllr.h"

#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/online_fmllr.h"
#include "common/model/acoustic_model.h"
#include "common/engine/recognizer.h"
#include "gpuspeech_cmn_meta.h"
#include "gpuspeech_alignment_event.h"
#include "gpuspeech_backend_choice.h"
#include "gstgpufeatures.h"

/* Design: a GstBaseTransform working in place: one buffer in, the same
 * frames out, same caps. All the adaptation logic is in
 * gpuspeech::OnlineFmllr; this file connects it to caps, buffer times,
 * tags, the upstream alignment event and the bus. */

GST_DEBUG_CATEGORY_STATIC (gst_gpu_fmllr_debug);
#define GST_CAT_DEFAULT gst_gpu_fmllr_debug

namespace gs = gpuspeech;

/* ------------------------------------------------------------------------ */
/* Enumerations for the properties                                          */



#define GST_TYPE_GPU_FMLLR_SUPERVISION (gst_gpu_fmllr_supervision_get_type ())
static GType
gst_gpu_fmllr_supervision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::FmllrSupervision::kAuto,
        "Unsupervised until the first alignment event, then the decoder's "
          "alignments only", "auto"},
    {(gint) gs::FmllrSupervision::kDecoder,
        "The decoder's alignment events only", "decoder"},
    {(gint) gs::FmllrSupervision::kUnsupervised,
        "Posteriors from all of the model's Gaussians; alignment events "
          "ignored", "unsupervised"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFmllrSupervision", values));
  return type;
}

/* update-type: FmllrUpdateType's values, and auto (not one of them: the
 * type is then chosen by the amount of statistics,
 * OnlineFmllrOptions::update_type_by_data). */
#define GPU_FMLLR_UPDATE_AUTO 100
#define GST_TYPE_GPU_FMLLR_UPDATE_TYPE (gst_gpu_fmllr_update_type_get_type ())
static GType
gst_gpu_fmllr_update_type_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GPU_FMLLR_UPDATE_AUTO, "By the amount of statistics: offset, then "
          "diagonal, then full, each once there are frames-per-parameter "
          "frames for each of its parameters", "auto"},
    {(gint) gs::FmllrUpdateType::kFull,
        "Full matrix and offset (d x (d+1) parameters)", "full"},
    {(gint) gs::FmllrUpdateType::kBlock,
        "Matrix of three diagonal blocks (static, delta, acceleration) and "
          "offset (d(d/3+1) parameters)", "block"},
    {(gint) gs::FmllrUpdateType::kDiag,
        "Diagonal matrix and offset (2d parameters)", "diag"},
    {(gint) gs::FmllrUpdateType::kOffset, "Offset only (d parameters)",
        "offset"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFmllrUpdateType", values));
  return type;
}

/* ------------------------------------------------------------------------ */
/* Properties                                                               */

enum
{
  PROP_0,
  PROP_HMM,
  PROP_SPEAKER,
  PROP_SPEAKER_TAG,
  PROP_TRANSFORM_DIR,
  PROP_INITIAL_TRANSFORM,
  PROP_UPDATE_INTERVAL,
  PROP_MIN_FRAMES,
  PROP_UPDATE_TYPE,
  PROP_FRAMES_PER_PARAMETER,
  PROP_SUPERVISION,
  PROP_POST_MESSAGES,
  PROP_BACKEND,
  PROP_DEVICE_ID,
};

#define DEFAULT_SPEAKER_TAG GST_TAG_PERFORMER

/* Property values, under the object lock. Empty strings mean unset. The
 * numeric defaults are OnlineFmllrOptions' (one place). */
struct Settings
{
  std::string hmm, speaker, transform_dir, initial_transform;
  std::string speaker_tag = DEFAULT_SPEAKER_TAG;
  gs::OnlineFmllrOptions online;
  gboolean post_messages = TRUE;
  gpuspeech::BackendChoice backend = gpuspeech::BackendChoice::kAuto;
  gint device_id = 0;
  /* `speaker` was set since the streaming thread last looked */
  gboolean speaker_pending = FALSE;
};

/* Everything the element uses while started; built in start(). Shared:
 * alignment events come from downstream's streaming thread, which may still
 * be in src_event() when stop() lets go of the state, so each user holds a
 * reference (get_state()) for as long as it uses it. */
struct State
{
  std::string model_dir;
  std::unique_ptr < gs::AcousticModel > model;
  gs::BackendPtr backend;
  gint dim = 0;

  /* `online` and the fields from here to the next comment are used under
   * `lock`: alignment events come from downstream's thread. */
  std::mutex lock;
  std::unique_ptr < gs::OnlineFmllr > online;
  gboolean warned_model = FALSE;
  gint64 late_reported = 0;
  /* Segments (see the top of this file): the seqnum of the SEGMENT event
   * before the frames now in the history, and of one that came after them
   * and applies from the next buffer (GST_SEQNUM_INVALID: none). */
  guint32 segment_seqnum = GST_SEQNUM_INVALID;
  guint32 pending_segment_seqnum = GST_SEQNUM_INVALID;
  guint64 stale_frames = 0;     /* aligned frames of another segment */
  /* An alignment made the adaptation fail: later ones are ignored. */
  gboolean alignments_failed = FALSE;

  /* The streaming thread's alone. */
  gboolean caps_ok = FALSE;
  GstClockTime frame_duration = 10 * GST_MSECOND;
  GstClockTime next_time = 0;   /* for buffers without PTS */
  /* The last caps refused, with the error already posted: sticky caps come
   * again with every push upstream retries, and one error message is what
   * an application (and gst-launch, prerolling) should see, as in
   * gpufeatures. Likewise buffers without accepted caps: one error. */
  GstCaps *refused_caps = NULL;
  gboolean unnegotiated_reported = FALSE;

  State () = default;
  State (const State &) = delete;
  State & operator= (const State &) = delete;
  ~State ()
  {
    if (refused_caps)
      gst_caps_unref (refused_caps);
  }
};

struct _GstGpuFmllr
{
  GstBaseTransform parent;
  Settings *settings;
  /* The state while started, else empty; the pointer itself under the
   * object lock (get_state()). */
  std::shared_ptr < State > *state;
};

G_DEFINE_TYPE_WITH_CODE (GstGpuFmllr, gst_gpu_fmllr, GST_TYPE_BASE_TRANSFORM,
    GST_DEBUG_CATEGORY_INIT (gst_gpu_fmllr_debug, "gpufmllr", 0,
        "online fMLLR speaker adaptation of feature frames"));
GST_ELEMENT_REGISTER_DEFINE (gpufmllr, "gpufmllr", GST_RANK_NONE,
    GST_TYPE_GPU_FMLLR);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPUSPEECH_FEATURES_MEDIA_TYPE ", format = (string) F32LE"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPUSPEECH_FEATURES_MEDIA_TYPE ", format = (string) F32LE"));

static void gst_gpu_fmllr_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpu_fmllr_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_gpu_fmllr_finalize (GObject * object);
static gboolean gst_gpu_fmllr_start (GstBaseTransform * trans);
static gboolean gst_gpu_fmllr_stop (GstBaseTransform * trans);
static gboolean gst_gpu_fmllr_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static GstFlowReturn gst_gpu_fmllr_transform_ip (GstBaseTransform * trans,
    GstBuffer * buf);
static gboolean gst_gpu_fmllr_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static gboolean gst_gpu_fmllr_src_event (GstBaseTransform * trans,
    GstEvent * event);

static void
gst_gpu_fmllr_class_init (GstGpuFmllrClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw =
      (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);
  const GParamFlags rw_playing =
      (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);
  const gs::OnlineFmllrOptions defaults;

  gobject_class->set_property = gst_gpu_fmllr_set_property;
  gobject_class->get_property = gst_gpu_fmllr_get_property;
  gobject_class->finalize = gst_gpu_fmllr_finalize;

  g_object_class_install_property (gobject_class, PROP_HMM,
      g_param_spec_string ("hmm", "Acoustic model",
          "Directory of the Sphinx acoustic model whose Gaussians the "
          "statistics use: the decoder's model. NULL: "
          "/usr/share/pocketsphinx/model/en-us/en-us", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_SPEAKER,
      g_param_spec_string ("speaker", "Speaker",
          "The current speaker: a new one starts from its saved transform "
          "(transform-dir), else initial-transform, else the identity, with "
          "empty statistics; takes effect at the next buffer. A tag event "
          "(speaker-tag) also sets it. NULL: anonymous (never saved)",
          NULL, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SPEAKER_TAG,
      g_param_spec_string ("speaker-tag", "Speaker tag",
          "The tag whose value names the speaker when a tag event carries "
          "it (e.g. performer, artist); NULL or empty: tags are ignored",
          DEFAULT_SPEAKER_TAG, rw));
  g_object_class_install_property (gobject_class, PROP_TRANSFORM_DIR,
      g_param_spec_string ("transform-dir", "Transform directory",
          "Directory of per-speaker transforms, DIR/<speaker>.mat (Kaldi "
          "text matrix): loaded when the speaker starts, written after "
          "every update (the directory is created). NULL: none",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_INITIAL_TRANSFORM,
      g_param_spec_string ("initial-transform", "Initial transform",
          "Kaldi text matrix file, d x (d+1) for the model's d: the "
          "transform of speakers with no saved one. NULL: the identity",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_UPDATE_INTERVAL,
      g_param_spec_double ("update-interval", "Update interval",
          "Seconds of new supervised speech (posterior-weighted frames over "
          "the frame rate) between re-estimations of the transform",
          0.01, 3600.0, defaults.update_interval_seconds, rw));
  g_object_class_install_property (gobject_class, PROP_MIN_FRAMES,
      g_param_spec_double ("min-frames", "Minimum frames",
          "Frames of statistics (posterior-weighted) a speaker needs before "
          "a transform is estimated; below it the transform is kept",
          0.0, 1e9, defaults.estimation.min_frames, rw));
  g_object_class_install_property (gobject_class, PROP_UPDATE_TYPE,
      g_param_spec_enum ("update-type", "Update type",
          "Which part of [A b] is estimated: full needs the most data, "
          "offset the least; auto grows it with the speaker's statistics "
          "(frames-per-parameter), so that a few seconds of speech never "
          "estimate 1560 parameters", GST_TYPE_GPU_FMLLR_UPDATE_TYPE,
          defaults.update_type_by_data ? GPU_FMLLR_UPDATE_AUTO :
          (gint) defaults.estimation.update, rw));
  g_object_class_install_property (gobject_class, PROP_FRAMES_PER_PARAMETER,
      g_param_spec_double ("frames-per-parameter", "Frames per parameter",
          "With update-type auto: frames of statistics wanted for each "
          "estimated parameter before a richer type is used (diag from "
          "2d times this, full from d(d+1) times this)",
          0.01, 1e6, defaults.frames_per_parameter, rw));
  g_object_class_install_property (gobject_class, PROP_SUPERVISION,
      g_param_spec_enum ("supervision", "Supervision",
          "Where frame posteriors come from: the decoder's alignment "
          "events, the model's Gaussians unsupervised, or auto (the "
          "latter until the first alignment event, then the former)",
          GST_TYPE_GPU_FMLLR_SUPERVISION, (gint) defaults.supervision, rw));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a gpufmllr element message at every estimation and a "
          "gpufmllr-speaker message at every speaker change", TRUE,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where statistics and the transform are computed: auto takes a "
          "CUDA device, else an OpenCL GPU, else the CPU; a named backend "
          "that is unavailable is an error", GPUSPEECH_TYPE_BACKEND_CHOICE,
          (gint) gpuspeech::BackendChoice::kAuto, rw));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device",
          "Device index for the cuda and opencl backends", 0, G_MAXINT, 0,
          rw));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Online fMLLR speaker adaptation", "Filter/Audio/Analyzer",
      "Adapts speech feature frames to the speaker with a feature-space MLLR "
      "transform estimated online from the decoder's alignments or "
      "unsupervised, on the GPU (CUDA, OpenCL) or the CPU",
      "gpuspeech");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_sink_event);
  trans_class->src_event = GST_DEBUG_FUNCPTR (gst_gpu_fmllr_src_event);
  /* Same caps in and out; the frames change but their layout does not. */
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GPUSPEECH_TYPE_BACKEND_CHOICE,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FMLLR_SUPERVISION,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FMLLR_UPDATE_TYPE,
      (GstPluginAPIFlags) 0);
}

static void
gst_gpu_fmllr_init (GstGpuFmllr * self)
{
  self->settings = new Settings ();
  self->state = new std::shared_ptr < State > ();
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}

static void
gst_gpu_fmllr_finalize (GObject * object)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (object);
  delete self->state;
  self->state = NULL;
  delete self->settings;
  G_OBJECT_CLASS (gst_gpu_fmllr_parent_class)->finalize (object);
}

static void
set_string (std::string & field, const GValue * value)
{
  const gchar *s = g_value_get_string (value);
  field = s ? s : "";
}

static void
get_string (GValue * value, const std::string & field)
{
  g_value_set_string (value, field.empty ()? NULL : field.c_str ());
}

static void
gst_gpu_fmllr_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (object);
  GST_OBJECT_LOCK (self);
  Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_HMM:
      set_string (s.hmm, value);
      break;
    case PROP_SPEAKER:
      set_string (s.speaker, value);
      s.speaker_pending = TRUE;
      break;
    case PROP_SPEAKER_TAG:
      set_string (s.speaker_tag, value);
      break;
    case PROP_TRANSFORM_DIR:
      set_string (s.transform_dir, value);
      break;
    case PROP_INITIAL_TRANSFORM:
      set_string (s.initial_transform, value);
      break;
    case PROP_UPDATE_INTERVAL:
      s.online.update_interval_seconds = g_value_get_double (value);
      break;
    case PROP_MIN_FRAMES:
      s.online.estimation.min_frames = g_value_get_double (value);
      break;
    case PROP_UPDATE_TYPE:{
      const gint v = g_value_get_enum (value);
      s.online.update_type_by_data = v == GPU_FMLLR_UPDATE_AUTO;
      if (v != GPU_FMLLR_UPDATE_AUTO)
        s.online.estimation.update = (gs::FmllrUpdateType) v;
      break;
    }
    case PROP_FRAMES_PER_PARAMETER:
      s.online.frames_per_parameter = g_value_get_double (value);
      break;
    case PROP_SUPERVISION:
      s.online.supervision = (gs::FmllrSupervision) g_value_get_enum (value);
      break;
    case PROP_POST_MESSAGES:
      s.post_messages = g_value_get_boolean (value);
      break;
    case PROP_BACKEND:
      s.backend = (gpuspeech::BackendChoice) g_value_get_enum (value);
      break;
    case PROP_DEVICE_ID:
      s.device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_fmllr_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (object);
  GST_OBJECT_LOCK (self);
  const Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_HMM:
      get_string (value, s.hmm);
      break;
    case PROP_SPEAKER:
      get_string (value, s.speaker);
      break;
    case PROP_SPEAKER_TAG:
      get_string (value, s.speaker_tag);
      break;
    case PROP_TRANSFORM_DIR:
      get_string (value, s.transform_dir);
      break;
    case PROP_INITIAL_TRANSFORM:
      get_string (value, s.initial_transform);
      break;
    case PROP_UPDATE_INTERVAL:
      g_value_set_double (value, s.online.update_interval_seconds);
      break;
    case PROP_MIN_FRAMES:
      g_value_set_double (value, s.online.estimation.min_frames);
      break;
    case PROP_UPDATE_TYPE:
      g_value_set_enum (value, s.online.update_type_by_data ?
          GPU_FMLLR_UPDATE_AUTO : (gint) s.online.estimation.update);
      break;
    case PROP_FRAMES_PER_PARAMETER:
      g_value_set_double (value, s.online.frames_per_parameter);
      break;
    case PROP_SUPERVISION:
      g_value_set_enum (value, (gint) s.online.supervision);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, s.post_messages);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, (gint) s.backend);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, s.device_id);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */

static gboolean
posting (GstGpuFmllr * self)
{
  GST_OBJECT_LOCK (self);
  const gboolean post = self->settings->post_messages;
  GST_OBJECT_UNLOCK (self);
  return post;
}

static const char *
outcome_name (gs::FmllrOutcome o)
{
  switch (o) {
    case gs::FmllrOutcome::kUpdated:
      return "updated";
    case gs::FmllrOutcome::kTooFewFrames:
      return "too-few-frames";
    case gs::FmllrOutcome::kRefused:
      return "refused";
  }
  return "?";
}

/* Reports an estimation: the message, and a warning for a file that could
 * not be written. Called without the state lock. */
static void
report_update (GstGpuFmllr * self, const gs::OnlineFmllrUpdate & u,
    const gs::OnlineFmllrCounters & c, guint64 stale_frames)
{
  GST_INFO_OBJECT (self, "speaker '%s': %s (%s) from %.0f frames (%s), "
      "objective %.4f -> %.4f, ln|det A| %.4f%s%s", u.speaker.c_str (),
      outcome_name (u.outcome), gs::to_string (u.update_type), u.frames,
      gs::to_string (u.source),
      u.objective_before, u.objective_after, u.log_det,
      u.message.empty ()? "" : ": ", u.message.c_str ());
  if (!u.save_error.empty ())
    GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
        ("gpufmllr: cannot save the transform of speaker '%s': %s",
            u.speaker.c_str (), u.save_error.c_str ()), (NULL));
  if (!posting (self))
    return;
  GstStructure *s = gst_structure_new (GPUSPEECH_FMLLR_MESSAGE,
      "speaker", G_TYPE_STRING, u.speaker.c_str (),
      "supervision", G_TYPE_STRING, gs::to_string (u.source),
      "outcome", G_TYPE_STRING, outcome_name (u.outcome),
      "update-type", G_TYPE_STRING, gs::to_string (u.update_type),
      "message", G_TYPE_STRING, u.message.c_str (),
      "frames", G_TYPE_DOUBLE, u.frames,
      "objective-before", G_TYPE_DOUBLE, u.objective_before,
      "objective-after", G_TYPE_DOUBLE, u.objective_after,
      "log-det", G_TYPE_DOUBLE, u.log_det,
      "estimation", G_TYPE_UINT64, (guint64) c.estimations,
      "updates", G_TYPE_UINT64, (guint64) c.updates,
      "late-frames", G_TYPE_UINT64, (guint64) c.frames_late,
      "stale-frames", G_TYPE_UINT64, stale_frames,
      "saved", G_TYPE_STRING, u.saved_path.c_str (), NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* The state while started (a reference: see State), else empty. */
static std::shared_ptr < State >
get_state (GstGpuFmllr * self)
{
  GST_OBJECT_LOCK (self);
  std::shared_ptr < State > st = *self->state;
  GST_OBJECT_UNLOCK (self);
  return st;
}

/* What a speaker change did, for the message and the warning. */
struct SpeakerReport
{
  std::string speaker;
  gs::OnlineFmllr::SpeakerChange change;
  gboolean has_initial = FALSE;
};

static void
post_speaker (GstGpuFmllr * self, const SpeakerReport & r)
{
  GST_INFO_OBJECT (self, "speaker '%s' starts from %s", r.speaker.c_str (),
      r.change.loaded ? r.change.path.c_str () : r.has_initial ?
      "the initial transform" : "the identity");
  if (!posting (self))
    return;
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("gpufmllr-speaker",
              "speaker", G_TYPE_STRING, r.speaker.c_str (),
              "transform", G_TYPE_STRING, r.change.loaded ? "saved" :
              r.has_initial ? "initial" : "identity",
              "file", G_TYPE_STRING, r.change.path.c_str (), NULL)));
}

/* Switches to `speaker` (streaming thread, or start()); `report` says what
 * happened. A saved file that is unusable is not a failure (it is in
 * report->change.error, and the fallback transform is used). Returns FALSE,
 * with `why`, when the switch itself failed: an exception from
 * OnlineFmllr::set_speaker (the backend could not take the transform, a
 * file system or memory failure). The adaptation state is then not to be
 * trusted (the new speaker may be half set up), so callers stop the
 * stream. `file` is the speaker's transform file, for messages. Nothing is
 * thrown: the callers are GStreamer's (C) callbacks. */
static gboolean
change_speaker (State * st, const std::string & speaker,
    SpeakerReport * report, std::string * file, std::string * why)
{
  try {
    std::lock_guard < std::mutex > guard (st->lock);
    report->speaker = speaker;
    *file = st->online->transform_path (speaker);
    report->change = st->online->set_speaker (speaker);
    report->has_initial = !st->online->options ().initial_transform.empty ();
    return TRUE;
  } catch (const std::exception & e) {
    *why = e.what ();
  } catch (...) {
    *why = "unknown exception";
  }
  return FALSE;
}

/* The speaker's file for a message: a path, or why there is none. */
static std::string
file_for_message (const std::string & file)
{
  return file.empty ()? "(none: no transform-dir, or the anonymous speaker)"
      : file;
}

/* A speaker change in mid-stream: a bad saved file is a warning, a failure
 * of the switch an error (returns FALSE: the stream stops). */
static gboolean
switch_speaker_in_stream (GstGpuFmllr * self, State * st,
    const std::string & speaker)
{
  SpeakerReport r;
  std::string file, why;
  if (!change_speaker (st, speaker, &r, &file, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("gpufmllr: cannot switch to speaker '%s' (transform file %s): %s",
            speaker.c_str (), file_for_message (file).c_str (), why.c_str ()),
        ("the adaptation state is unusable after the failure"));
    return FALSE;
  }
  if (!r.change.changed)
    return TRUE;
  if (!r.change.error.empty ())
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("gpufmllr: the saved transform of speaker '%s' is unusable, "
            "starting from %s: %s", speaker.c_str (),
            r.has_initial ? "the initial transform" : "the identity",
            r.change.error.c_str ()), (NULL));
  post_speaker (self, r);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                           */

static gboolean
gst_gpu_fmllr_start (GstBaseTransform * trans)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  GST_OBJECT_LOCK (self);
  Settings s = *self->settings;
  self->settings->speaker_pending = FALSE;
  GST_OBJECT_UNLOCK (self);

  auto st = std::make_shared < State > ();
  st->model_dir = s.hmm.empty ()?
      gs::RecognizerConfig::en_us_defaults ().model_dir : s.hmm;
  if (!g_file_test (st->model_dir.c_str (), G_FILE_TEST_IS_DIR)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("gpufmllr: hmm: '%s' is not a directory", st->model_dir.c_str ()),
        (NULL));
    return FALSE;
  }
  try {
    st->model = std::make_unique < gs::AcousticModel >
        (gs::AcousticModel::load (st->model_dir));
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("gpufmllr: %s", e.what ()),
        ("hmm=%s", st->model_dir.c_str ()));
    return FALSE;
  }
  std::string why;
  try {
    st->backend = gs::open_backend (gpuspeech::backend_choice_name (s.backend), s.device_id,
        &why);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("gpufmllr: backend %s: %s", gpuspeech::backend_choice_name (s.backend), e.what ()),
        (NULL));
    return FALSE;
  }
  gs::OnlineFmllrOptions o = s.online;
  o.transform_dir = s.transform_dir;
  o.initial_transform = s.initial_transform;
  if (!o.initial_transform.empty ()
      && !g_file_test (o.initial_transform.c_str (), G_FILE_TEST_EXISTS)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("gpufmllr: initial-transform: '%s' does not exist",
            o.initial_transform.c_str ()), (NULL));
    return FALSE;
  }
  try {
    st->online = std::make_unique < gs::OnlineFmllr >
        (st->model->mixtures (), *st->backend, o);
  } catch (const std::exception & e) {
    /* FmllrFormatError names the file (and line) and the reason. */
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("gpufmllr: initial-transform: %s", e.what ()),
        ("the acoustic model %s has %d-dimensional features",
            st->model_dir.c_str (), st->model->mixtures ().feature_dim ()));
    return FALSE;
  }
  st->dim = st->online->dim ();

  SpeakerReport r;
  std::string file, failure;
  if (!change_speaker (st.get (), s.speaker, &r, &file, &failure)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("gpufmllr: cannot start with speaker '%s' (transform file %s): %s",
            s.speaker.c_str (), file_for_message (file).c_str (),
            failure.c_str ()), (NULL));
    return FALSE;
  }
  if (!r.change.error.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("gpufmllr: the saved transform of speaker '%s': %s",
            s.speaker.c_str (), r.change.error.c_str ()), (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "model %s (%d dims, %d senones), backend %s%s%s",
      st->model_dir.c_str (), st->dim, st->model->mixtures ().num_senones,
      st->backend->name (), why.empty ()? "" : ": ", why.c_str ());
  GST_OBJECT_LOCK (self);
  *self->state = st;
  GST_OBJECT_UNLOCK (self);
  post_speaker (self, r);
  return TRUE;
}

static gboolean
gst_gpu_fmllr_stop (GstBaseTransform * trans)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  std::shared_ptr < State > old;
  GST_OBJECT_LOCK (self);
  old.swap (*self->state);
  GST_OBJECT_UNLOCK (self);
  /* The state goes when `old` does, unless an alignment event is still
   * using it in downstream's thread: then when that one is done. */
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Caps                                                                     */

static gboolean
gst_gpu_fmllr_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    G_GNUC_UNUSED GstCaps * outcaps)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  const std::shared_ptr < State > st = get_state (self);
  if (!st) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("caps arrived before the element was started"));
    return FALSE;
  }
  if (st->refused_caps && gst_caps_is_equal (incaps, st->refused_caps))
    return FALSE;               /* said so already (see refused_caps) */
  const GstStructure *s = gst_caps_get_structure (incaps, 0);
  gint dim = 0;
  if (!gst_structure_get_int (s, "dim", &dim) || dim != st->dim) {
    gchar *offered = gst_caps_to_string (incaps);
    const std::string up = dim > 0 ? std::to_string (dim) : "(absent)";
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufmllr: the features have dimension %s, but the acoustic model "
            "%s has %d-dimensional features", up.c_str (),
            st->model_dir.c_str (), st->dim),
        ("upstream offers %s", offered));
    g_free (offered);
    gst_caps_replace (&st->refused_caps, incaps);
    return FALSE;
  }
  gint num = 0, den = 0;
  GstClockTime frame_duration;
  if (gst_structure_get_fraction (s, "frame-rate", &num, &den) && num > 0
      && den > 0) {
    frame_duration = gst_util_uint64_scale_int (GST_SECOND, den, num);
  } else {
    frame_duration = 10 * GST_MSECOND;
    GST_WARNING_OBJECT (self, "no frame-rate in the caps: assuming 100 "
        "frames a second");
  }
  if (frame_duration == 0) {
    /* A rate above 1e9 frames a second: no division by it below. */
    gchar *offered = gst_caps_to_string (incaps);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufmllr: unusable frame rate %d/%d", num, den),
        ("upstream offers %s", offered));
    g_free (offered);
    gst_caps_replace (&st->refused_caps, incaps);
    return FALSE;
  }
  try {
    std::lock_guard < std::mutex > guard (st->lock);
    st->online->set_frames_per_second ((double) GST_SECOND /
        (double) frame_duration);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufmllr: unusable frame rate: %s", e.what ()), (NULL));
    gst_caps_replace (&st->refused_caps, incaps);
    return FALSE;
  }
  st->frame_duration = frame_duration;
  st->caps_ok = TRUE;
  st->unnegotiated_reported = FALSE;
  gst_caps_replace (&st->refused_caps, NULL);
  GST_INFO_OBJECT (self, "features accepted: %d dims, %" GST_TIME_FORMAT
      " a frame", dim, GST_TIME_ARGS (st->frame_duration));
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Data                                                                     */

static GstFlowReturn
gst_gpu_fmllr_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  const std::shared_ptr < State > st = get_state (self);
  if (!st || !st->caps_ok) {
    /* Once: upstream may go on pushing (see refused_caps). */
    if (!st || !st->unnegotiated_reported)
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
          ("received features before accepted caps"));
    if (st)
      st->unnegotiated_reported = TRUE;
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  const gboolean speaker_pending = self->settings->speaker_pending;
  const std::string speaker = self->settings->speaker;
  self->settings->speaker_pending = FALSE;
  GST_OBJECT_UNLOCK (self);
  if (speaker_pending && !switch_speaker_in_stream (self, st.get (), speaker))
    return GST_FLOW_ERROR;

  /* Live CMN's trace describes the frames as gpufeatures made them; once
   * transformed they are not those (gpuspeech_cmn_meta.h). */
  GstMeta *cmn = (GstMeta *) gpuspeech_buffer_get_cmn_meta (buf);
  if (cmn)
    gst_buffer_remove_meta (buf, cmn);

  GstMapInfo map;
  if (!gst_buffer_map (buf, &map, GST_MAP_READWRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("gpufmllr: cannot map a buffer"),
        (NULL));
    return GST_FLOW_ERROR;
  }
  const gsize frame_bytes = sizeof (float) * (gsize) st->dim;
  if (map.size % frame_bytes != 0) {
    gst_buffer_unmap (buf, &map);
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("gpufmllr: a buffer of %" G_GSIZE_FORMAT " bytes is not a whole "
            "number of %d-float frames", map.size, st->dim), (NULL));
    return GST_FLOW_ERROR;
  }
  const gint64 frames = (gint64) (map.size / frame_bytes);
  const GstClockTime time = GST_BUFFER_PTS_IS_VALID (buf) ?
      GST_BUFFER_PTS (buf) : st->next_time;
  std::optional < gs::OnlineFmllrUpdate > update;
  gs::OnlineFmllrCounters counters;
  guint64 stale_frames = 0;
  std::string failure;
  try {
    std::lock_guard < std::mutex > guard (st->lock);
    /* These frames are the new segment's (see the top of this file). */
    if (st->pending_segment_seqnum != GST_SEQNUM_INVALID) {
      st->segment_seqnum = st->pending_segment_seqnum;
      st->pending_segment_seqnum = GST_SEQNUM_INVALID;
    }
    float *data = reinterpret_cast < float *>(map.data);
    update = st->online->process (data, frames, data, (int64_t) time,
        (int64_t) st->frame_duration);
    counters = st->online->counters ();
    stale_frames = st->stale_frames;
  } catch (const std::exception & e) {
    failure = e.what ();
  } catch (...) {
    failure = "unknown exception";
  }
  gst_buffer_unmap (buf, &map);
  if (!failure.empty ()) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("gpufmllr: adaptation failed: %s", failure.c_str ()), (NULL));
    return GST_FLOW_ERROR;
  }
  st->next_time = time + (GstClockTime) frames * st->frame_duration;
  if (update)
    report_update (self, *update, counters, stale_frames);
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                   */

static gboolean
gst_gpu_fmllr_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  const std::shared_ptr < State > st = get_state (self);
  if (st) {
    switch (GST_EVENT_TYPE (event)) {
      case GST_EVENT_TAG:{
        GST_OBJECT_LOCK (self);
        const std::string tag = self->settings->speaker_tag;
        GST_OBJECT_UNLOCK (self);
        GstTagList *list = NULL;
        gst_event_parse_tag (event, &list);
        gchar *value = NULL;
        if (!tag.empty () && gst_tag_list_get_string (list, tag.c_str (),
                &value)) {
          const std::string speaker = value;
          g_free (value);
          GST_OBJECT_LOCK (self);
          self->settings->speaker = speaker;
          self->settings->speaker_pending = FALSE;
          GST_OBJECT_UNLOCK (self);
          if (!switch_speaker_in_stream (self, st.get (), speaker)) {
            gst_event_unref (event);
            return FALSE;
          }
        }
        break;
      }
      case GST_EVENT_SEGMENT:{
        /* Applies to the frames from the next buffer on: alignments of the
         * frames before it may still come, and those frames are still in
         * the history until newer ones arrive. */
        std::lock_guard < std::mutex > guard (st->lock);
        st->pending_segment_seqnum = gst_event_get_seqnum (event);
        break;
      }
      case GST_EVENT_FLUSH_STOP:{
        std::lock_guard < std::mutex > guard (st->lock);
        st->online->clear_history ();
        break;
      }
      default:
        break;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (gst_gpu_fmllr_parent_class)->sink_event
      (trans, event);
}

/* A gpuspeech-alignment event from the decoder: supervision. The parser
 * checked every field (gpuspeech_alignment_event.h), so what can still go
 * wrong here is the model (another decoder's), the segment (frames of an
 * earlier one) or the adaptation itself (below). Nothing is thrown: this
 * runs in GStreamer's src_event callback. */
static void
take_alignment (GstGpuFmllr * self, State * st, GstClockTime timestamp,
    guint64 frame_duration, GBytes * bytes, gint num_senones,
    const gchar * model, guint32 segment_seqnum)
{
  const gint ours = st->model->mixtures ().num_senones;
  if (num_senones != ours) {
    gboolean warn;
    {
      std::lock_guard < std::mutex > guard (st->lock);
      warn = !st->warned_model;
      st->warned_model = TRUE;
    }
    if (warn)
      GST_ELEMENT_WARNING (self, STREAM, WRONG_TYPE,
          ("gpufmllr: alignments ignored: the decoder's acoustic model %s "
              "has %d senones, gpufmllr's (hmm) %s has %d; set hmm to the "
              "decoder's model", model, num_senones, st->model_dir.c_str (),
              ours), (NULL));
    return;
  }
  gsize size = 0;
  const void *data = g_bytes_get_data (bytes, &size);
  const gsize frames = size / sizeof (int32_t);
  GST_DEBUG_OBJECT (self, "alignment of %" G_GSIZE_FORMAT " frames from %"
      GST_TIME_FORMAT " (segment seqnum %u)", frames,
      GST_TIME_ARGS (timestamp), segment_seqnum);
  std::optional < gs::OnlineFmllrUpdate > update;
  gs::OnlineFmllrCounters counters;
  gint64 newly_late = 0;
  guint64 stale_frames = 0;
  guint32 ours_seqnum = GST_SEQNUM_INVALID;
  gboolean stale = FALSE, ignored = FALSE;
  std::string failure;
  try {
    /* A copy: the data of a GBytes need not be aligned for int32_t. */
    std::vector < int32_t > senones (frames);
    memcpy (senones.data (), data, frames * sizeof (int32_t));
    std::lock_guard < std::mutex > guard (st->lock);
    ours_seqnum = st->segment_seqnum;
    if (st->alignments_failed) {
      ignored = TRUE;
    } else if (segment_seqnum != GST_SEQNUM_INVALID
        && ours_seqnum != GST_SEQNUM_INVALID && segment_seqnum != ours_seqnum) {
      stale = TRUE;
      st->stale_frames += frames;
      stale_frames = st->stale_frames;
    } else {
      update = st->online->add_alignment ((int64_t) timestamp,
          (int64_t) frame_duration, senones.data (),
          (int64_t) senones.size ());
      counters = st->online->counters ();
      newly_late = counters.frames_late - st->late_reported;
      st->late_reported = counters.frames_late;
      stale_frames = st->stale_frames;
    }
  } catch (const std::exception & e) {
    failure = e.what ();
  } catch (...) {
    failure = "unknown exception";
  }
  if (!failure.empty ()) {
    /* add_alignment() throws for a senone outside the model or a bad
     * frame duration, which the parser and the senone count above rule
     * out, so this is a failure of the adaptation itself: the statistics,
     * the estimation or the new transform's upload on the backend, or
     * memory. The frames still pass with the transform in use; more
     * alignments would only fail the same way (or add to statistics left
     * half updated), so they are ignored from now on. */
    {
      std::lock_guard < std::mutex > guard (st->lock);
      st->alignments_failed = TRUE;
    }
    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("gpufmllr: adaptation from the decoder's alignments stopped: the "
            "alignment of %" G_GSIZE_FORMAT " frames at %" GST_TIME_FORMAT
            " failed: %s", frames, GST_TIME_ARGS (timestamp),
            failure.c_str ()),
        ("later alignments are ignored; the transform in use stays"));
    return;
  }
  if (ignored)
    return;
  if (stale) {
    GST_DEBUG_OBJECT (self, "alignment of %" G_GSIZE_FORMAT " frames at %"
        GST_TIME_FORMAT " is of segment seqnum %u, the frames kept are of "
        "%u: dropped (%" G_GUINT64_FORMAT " such frames so far)",
        frames, GST_TIME_ARGS (timestamp), segment_seqnum,
        ours_seqnum, stale_frames);
    return;
  }
  if (newly_late > 0)
    GST_WARNING_OBJECT (self, "%" G_GINT64_FORMAT " aligned frames at %"
        GST_TIME_FORMAT " came after they had left the history (%"
        G_GINT64_FORMAT " so far): dropped", newly_late,
        GST_TIME_ARGS (timestamp), (gint64) counters.frames_late);
  if (update)
    report_update (self, *update, counters, stale_frames);
}

static gboolean
gst_gpu_fmllr_src_event (GstBaseTransform * trans, GstEvent * event)
{
  GstGpuFmllr *self = GST_GPU_FMLLR (trans);
  /* A reference: stop() may let go of the state meanwhile (see State). */
  const std::shared_ptr < State > st = get_state (self);
  GstClockTime timestamp = 0;
  guint64 frame_duration = 0;
  GBytes *senones = NULL;
  gint num_senones = 0;
  const gchar *model = NULL;
  guint32 segment_seqnum = GST_SEQNUM_INVALID;
  if (st && st->online && gpuspeech_alignment_event_parse (event, &timestamp,
          &frame_duration, &senones, &num_senones, &model, NULL,
          &segment_seqnum)) {
    take_alignment (self, st.get (), timestamp, frame_duration, senones,
        num_senones, model, segment_seqnum);
    g_bytes_unref (senones);
  }
  /* Forwarded: applications may watch it further up. */
  return GST_BASE_TRANSFORM_CLASS (gst_gpu_fmllr_parent_class)->src_event
      (trans, event);
}
