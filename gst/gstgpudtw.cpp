/* gpudtw: DTW template matching (common/dtw/) as a GStreamer element.
 *
 *   autoaudiosrc ! audioconvert ! audioresample ! gpudtw templates=DIR ! fakesink
 *
 * Sink: audio/x-raw, S16LE or F32LE, mono, at the templates' rate (16 kHz;
 * the caps query asks for it, so audioresample converts). The element runs
 * the energy endpointer (common/dtw/endpointer.h) over the stream; each
 * utterance it closes is turned into features exactly as the templates
 * were (same DtwFeatureConfig) and matched against every template, one
 * engine call per VTLN test warp, by the WordRecognizer that gpuspeech-dtw
 * uses too (same defaults, same decision).
 *
 * Why audio and not gpufeatures' feature stream: the templates' features
 * must be computed with the very same options (CMN over the endpointed
 * utterance, dither, no deltas), the endpointer needs samples, and the
 * plain spectrum kind exists only here. Taking audio keeps one
 * configuration in one place; the element does the feature work on the
 * chosen backend itself.
 *
 * Per utterance an element message named "gpudtw" is posted:
 *   label (string)            best template's label ("" when none reachable)
 *   distance (double)         its score: mean DTW distance of its k nearest
 *                             templates (+inf when none reachable)
 *   runner-up (string)        nearest other label ("" if none)
 *   runner-up-distance (double)
 *   rejected (boolean)        score above the threshold, none reachable,
 *                             or (syllable-check) a syllable count none of
 *                             the word's templates has
 *   band-limited (boolean)    (band-match) the utterance had nothing above
 *                             4 kHz and was matched at that band
 *   mapped-distance (double)  (reject-mapped) the word's score under the
 *                             learnt map, which its threshold judges; 0
 *                             when no word was scored
 *   template (string)         path of the best template
 *   utterance (uint)          index in the stream, from 0
 *   timestamp, duration (uint64)  where the utterance lies (stream time, ns)
 * and, unless rejected, a text/x-raw (utf8) buffer holding the label with
 * that timestamp and duration is pushed on the src pad (timed text, as
 * gpudecoder's text output). An utterance still open at EOS is closed and
 * matched first. A FLUSH or a new SEGMENT starts the endpointer afresh.
 *
 * Properties (read when going to READY, where the templates are loaded):
 *   templates  directory of *.wav or template list (required)
 *   features   plp (default) | mfcc | fbank | spectrum
 *   pattern    symmetric (default) | itakura
 *   band       Sakoe-Chiba band in frames, -1 = none
 *   distance   euclidean (default) | cepstral
 *   reject     reject above this distance, 0 = never
 *   reject-scale  reject above this many times the templates' own scale,
 *              the upper quartile of same-word template distances (0 = off;
 *              see docs/dtw.md)
 *   reject-mapped  reject by a map of the features learnt from many other
 *              voices, against the map's own threshold for a word with
 *              that many templates (TRUE; reject and
 *              reject-scale take its place when set; docs/dtw.md)
 *   projection  the maps for reject-mapped ("" = the installed ones)
 *   syllable-check  with reject, reject-scale or reject-mapped: also reject
 *              a word whose syllable count none of its templates has (TRUE)
 *   band-match  an utterance that passed through a narrow channel (8 kHz
 *              audio resampled) is matched against templates cut at 4 kHz
 *              (TRUE; docs/dtw.md)
 *   warps      VTLN test warps ("" = the kind's default, "1" = none)
 *   k-nearest  a word's score: mean of its k nearest templates (2)
 *   rescore    re-rank this many best words by the power mean of the local
 *              distances along their paths (2; 0 = off; docs/dtw.md)
 *   lifter     cepstral lifter (mfcc, plp; -1 = the kind's default)
 *   averaging  none (default) | add | only: DTW-averaged template per word
 *   backend    cpu (default) | opencl | cuda | auto; device-id
 *   cache-dir  template feature cache ("" default, "-" none)
 *   endpoint-threshold  dB above the noise floor that is speech (12)
 * A bad template library fails the state change with an error message
 * naming the file and the reason.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpudtw.h"

#include <gst/audio/audio.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/dtw/dtw_engine.h"
#include "common/dtw/word_recognizer.h"
#include "common/dtw/dtw_features.h"
#include "common/dtw/endpointer.h"
#include "common/dtw/template_library.h"
#include "common/dtw/template_matcher.h"

namespace gs = gpuspeech;

GST_DEBUG_CATEGORY_STATIC (gst_gpu_dtw_debug);
#define GST_CAT_DEFAULT gst_gpu_dtw_debug

enum {
  PROP_0,
  PROP_TEMPLATES,
  PROP_FEATURES,
  PROP_PATTERN,
  PROP_BAND,
  PROP_DISTANCE,
  PROP_REJECT,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_CACHE_DIR,
  PROP_ENDPOINT_THRESHOLD,
  PROP_REJECT_SCALE,
  PROP_WARPS,
  PROP_K_NEAREST,
  PROP_RESCORE,
  PROP_LIFTER,
  PROP_AVERAGING,
  PROP_SYLLABLE_CHECK,
  PROP_BAND_MATCH,
  PROP_REJECT_MAPPED,
  PROP_PROJECTION,
};

/* Everything built at READY and the per-stream state. */
struct DtwState {
  gs::BackendPtr backend;
  std::unique_ptr<gs::WordRecognizer> recognizer;
  gs::EndpointOptions endpoint;
  std::unique_ptr<gs::Endpointer> endpointer;
  int rate = 16000;
  /* Stream */
  gboolean is_float = FALSE;
  GstSegment segment;
  GstClockTime base = GST_CLOCK_TIME_NONE;  /* time of sample 0 */
  gint64 consumed = 0;                      /* samples pushed into the endpointer */
  std::vector<float> pending;               /* samples from pending_start on */
  gint64 pending_start = 0;
  guint utterance = 0;
  std::vector<float> scratch;
  bool band_match_warned = false;
};

struct _GstGpuDtw {
  GstElement parent;
  GstPad *sinkpad;
  GstPad *srcpad;
  /* Properties */
  gchar *templates;
  gchar *features;
  gchar *pattern;
  gint band;
  gchar *distance;
  gfloat reject;
  gchar *backend;
  gint device_id;
  gchar *cache_dir;
  gfloat endpoint_threshold;
  gfloat reject_scale;
  gchar *warps;
  gint k_nearest;
  gint rescore;
  gint lifter;
  gchar *averaging;
  gboolean syllable_check;
  gboolean band_match;
  gboolean reject_mapped;
  gchar *projection;
  DtwState *state;
};

G_DEFINE_TYPE_WITH_CODE (GstGpuDtw, gst_gpu_dtw, GST_TYPE_ELEMENT,
    GST_DEBUG_CATEGORY_INIT (gst_gpu_dtw_debug, "gpudtw", 0,
        "DTW template matching"));
GST_ELEMENT_REGISTER_DEFINE (gpudtw, "gpudtw", GST_RANK_NONE, GST_TYPE_GPU_DTW);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("audio/x-raw, "
        "format = (string) { S16LE, F32LE }, "
        "rate = (int) [ 1, MAX ], "
        "channels = (int) 1, " "layout = (string) interleaved"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8"));

static void gst_gpu_dtw_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpu_dtw_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_gpu_dtw_finalize (GObject * object);
static GstStateChangeReturn gst_gpu_dtw_change_state (GstElement * element,
    GstStateChange transition);
static GstFlowReturn gst_gpu_dtw_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean gst_gpu_dtw_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_gpu_dtw_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query);

static void
gst_gpu_dtw_class_init (GstGpuDtwClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = (GParamFlags) (G_PARAM_READWRITE |
      G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  const gs::WordRecognizerOptions defaults =
      gs::WordRecognizerOptions::defaults ();
  const gs::DtwOptions & d = defaults.dtw;
  const gs::EndpointOptions e;
  const gs::DtwDecisionOptions & dd = defaults.decision;

  gobject_class->set_property = gst_gpu_dtw_set_property;
  gobject_class->get_property = gst_gpu_dtw_get_property;
  gobject_class->finalize = gst_gpu_dtw_finalize;

  g_object_class_install_property (gobject_class, PROP_TEMPLATES,
      g_param_spec_string ("templates", "Templates",
          "Directory of *.wav templates (label: base name up to the first "
          "underscore) or a template list of \"PATH\" / \"LABEL PATH\" lines",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_FEATURES,
      g_param_spec_string ("features", "Features",
          "plp | mfcc | fbank | spectrum (log power spectrum)",
          gs::to_string (defaults.library.features.kind), rw));
  g_object_class_install_property (gobject_class, PROP_PATTERN,
      g_param_spec_string ("pattern", "Step pattern",
          "itakura (slopes 1/2..2) | symmetric (Sakoe-Chiba, weights 1-2-1)",
          gs::to_string (d.pattern), rw));
  g_object_class_install_property (gobject_class, PROP_BAND,
      g_param_spec_int ("band", "Band",
          "Sakoe-Chiba band: frames off the diagonal allowed (-1 = none)",
          -1, G_MAXINT, d.band, rw));
  g_object_class_install_property (gobject_class, PROP_DISTANCE,
      g_param_spec_string ("distance", "Local distance",
          "euclidean | cepstral (leaves out c0; mfcc, plp)",
          gs::to_string (d.distance), rw));
  g_object_class_install_property (gobject_class, PROP_REJECT,
      g_param_spec_float ("reject", "Rejection threshold",
          "Reject an utterance whose score (mean distance of the winning word's "
          "k nearest templates) is above this (0 = never)",
          0.0f, G_MAXFLOAT, 0.0f, rw));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_string ("backend", "Backend",
          "Where features and DTW run: cpu | opencl | cuda | auto", "cpu", rw));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device id", "Device index", 0, G_MAXINT,
          0, rw));
  g_object_class_install_property (gobject_class, PROP_CACHE_DIR,
      g_param_spec_string ("cache-dir", "Cache directory",
          "Template feature cache (\"\" = $GPUSPEECH_CACHE_DIR, "
          "$XDG_CACHE_HOME/gpuspeech or ~/.cache/gpuspeech; \"-\" = none)",
          "", rw));
  g_object_class_install_property (gobject_class, PROP_ENDPOINT_THRESHOLD,
      g_param_spec_float ("endpoint-threshold", "Endpoint threshold",
          "dB above the noise floor that counts as speech", 0.1f, 100.0f,
          e.threshold_db, rw));
  g_object_class_install_property (gobject_class, PROP_REJECT_SCALE,
      g_param_spec_float ("reject-scale", "Rejection scale",
          "Reject an utterance whose score is above this many times the "
          "templates' own scale (the upper quartile of the DTW distances "
          "between templates of the same word; needs two templates of a "
          "word; 0.8 measured, docs/dtw.md). 0 = off; not together with "
          "reject; takes the place of reject-mapped",
          0.0f, G_MAXFLOAT, 0.0f, rw));
  g_object_class_install_property (gobject_class, PROP_WARPS,
      g_param_spec_string ("warps", "VTLN test warps",
          "Comma-separated VTLN warp factors in (0.5, 2) tried on each "
          "utterance (mfcc, fbank); every template keeps its best warp, one "
          "DTW per warp. \"\" = the features' default "
          "(0.85,0.92,1,1.08,1.15), \"1\" = no warping", "", rw));
  g_object_class_install_property (gobject_class, PROP_K_NEAREST,
      g_param_spec_int ("k-nearest", "k nearest",
          "A word's score is the mean distance of its k nearest templates "
          "(1 = nearest neighbour)", 1, 1000, dd.k_nearest, rw));
  g_object_class_install_property (gobject_class, PROP_RESCORE,
      g_param_spec_int ("rescore", "Words re-ranked",
          "Re-rank this many best words by their score plus the power mean "
          "of the local distances along their paths (0 = off)", 0, 1000,
          dd.rescore_words, rw));
  g_object_class_install_property (gobject_class, PROP_LIFTER,
      g_param_spec_int ("lifter", "Cepstral lifter",
          "Sinusoidal cepstral lifter of mfcc and plp (0 = none, -1 = the "
          "kind's default: 12 for mfcc, 22 for plp)", -1, 1000, -1, rw));
  g_object_class_install_property (gobject_class, PROP_AVERAGING,
      g_param_spec_string ("averaging", "Template averaging",
          "none | add (each word's DTW average of its recordings joins them) "
          "| only (replaces them)",
          gs::to_string (gs::WordRecognizerOptions::defaults ().averaging),
          rw));
  g_object_class_install_property (gobject_class, PROP_SYLLABLE_CHECK,
      g_param_spec_boolean ("syllable-check", "Syllable check",
          "With rejection on (reject, reject-scale or reject-mapped): also reject a word "
          "whose count of syllables (loudness peaks of the 300-3000 Hz band) "
          "none of the winning word's templates has (docs/dtw.md)",
          dd.syllable_check, rw));
  g_object_class_install_property (gobject_class, PROP_BAND_MATCH,
      g_param_spec_boolean ("band-match", "Band matching",
          "An utterance with nothing above 4 kHz (8 kHz audio resampled, a "
          "telephone) is matched against the templates' features cut at "
          "4 kHz, its own the same (docs/dtw.md)",
          gs::WordRecognizerOptions::defaults ().band_match, rw));
  g_object_class_install_property (gobject_class, PROP_REJECT_MAPPED,
      g_param_spec_boolean ("reject-mapped", "Reject by a learnt map",
          "Reject an utterance whose score under a map of the features "
          "learnt from many other voices (the winning word's k nearest "
          "templates, both mapped) is above the map's own threshold for a "
          "word of that many templates; the "
          "word is still chosen as without it (docs/dtw.md). reject or "
          "reject-scale, when set, take its place. With "
          "other features than the installed maps' and no projection, "
          "nothing is rejected and a warning is posted",
          gs::WordRecognizerOptions::defaults ().decision.reject ==
          gs::DtwDecisionOptions::Reject::kMapped, rw));
  g_object_class_install_property (gobject_class, PROP_PROJECTION,
      g_param_spec_string ("projection", "Projection maps",
          "With reject-mapped: a map file or a directory of *.projection "
          "maps (several separated by ':'); the map learnt on the element's "
          "features is taken (\"\" = the maps installed with gpuspeech, "
          "for the default features; gpuspeech-dtw --learn-projection "
          "learns others)",
          "", rw));

  gst_element_class_set_static_metadata (element_class,
      "DTW template matching", "Filter/Analyzer/Audio",
      "Recognises isolated words by dynamic time warping against recorded "
      "templates, on the GPU (CUDA, OpenCL) or the CPU",
      "gpuspeech");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_gpu_dtw_change_state);
}

static void
gst_gpu_dtw_init (GstGpuDtw * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_dtw_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_dtw_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_dtw_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  const gs::WordRecognizerOptions defaults =
      gs::WordRecognizerOptions::defaults ();
  const gs::DtwOptions & d = defaults.dtw;
  self->templates = NULL;
  self->features = g_strdup (gs::to_string (defaults.library.features.kind));
  self->pattern = g_strdup (gs::to_string (d.pattern));
  self->band = d.band;
  self->distance = g_strdup (gs::to_string (d.distance));
  self->reject = 0.0f;
  self->backend = g_strdup ("cpu");
  self->device_id = 0;
  self->cache_dir = g_strdup ("");
  self->endpoint_threshold = gs::EndpointOptions ().threshold_db;
  self->reject_scale = 0.0f;
  self->warps = g_strdup ("");
  self->k_nearest = gs::DtwDecisionOptions ().k_nearest;
  self->rescore = gs::DtwDecisionOptions ().rescore_words;
  self->lifter = -1;
  self->averaging = g_strdup (gs::to_string (gs::WordRecognizerOptions::
          defaults ().averaging));
  self->syllable_check = gs::DtwDecisionOptions ().syllable_check;
  self->band_match = gs::WordRecognizerOptions::defaults ().band_match;
  self->reject_mapped = gs::WordRecognizerOptions::defaults ().decision.reject
      == gs::DtwDecisionOptions::Reject::kMapped;
  self->projection = g_strdup ("");
  self->state = NULL;
}

static void
gst_gpu_dtw_finalize (GObject * object)
{
  GstGpuDtw *self = GST_GPU_DTW (object);
  delete self->state;
  g_free (self->templates);
  g_free (self->features);
  g_free (self->pattern);
  g_free (self->distance);
  g_free (self->backend);
  g_free (self->cache_dir);
  g_free (self->warps);
  g_free (self->averaging);
  g_free (self->projection);
  G_OBJECT_CLASS (gst_gpu_dtw_parent_class)->finalize (object);
}

static void
replace_string (gchar ** field, const GValue * value)
{
  g_free (*field);
  *field = g_value_dup_string (value);
}

static void
gst_gpu_dtw_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuDtw *self = GST_GPU_DTW (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TEMPLATES: replace_string (&self->templates, value); break;
    case PROP_FEATURES: replace_string (&self->features, value); break;
    case PROP_PATTERN: replace_string (&self->pattern, value); break;
    case PROP_BAND: self->band = g_value_get_int (value); break;
    case PROP_DISTANCE: replace_string (&self->distance, value); break;
    case PROP_REJECT: self->reject = g_value_get_float (value); break;
    case PROP_BACKEND: replace_string (&self->backend, value); break;
    case PROP_DEVICE_ID: self->device_id = g_value_get_int (value); break;
    case PROP_CACHE_DIR: replace_string (&self->cache_dir, value); break;
    case PROP_ENDPOINT_THRESHOLD:
      self->endpoint_threshold = g_value_get_float (value);
      break;
    case PROP_REJECT_SCALE: self->reject_scale = g_value_get_float (value);
      break;
    case PROP_WARPS: replace_string (&self->warps, value); break;
    case PROP_K_NEAREST: self->k_nearest = g_value_get_int (value); break;
    case PROP_RESCORE: self->rescore = g_value_get_int (value); break;
    case PROP_LIFTER: self->lifter = g_value_get_int (value); break;
    case PROP_AVERAGING: replace_string (&self->averaging, value); break;
    case PROP_SYLLABLE_CHECK:
      self->syllable_check = g_value_get_boolean (value);
      break;
    case PROP_BAND_MATCH:
      self->band_match = g_value_get_boolean (value);
      break;
    case PROP_REJECT_MAPPED:
      self->reject_mapped = g_value_get_boolean (value);
      break;
    case PROP_PROJECTION: replace_string (&self->projection, value); break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_dtw_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGpuDtw *self = GST_GPU_DTW (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TEMPLATES: g_value_set_string (value, self->templates); break;
    case PROP_FEATURES: g_value_set_string (value, self->features); break;
    case PROP_PATTERN: g_value_set_string (value, self->pattern); break;
    case PROP_BAND: g_value_set_int (value, self->band); break;
    case PROP_DISTANCE: g_value_set_string (value, self->distance); break;
    case PROP_REJECT: g_value_set_float (value, self->reject); break;
    case PROP_BACKEND: g_value_set_string (value, self->backend); break;
    case PROP_DEVICE_ID: g_value_set_int (value, self->device_id); break;
    case PROP_CACHE_DIR: g_value_set_string (value, self->cache_dir); break;
    case PROP_ENDPOINT_THRESHOLD:
      g_value_set_float (value, self->endpoint_threshold);
      break;
    case PROP_REJECT_SCALE: g_value_set_float (value, self->reject_scale);
      break;
    case PROP_WARPS: g_value_set_string (value, self->warps); break;
    case PROP_K_NEAREST: g_value_set_int (value, self->k_nearest); break;
    case PROP_RESCORE: g_value_set_int (value, self->rescore); break;
    case PROP_LIFTER: g_value_set_int (value, self->lifter); break;
    case PROP_AVERAGING: g_value_set_string (value, self->averaging); break;
    case PROP_SYLLABLE_CHECK:
      g_value_set_boolean (value, self->syllable_check);
      break;
    case PROP_BAND_MATCH:
      g_value_set_boolean (value, self->band_match);
      break;
    case PROP_REJECT_MAPPED:
      g_value_set_boolean (value, self->reject_mapped);
      break;
    case PROP_PROJECTION: g_value_set_string (value, self->projection); break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                    */

/* Loads the templates and opens the engine; posts an error and returns
 * FALSE on any failure. */
static gboolean
gst_gpu_dtw_setup (GstGpuDtw * self)
{
  GST_OBJECT_LOCK (self);
  const std::string templates = self->templates ? self->templates : "";
  const std::string features = self->features ? self->features : "";
  const std::string pattern = self->pattern ? self->pattern : "";
  const std::string distance = self->distance ? self->distance : "";
  const std::string backend = self->backend ? self->backend : "";
  const std::string cache = self->cache_dir ? self->cache_dir : "";
  const gint band = self->band, device = self->device_id;
  const gfloat threshold = self->endpoint_threshold;
  const gfloat reject = self->reject, reject_scale = self->reject_scale;
  const std::string warps = self->warps ? self->warps : "";
  const gint k_nearest = self->k_nearest, lifter = self->lifter;
  const gint rescore = self->rescore;
  const std::string averaging = self->averaging ? self->averaging : "";
  const gboolean syllable_check = self->syllable_check;
  const gboolean band_match = self->band_match;
  const gboolean reject_mapped = self->reject_mapped;
  const std::string projection = self->projection ? self->projection : "";
  GST_OBJECT_UNLOCK (self);

  if (templates.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("gpudtw: no templates (set the templates property to a directory "
            "of *.wav files or a template list)"), (NULL));
    return FALSE;
  }
  auto st = std::make_unique < DtwState > ();
  gs::WordRecognizerOptions ro = gs::WordRecognizerOptions::defaults ();
  try {
    const gs::DtwFeatureKind kind = gs::parse_dtw_feature_kind (features);
    ro.library.features = gs::DtwFeatureConfig::for_kind (kind);
    ro.library.features.endpoint.threshold_db = threshold;
    if (!warps.empty ())
      ro.library.features.test_warps = gs::parse_warp_list (warps);
    if (lifter >= 0) {
      if (kind != gs::DtwFeatureKind::kMfcc && kind != gs::DtwFeatureKind::kPlp)
        throw std::invalid_argument ("lifter needs features=mfcc or plp");
      ro.library.features.features.mfcc.lifter = lifter;
      ro.library.features.features.plp.lifter = lifter;
    }
    ro.library.cache_dir = cache;
    ro.dtw.pattern = gs::parse_step_pattern (pattern);
    ro.dtw.distance = gs::parse_local_distance (distance);
    ro.dtw.band = band;
    ro.decision.k_nearest = k_nearest;
    ro.decision.rescore_words = rescore;
    ro.decision.syllable_check = syllable_check != FALSE;
    ro.band_match = band_match != FALSE;
    ro.averaging = gs::parse_template_averaging (averaging);
    if (reject > 0.0f && reject_scale > 0.0f)
      throw std::invalid_argument ("set reject (a distance) or reject-scale "
          "(from the templates), not both");
    /* reject and reject-scale take the place of reject-mapped (on by
     * default), so that setting one is enough. */
    const bool mapped = reject_mapped && reject <= 0.0f && reject_scale <= 0.0f;
    if (!projection.empty () && !mapped)
      throw std::invalid_argument ("projection is for reject-mapped (and "
          "neither reject nor reject-scale)");
    if (mapped) {
      ro.decision.reject = gs::DtwDecisionOptions::Reject::kMapped;
      std::istringstream list (projection);
      for (std::string path; std::getline (list, path, ':');)
        if (!path.empty ())
          ro.projections.push_back (path);
    } else if (reject > 0.0f) {
      ro.decision.reject = gs::DtwDecisionOptions::Reject::kFixed;
      ro.decision.reject_distance = reject;
    } else if (reject_scale > 0.0f) {
      ro.decision.reject = gs::DtwDecisionOptions::Reject::kFromTemplates;
      ro.decision.reject_scale = reject_scale;
    } else {
      ro.decision.reject = gs::DtwDecisionOptions::Reject::kOff;
    }
    ro.engine = backend;
    ro.device_id = device;
    ro.validate ();
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("gpudtw: %s", e.what ()),
        (NULL));
    return FALSE;
  }
  try {
    st->backend = gs::open_backend (backend, device);
    st->recognizer = std::make_unique < gs::WordRecognizer > (templates, ro,
        *st->backend);
    const gs::DtwFeatureConfig & fc = ro.library.features;
    st->rate = static_cast < int >(std::lround (fc.features.frame.sample_rate));
    st->endpoint = fc.endpoint;
    st->endpointer = std::make_unique < gs::Endpointer > (fc.endpoint,
        fc.features.frame.sample_rate);
    if (!st->recognizer->rejection_note ().empty ())
      GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("gpudtw: %s",
              st->recognizer->rejection_note ().c_str ()), (NULL));
    GST_INFO_OBJECT (self, "%zu templates from %s; DTW on %s (%s); %zu test "
        "warp(s), k %d, rejection threshold %g",
        st->recognizer->library ().size (), templates.c_str (),
        st->recognizer->engine ().name (),
        st->recognizer->engine ().device_name ().c_str (),
        fc.test_warps.size (), ro.decision.k_nearest,
        st->recognizer->reject_threshold ());
  } catch (const gs::TemplateError & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("gpudtw: %s", e.what ()),
        (NULL));
    return FALSE;
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("gpudtw: %s", e.what ()),
        (NULL));
    return FALSE;
  }
  gst_segment_init (&st->segment, GST_FORMAT_TIME);
  self->state = st.release ();
  return TRUE;
}

static void
reset_stream (DtwState * st)
{
  st->endpointer->reset ();
  st->base = GST_CLOCK_TIME_NONE;
  st->consumed = 0;
  st->pending.clear ();
  st->pending_start = 0;
}

static GstStateChangeReturn
gst_gpu_dtw_change_state (GstElement * element, GstStateChange transition)
{
  GstGpuDtw *self = GST_GPU_DTW (element);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY) {
    if (!gst_gpu_dtw_setup (self))
      return GST_STATE_CHANGE_FAILURE;
  }
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && self->state) {
    reset_stream (self->state);
    self->state->utterance = 0;
    gst_segment_init (&self->state->segment, GST_FORMAT_TIME);
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (gst_gpu_dtw_parent_class)->change_state (element,
      transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    delete self->state;
    self->state = NULL;
  }
  return ret;
}

/* ------------------------------------------------------------------------ */
/* Data flow                                                                */

static GstClockTime
sample_time (const DtwState * st, gint64 sample)
{
  const GstClockTime base = GST_CLOCK_TIME_IS_VALID (st->base) ? st->base : 0;
  return base + gst_util_uint64_scale_int ((guint64) sample, GST_SECOND,
      st->rate);
}

/* Matches one closed segment, posts the message, pushes the text. */
static GstFlowReturn
handle_segment (GstGpuDtw * self, const gs::SpeechSegment & seg)
{
  DtwState *st = self->state;
  const gint64 from = std::max (seg.begin, st->pending_start);
  const gint64 to = std::min < gint64 > (seg.end,
      st->pending_start + (gint64) st->pending.size ());
  if (to <= from)
    return GST_FLOW_OK;
  gs::MatchDecision m;
  gboolean band_limited = FALSE;
  try {
    /* Utterances come endpointed: no second trim. */
    const gs::WordRecognizer::Result r =
        st->recognizer->recognise (st->pending.data () + (from -
            st->pending_start), to - from, true);
    if (r.frames < 1)
      return GST_FLOW_OK;
    m = r.decision;
    band_limited = r.band_limited;
    if (!st->band_match_warned && !st->recognizer->band_match_error ().empty ()) {
      st->band_match_warned = true;
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("gpudtw: band-limited utterances are matched as wide-band ones: %s",
              st->recognizer->band_match_error ().c_str ()), (NULL));
    }
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("gpudtw: matching failed: %s",
            e.what ()), (NULL));
    return GST_FLOW_ERROR;
  }
  const GstClockTime ts = sample_time (st, from);
  const GstClockTime dur = sample_time (st, to) - ts;
  const guint index = st->utterance++;
  GstStructure *s = gst_structure_new (GPUSPEECH_DTW_MESSAGE,
      "label", G_TYPE_STRING, m.label.c_str (),
      "distance", G_TYPE_DOUBLE, (gdouble) m.distance,
      "runner-up", G_TYPE_STRING, m.runner_up.c_str (),
      "runner-up-distance", G_TYPE_DOUBLE, (gdouble) m.runner_up_distance,
      "rejected", G_TYPE_BOOLEAN, (gboolean) m.rejected,
      "band-limited", G_TYPE_BOOLEAN, band_limited,
      "mapped-distance", G_TYPE_DOUBLE,
      (gdouble) st->recognizer->last_mapped_score (),
      "template", G_TYPE_STRING, m.template_index >= 0 ?
      st->recognizer->library ()[(size_t) m.
      template_index].path.c_str () : "",
      "utterance", G_TYPE_UINT, index,
      "timestamp", G_TYPE_UINT64, (guint64) ts,
      "duration", G_TYPE_UINT64, (guint64) dur, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  GST_DEBUG_OBJECT (self, "utterance %u: %s %.4f (runner-up %s %.4f)%s",
      index, m.label.c_str (), m.distance, m.runner_up.c_str (),
      m.runner_up_distance, m.rejected ? ", rejected" : "");
  if (m.rejected)
    return GST_FLOW_OK;
  GstBuffer *text = gst_buffer_new_memdup (m.label.data (), m.label.size ());
  GST_BUFFER_PTS (text) = ts;
  GST_BUFFER_DURATION (text) = dur;
  const GstFlowReturn ret = gst_pad_push (self->srcpad, text);
  /* No one listening to the text is fine: the messages are the result. */
  return ret == GST_FLOW_NOT_LINKED ? GST_FLOW_OK : ret;
}

/* Drops the samples no future segment can need: everything before the
 * open segment's start, or before the padding window when none is open. */
static void
trim_pending (DtwState * st)
{
  const gs::EndpointOptions & o = st->endpoint;
  gint64 keep_from = st->endpointer->in_speech ()? st->endpointer->open_begin ()
      : st->consumed - (gint64) (o.pad_frames + o.start_frames + 2) *
      st->endpointer->frame_samples ();
  keep_from = std::max (keep_from, st->pending_start);
  const gint64 drop = keep_from - st->pending_start;
  if (drop > (gint64) st->pending.size () / 2 && drop > 0) {
    st->pending.erase (st->pending.begin (), st->pending.begin () + drop);
    st->pending_start = keep_from;
  }
}

static GstFlowReturn
process_samples (GstGpuDtw * self, const float *samples, gint64 n)
{
  DtwState *st = self->state;
  st->pending.insert (st->pending.end (), samples, samples + n);
  const std::vector < gs::SpeechSegment > closed =
      st->endpointer->push (samples, n);
  st->consumed += n;
  for (const gs::SpeechSegment & seg:closed) {
    const GstFlowReturn r = handle_segment (self, seg);
    if (r != GST_FLOW_OK)
      return r;
  }
  trim_pending (st);
  return GST_FLOW_OK;
}

static GstFlowReturn
finish_stream (GstGpuDtw * self)
{
  DtwState *st = self->state;
  GstFlowReturn r = GST_FLOW_OK;
  for (const gs::SpeechSegment & seg:st->endpointer->finish ())
    if ((r = handle_segment (self, seg)) != GST_FLOW_OK)
      break;
  reset_stream (st);
  return r;
}

static GstFlowReturn
gst_gpu_dtw_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstGpuDtw *self = GST_GPU_DTW (parent);
  DtwState *st = self->state;
  (void) pad;
  if (!st) {
    gst_buffer_unref (buffer);
    return GST_FLOW_FLUSHING;
  }
  if (!GST_CLOCK_TIME_IS_VALID (st->base)) {
    st->base = GST_BUFFER_PTS_IS_VALID (buffer) ? GST_BUFFER_PTS (buffer) :
        (GST_CLOCK_TIME_IS_VALID (st->segment.start) ? st->segment.start : 0);
  }
  GstMapInfo map;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("gpudtw: cannot map a buffer"),
        (NULL));
    return GST_FLOW_ERROR;
  }
  const size_t width = st->is_float ? 4 : 2;
  const gint64 n = (gint64) (map.size / width);
  st->scratch.resize ((size_t) n);
  if (st->is_float) {
    const float *in = reinterpret_cast < const float *>(map.data);
    for (gint64 k = 0; k < n; ++k) {
      const float v = in[k];
      /* Non-finite samples would poison every level after them. */
      st->scratch[(size_t) k] = std::isfinite (v) ? v * 32768.0f : 0.0f;
    }
  } else {
    const gint16 *in = reinterpret_cast < const gint16 *>(map.data);
    for (gint64 k = 0; k < n; ++k)
      st->scratch[(size_t) k] = (float) GINT16_FROM_LE (in[k]);
  }
  gst_buffer_unmap (buffer, &map);
  gst_buffer_unref (buffer);
  return process_samples (self, st->scratch.data (), n);
}

static gboolean
set_sink_caps (GstGpuDtw * self, GstCaps * caps)
{
  DtwState *st = self->state;
  GstAudioInfo info;
  if (!st || !gst_audio_info_from_caps (&info, caps))
    return FALSE;
  if (GST_AUDIO_INFO_RATE (&info) != st->rate) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("gpudtw: audio at %d Hz, but the templates are at %d Hz (put "
            "audioresample before gpudtw)", GST_AUDIO_INFO_RATE (&info),
            st->rate));
    return FALSE;
  }
  st->is_float = GST_AUDIO_INFO_FORMAT (&info) == GST_AUDIO_FORMAT_F32LE;
  GstCaps *out = gst_caps_new_simple ("text/x-raw", "format", G_TYPE_STRING,
      "utf8", NULL);
  const gboolean ok = gst_pad_set_caps (self->srcpad, out);
  gst_caps_unref (out);
  return ok || !gst_pad_is_linked (self->srcpad);
}

static gboolean
gst_gpu_dtw_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstGpuDtw *self = GST_GPU_DTW (parent);
  DtwState *st = self->state;
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      const gboolean ok = set_sink_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_SEGMENT:
      if (st) {
        finish_stream (self);
        gst_event_copy_segment (event, &st->segment);
        if (st->segment.format != GST_FORMAT_TIME)
          gst_segment_init (&st->segment, GST_FORMAT_TIME);
        GstEvent *out = gst_event_new_segment (&st->segment);
        gst_event_set_seqnum (out, gst_event_get_seqnum (event));
        gst_event_unref (event);
        return gst_pad_push_event (self->srcpad, out);
      }
      break;
    case GST_EVENT_EOS:
      if (st)
        finish_stream (self);
      break;
    case GST_EVENT_FLUSH_STOP:
      if (st)
        reset_stream (st);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_gpu_dtw_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstGpuDtw *self = GST_GPU_DTW (parent);
  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    /* Only the templates' rate, so that audioresample converts. */
    GstCaps *filter;
    gst_query_parse_caps (query, &filter);
    GstCaps *caps = gst_pad_get_pad_template_caps (pad);
    caps = gst_caps_make_writable (caps);
    gst_caps_set_simple (caps, "rate", G_TYPE_INT,
        self->state ? self->state->rate : 16000, NULL);
    if (filter) {
      GstCaps *both = gst_caps_intersect_full (filter, caps,
          GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (caps);
      caps = both;
    }
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}
