/**
 * SECTION:element-gpufeatures
 * @title: gpufeatures
 * @see_also: level, spectrum
 *
 * Turns mono speech audio into feature frames: MFCC (Sphinx, HTK or Kaldi
 * flavour), log-mel filterbank energies, PLP or TRAPS, optionally with live
 * or batch cepstral mean normalisation and deltas, computed on a CUDA or
 * OpenCL device or on the CPU (the `backend` property).
 *
 * The output is a feature stream of media type
 * `audio/x-gpuspeech-features` (docs/feature-caps.md): each buffer holds N
 * whole frames of `dim` float32 values, frame after frame. A buffer's PTS is
 * the time of its first frame's first sample, its duration N frame shifts,
 * its offset the index of its first frame in the stream (offset-end the
 * index after its last). Frames are identical whether the audio arrives as
 * one buffer or in pieces of any size, down to one sample, and equal to what
 * `gpuspeech-features` computes for the whole file. With live CMN each
 * buffer also carries a GpuspeechCmnMeta (gst/gpuspeech_cmn_meta.h): what
 * live CMN subtracted from each of its frames and whether it learnt from
 * it, so that gpudecoder can normalise an utterance again at its end
 * (its `utterance-cmn`).
 *
 * The configuration comes, in this order, from the flavour's defaults (or
 * an acoustic model's `feat.params` when `feat-params` is set), then from
 * every property set explicitly. It is read when the element goes from
 * READY to PAUSED; later property changes take effect at the next start.
 * When no property that shapes the features is set (only backend,
 * device-id, post-messages, remove-noise, noise-carry, noise-start,
 * remove-silence, declip, cmn-from-speech, cmn-skip-negative-c0, cmn-init,
 * cmn-init-frames and cmn-carry, if any) and
 * downstream's caps name a `feat-params` file (gpudecoder does: its
 * model's), that file configures the element, with live CMN, so
 * `gpufeatures ! gpudecoder` needs no settings. That front end subtracts
 * noise, as pocketsphinx does by default, unless remove-noise=false: in
 * the live chain it is worth 7-15 points of WER on noisy recordings and 8
 * on LibriVox, but costs a few words on a telephone band and with online
 * fMLLR, so a chain with `gpufmllr` should set remove-noise=false
 * (docs/benchmarks.md, issue 15 sections). It also restores clipped
 * peaks unless declip=false. remove-silence=true is refused:
 * a stream keeps every frame (docs/gpudecoder.md says why). Its live CMN
 * still learns only from the frames the VAD calls speech
 * (cmn-from-speech), as pocketsphinx's does, and each change of the VAD's
 * state (speech began; silence began, and where) goes downstream as a
 * `gpuspeech-vad` event (gst/gpuspeech_vad_event.h) before the frames
 * computed with it: gpudecoder ends and drops utterances by it
 * (`vad-endpointing`). cmn-skip-negative-c0=true
 * also leaves frames with a negative c0 (digital silence) out of the mean,
 * as Sphinx's CMN does (off by default, by measurement: docs/benchmarks.md).
 *
 * Sink caps: S16LE or F32LE (F32 scaled by 32768 to 16-bit units), mono, at
 * the configured sample rate. The element answers caps queries with that
 * rate, so audioconvert and audioresample upstream convert to it. Caps with
 * another rate, more than one channel or another format fail negotiation
 * with an error that names what upstream offered and what is needed.
 *
 * Stream behaviour:
 * - EOS: the last frames are computed (a zero-padded last partial frame
 *   unless the flavour snips edges; deltas replicate the last frame), pushed,
 *   then EOS is forwarded.
 * - DISCONT buffers, GAP events and new SEGMENT events end the current
 *   utterance exactly like EOS (its remaining frames are pushed) and start a
 *   new one: deltas and the voice activity detector restart, live CMN goes
 *   on from the mean the utterance left (`cmn-carry`; from cmn-init with
 *   cmn-carry=false), so does noise subtraction from its estimates
 *   (`noise-carry`; afresh with noise-carry=false), and timestamps
 *   are taken afresh from the next buffer. GAP events are forwarded
 *   unchanged (no frames are made for the gap; a consumer sees the same
 *   gap in the feature stream).
 * - FLUSH_STOP drops pending audio and frames without output.
 * - SEGMENT events are forwarded in TIME format (DEFAULT-format segments,
 *   in samples, are converted; others become an open TIME segment).
 * - Latency query: upstream latency plus frame length plus the look-ahead
 *   of TRAPS and deltas. With `cmn=batch` (or cvn) frames are held until the
 *   end of the utterance, so that mode suits files, not live sources.
 * - NaN and infinite samples (possible only in F32LE) are replaced by 0; the
 *   first one in a stream posts a warning message.
 *
 * Bus messages:
 *
 * `gpufeatures-backend`, posted once when the element starts:
 * - `backend` (string): "cuda", "opencl" or "cpu", the backend in use.
 * - `device` (string): the device's name.
 * - `reason` (string): why this backend (with `backend=auto`, what was
 *   tried first and why it was passed over).
 *
 * `gpufeatures-utterance`, posted at the end of each utterance (EOS,
 * DISCONT, GAP, SEGMENT) when `post-messages` is TRUE:
 * - `timestamp` (guint64): time of the utterance's first sample.
 * - `duration` (guint64): duration of the audio it received.
 * - `samples` (guint64): samples received.
 * - `frames` (guint64): frames pushed for it.
 * - `reason` (string): "eos", "discont", "gap" or "segment".
 * - `nonfinite-samples` (guint64): NaN/Inf samples replaced by 0 in it.
 * - `cmn-mean` (string; with live CMN and one warp): the running mean as
 *   the utterance left it, comma-separated, in the form `cmn-init` takes.
 *   A stream on the same channel can start from it rather than from the
 *   model's average, as pocketsphinx users carry `-cmninit` from one
 *   session to the next: a new channel's first words are otherwise
 *   decoded against another channel's mean (docs/benchmarks.md, "A
 *   stream's first sentence").
 *
 * An explicitly requested backend that is not available, a missing or
 * malformed `feat-params` file, or an invalid combination of properties is
 * an error message (RESOURCE/SETTINGS or RESOURCE/NOT_FOUND) and the state
 * change to PAUSED fails.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=speech.wav ! decodebin ! audioconvert ! \
 *     audioresample ! gpufeatures cmn=live deltas=1s_c_d_dd ! \
 *     filesink location=speech.feat
 * ]| Sphinx MFCC with live CMN and 39-dim deltas, written as raw float32.
 * |[
 * gst-launch-1.0 -m autoaudiosrc ! audioconvert ! audioresample ! \
 *     gpufeatures flavour=kaldi kind=fbank backend=auto ! fakesink
 * ]| Kaldi fbank from a microphone; -m shows which backend was taken.
 */
#include "gstgpufeatures.h"

#include <gst/audio/audio.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feat_params.h"
#include "common/features/feature_signature.h"
#include "common/features/feature_options.h"
#include "common/features/stream_extractor.h"
#include "gpuspeech_backend_choice.h"
#include "gpuspeech_cmn_meta.h"
#include "gpuspeech_vad_event.h"

/* Design: a plain GstElement with chain, event and query functions rather
 * than GstBaseTransform. Output buffers do not correspond to input buffers
 * (a frame straddles buffers, look-ahead holds frames back), EOS, DISCONT,
 * GAP and SEGMENT must push out pending frames, and the two pads carry
 * unrelated media types; BaseTransform's one-in/one-out size model would be
 * bypassed for all of it. The numbers come from
 * gpuspeech::StreamingFeatureExtractor (common/features/stream_extractor.h); this
 * file only adapts it to pads, caps, events and timestamps. */

GST_DEBUG_CATEGORY_STATIC (gst_gpu_features_debug);
#define GST_CAT_DEFAULT gst_gpu_features_debug

namespace gs = gpuspeech;

/* ------------------------------------------------------------------------ */
/* Enumerations for the properties                                          */

enum class DeltaChoice { kNone, kSphinx, kDelta, kDeltaDelta, kSphinxS2_4x };

#define GST_TYPE_GPU_FEATURES_FLAVOUR (gst_gpu_features_flavour_get_type ())
static GType
gst_gpu_features_flavour_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::Flavour::kSphinx, "CMU Sphinx (sphinx_fe, pocketsphinx)",
        "sphinx"},
    {(gint) gs::Flavour::kHtk, "HTK (HCopy)", "htk"},
    {(gint) gs::Flavour::kKaldi, "Kaldi (compute-mfcc-feats, torchaudio)",
        "kaldi"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesFlavour", values));
  return type;
}

#define GST_TYPE_GPU_FEATURES_KIND (gst_gpu_features_kind_get_type ())
static GType
gst_gpu_features_kind_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::FeatureKind::kMfcc, "Mel-frequency cepstral coefficients",
        "mfcc"},
    {(gint) gs::FeatureKind::kFbank, "Log mel filterbank energies", "fbank"},
    {(gint) gs::FeatureKind::kPlp, "Perceptual linear prediction cepstra",
        "plp"},
    {(gint) gs::FeatureKind::kTraps, "TRAPS (LC-RC) band trajectories",
        "traps"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesKind", values));
  return type;
}

#define GST_TYPE_GPU_FEATURES_WINDOW (gst_gpu_features_window_get_type ())
static GType
gst_gpu_features_window_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::WindowType::kHamming, "Hamming", "hamming"},
    {(gint) gs::WindowType::kHanning, "Hanning (Hann)", "hanning"},
    {(gint) gs::WindowType::kPovey, "Povey (Kaldi: Hann^0.85)", "povey"},
    {(gint) gs::WindowType::kRectangular, "Rectangular", "rectangular"},
    {(gint) gs::WindowType::kBlackman, "Blackman", "blackman"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesWindow", values));
  return type;
}

#define GST_TYPE_GPU_FEATURES_DELTAS (gst_gpu_features_deltas_get_type ())
static GType
gst_gpu_features_deltas_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) DeltaChoice::kNone, "No deltas (layout c)", "none"},
    {(gint) DeltaChoice::kSphinx,
        "Sphinx 1s_c_d_dd: d = c[t+2]-c[t-2], dd = d[t+1]-d[t-1]",
        "1s_c_d_dd"},
    {(gint) DeltaChoice::kDelta, "Regression deltas, window 2 (layout c_d)",
        "c_d"},
    {(gint) DeltaChoice::kDeltaDelta,
        "Regression deltas and accelerations, window 2 (layout c_d_dd)",
        "c_d_dd"},
    {(gint) DeltaChoice::kSphinxS2_4x,
        "Sphinx s2_4x, 4 streams of 12+24+3+12 from 13 cepstra "
        "(semi-continuous models such as tidigits)", "s2_4x"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesDeltas", values));
  return type;
}

#define GST_TYPE_GPU_FEATURES_CMN (gst_gpu_features_cmn_get_type ())
static GType
gst_gpu_features_cmn_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::NormOptions::Cmn::kNone, "No mean normalisation", "none"},
    {(gint) gs::NormOptions::Cmn::kBatch,
        "Mean over each utterance (frames wait for its end)", "batch"},
    {(gint) gs::NormOptions::Cmn::kLive,
        "Running mean starting from cmn-init (streams)", "live"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesCmn", values));
  return type;
}

/* Where noise subtraction's estimate starts (NoiseOptions::
 * start_at_first_sound, the value): the nicks are the CLI's --noise-start
 * names, from the one place that spells them. */
#define GST_TYPE_GPU_FEATURES_NOISE_START (gst_gpu_features_noise_start_get_type ())
static GType
gst_gpu_features_noise_start_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {FALSE, "At the stream's first frame, at its energy / 20 (as "
          "pocketsphinx and sphinx_fe)", gs::noise_start_name (false)},
    {TRUE, "At the first frame with sound, at its energy (digital silence "
          "before it leaves the estimate unset)", gs::noise_start_name (true)},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuFeaturesNoiseStart", values));
  return type;
}



/* ------------------------------------------------------------------------ */
/* Properties                                                               */

enum
{
  PROP_0,
  PROP_FEAT_PARAMS,
  PROP_SAMPLE_RATE,
  PROP_FLAVOUR,
  PROP_KIND,
  PROP_NUM_CEPS,
  PROP_NUM_FILTERS,
  PROP_LOW_FREQ,
  PROP_HIGH_FREQ,
  PROP_FRAME_LENGTH,
  PROP_FRAME_SHIFT,
  PROP_PREEMPHASIS,
  PROP_WINDOW,
  PROP_LIFTER,
  PROP_DELTAS,
  PROP_CMN,
  PROP_CMN_INIT,
  PROP_CMN_INIT_FRAMES,
  PROP_CMN_FROM_SPEECH,
  PROP_CMN_CARRY,
  PROP_CMN_SKIP_NEGATIVE_C0,
  PROP_CVN,
  PROP_VTLN_WARP,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_POST_MESSAGES,
  PROP_REMOVE_NOISE,
  PROP_NOISE_CARRY,
  PROP_NOISE_START,
  PROP_REMOVE_SILENCE,
  PROP_DECLIP,
  N_PROPS
};

/* Property values (under the object lock). `explicit_mask` has bit p set
 * once property p was set by the application: only those override the
 * flavour's or feat.params' values. */
struct Settings
{
  std::string feat_params;
  gint sample_rate;
  gs::Flavour flavour;
  gs::FeatureKind kind;
  gint num_ceps;
  gint num_filters;
  gfloat low_freq;
  gfloat high_freq;
  gfloat frame_length;
  gfloat frame_shift;
  gfloat preemphasis;
  gs::WindowType window;
  gint lifter;
  DeltaChoice deltas;
  gs::NormOptions::Cmn cmn;
  std::string cmn_init;
  gint cmn_init_frames;
  gboolean cmn_from_speech;
  gboolean cmn_carry;
  gboolean cmn_skip_negative_c0;
  gboolean cvn;
  gfloat vtln_warp;
  gpuspeech::BackendChoice backend;
  gint device_id;
  gboolean post_messages;
  gboolean remove_noise;
  gboolean noise_carry;
  gboolean noise_start_at_first_sound;
  gboolean remove_silence;
  gboolean declip;
  guint64 explicit_mask = 0;

  Settings ()
  {
    const gs::FeatureOptions d;       /* options.h: the Sphinx en-us values */
    sample_rate = (gint) d.frame.sample_rate;
    flavour = d.flavour;
    kind = d.kind;
    num_ceps = d.mfcc.num_ceps;
    num_filters = d.mel.num_filters;
    low_freq = d.mel.low_freq;
    high_freq = d.mel.high_freq;
    frame_length = d.frame.frame_length_ms;
    frame_shift = d.frame.frame_shift_ms;
    preemphasis = d.frame.preemphasis;
    window = d.frame.window;
    lifter = d.mfcc.lifter;
    deltas = DeltaChoice::kNone;
    cmn = d.norm.cmn;
    cmn_init_frames = d.norm.live_init_frames;
    cmn_from_speech = d.norm.live_from_speech;
    cmn_carry = TRUE;
    cmn_skip_negative_c0 = d.norm.skip_negative_c0;
    cvn = d.norm.cvn;
    vtln_warp = d.mel.vtln.warp;
    backend = gpuspeech::BackendChoice::kAuto;
    device_id = 0;
    post_messages = TRUE;
    remove_noise = d.noise.remove_noise;
    noise_carry = TRUE;
    noise_start_at_first_sound = d.noise.start_at_first_sound;
    remove_silence = d.noise.remove_silence;
    declip = d.declip.enabled;
  }
  bool is_set (guint prop) const
  {
    return (explicit_mask >> prop) & 1;
  }
};

/* The configuration could not be built; `not_found` marks a missing file. */
struct ConfigError:std::runtime_error
{
  bool not_found;
  ConfigError (const std::string & what, bool nf)
  : std::runtime_error (what), not_found (nf)
  {
  }
};

static std::vector < float >
parse_float_list (const std::string & text, const char *what)
{
  std::vector < float >values;
  std::string item;
  std::istringstream in (text);
  while (std::getline (in, item, ',')) {
    const char *s = item.c_str ();
    while (g_ascii_isspace (*s))
      ++s;
    if (*s == '\0')
      continue;
    char *end = NULL;
    const double v = g_ascii_strtod (s, &end);
    while (end && g_ascii_isspace (*end))
      ++end;
    if (end == s || (end && *end != '\0') || !std::isfinite (v))
      throw std::invalid_argument (std::string (what) + ": '" + item +
          "' is not a number (expected comma-separated numbers)");
    values.push_back ((float) v);
  }
  return values;
}

/* parse_float_list's inverse: comma-separated, locale-independent. */
static std::string
format_float_list (const std::vector < float >&values)
{
  std::string text;
  for (size_t i = 0; i < values.size (); ++i) {
    gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd (buf, sizeof buf, "%.3f", values[i]);
    text += (i ? "," : "") + std::string (buf);
  }
  return text;
}

/* FeatureOptions from the settings: flavour defaults or feat.params, then
 * explicit properties. Throws ConfigError with a message for the user. */
static gs::FeatureOptions
build_options (const Settings & s, std::vector < std::string > *warnings,
    bool validate = true)
{
  gs::FeatureOptions o;
  if (!s.feat_params.empty ()) {
    if (s.is_set (PROP_FLAVOUR) && s.flavour != gs::Flavour::kSphinx)
      throw ConfigError (std::string ("flavour=") + gs::to_string (s.flavour)
          + " cannot be combined with feat-params (a Sphinx model's front "
          "end); leave flavour unset or sphinx", false);
    if (!g_file_test (s.feat_params.c_str (), G_FILE_TEST_EXISTS))
      throw ConfigError ("feat-params file '" + s.feat_params +
          "' does not exist", true);
    try {
      gs::FeatParams fp = gs::parse_feat_params_file (s.feat_params, s.kind);
      o = fp.options;
      if (warnings)
        *warnings = fp.warnings;
    } catch (const std::exception & e) {
      throw ConfigError (std::string ("cannot use feat-params file: ") +
          e.what (), false);
    }
  } else {
    o = gs::FeatureOptions::for_flavour (s.flavour, s.kind);
  }
  if (s.is_set (PROP_SAMPLE_RATE))
    o.frame.sample_rate = (float) s.sample_rate;
  if (s.is_set (PROP_NUM_CEPS)) {
    o.mfcc.num_ceps = s.num_ceps;
    o.plp.num_ceps = s.num_ceps;
  }
  if (s.is_set (PROP_NUM_FILTERS)) {
    if (o.kind == gs::FeatureKind::kPlp)
      o.plp.num_filters = s.num_filters;
    else
      o.mel.num_filters = s.num_filters;
  }
  if (s.is_set (PROP_LOW_FREQ))
    o.mel.low_freq = s.low_freq;
  if (s.is_set (PROP_HIGH_FREQ))
    o.mel.high_freq = s.high_freq;
  if (s.is_set (PROP_FRAME_LENGTH))
    o.frame.frame_length_ms = s.frame_length;
  if (s.is_set (PROP_FRAME_SHIFT))
    o.frame.frame_shift_ms = s.frame_shift;
  if (s.is_set (PROP_PREEMPHASIS))
    o.frame.preemphasis = s.preemphasis;
  if (s.is_set (PROP_WINDOW))
    o.frame.window = s.window;
  if (s.is_set (PROP_LIFTER)) {
    o.mfcc.lifter = s.lifter;
    o.plp.lifter = s.lifter;
  }
  if (s.is_set (PROP_DELTAS)) {
    switch (s.deltas) {
      case DeltaChoice::kNone:
        o.delta.layout = gs::DeltaOptions::Layout::kNone;
        break;
      case DeltaChoice::kSphinx:
        o.delta.layout = gs::DeltaOptions::Layout::kSphinx1sCDDd;
        break;
      case DeltaChoice::kSphinxS2_4x:
        o.delta.layout = gs::DeltaOptions::Layout::kSphinxS2_4x;
        break;
      case DeltaChoice::kDelta:
      case DeltaChoice::kDeltaDelta:
        o.delta.layout = gs::DeltaOptions::Layout::kRegression;
        o.delta.order = s.deltas == DeltaChoice::kDelta ? 1 : 2;
        o.delta.window = 2;
        break;
    }
  }
  if (s.is_set (PROP_CMN))
    o.norm.cmn = s.cmn;
  if (s.is_set (PROP_CMN_INIT_FRAMES))
    o.norm.live_init_frames = s.cmn_init_frames;
  if (s.is_set (PROP_CMN_FROM_SPEECH))
    o.norm.live_from_speech = s.cmn_from_speech;
  if (s.is_set (PROP_CMN_SKIP_NEGATIVE_C0))
    o.norm.skip_negative_c0 = s.cmn_skip_negative_c0;
  if (s.is_set (PROP_CVN))
    o.norm.cvn = s.cvn;
  if (s.is_set (PROP_VTLN_WARP))
    o.mel.vtln.warp = s.vtln_warp;
  if (s.is_set (PROP_REMOVE_NOISE))
    o.noise.remove_noise = s.remove_noise;
  if (s.is_set (PROP_NOISE_START))
    o.noise.start_at_first_sound = s.noise_start_at_first_sound;
  if (s.is_set (PROP_REMOVE_SILENCE))
    o.noise.remove_silence = s.remove_silence;
  if (s.is_set (PROP_DECLIP))
    o.declip.enabled = s.declip;
  /* Dropping frames in a stream would leave gaps that neither the buffer
   * timestamps nor gpudecoder's frame clock (word times, endpointing)
   * account for; gpuspeech-transcribe drops them on whole files. */
  if (o.noise.remove_silence)
    throw ConfigError ("remove-silence=true is not supported by gpufeatures "
        "(dropped frames would break the stream's timestamps and the "
        "decoder's word times); it applies to whole files "
        "(gpuspeech-transcribe, gpuspeech-features --remove-silence)"
        + std::string (s.is_set (PROP_REMOVE_SILENCE) ? "" :
            ": feat-params turns it on, set remove-silence=false"), false);
  try {
    if (s.is_set (PROP_CMN_INIT))
      o.norm.cmn_init = parse_float_list (s.cmn_init, "cmn-init");
    /* Like sphinx, a shorter start (from the property or feat.params, and
     * num-ceps may have grown the features) is padded with zeros. */
    const size_t dim = (size_t) std::max (o.base_dim (), 0);
    if (o.norm.cmn_init.size () > dim)
      throw std::invalid_argument ("cmn-init has " +
          std::to_string (o.norm.cmn_init.size ()) +
          " values but the features have " + std::to_string (dim));
    if (!o.norm.cmn_init.empty ())
      o.norm.cmn_init.resize (dim, 0.0f);
    if (validate)
      o.validate ();
    if (o.frame.sample_rate != std::floor (o.frame.sample_rate))
      throw std::invalid_argument ("sample rate must be a whole number of Hz");
  } catch (const std::exception & e) {
    throw ConfigError (std::string ("invalid configuration: ") + e.what (),
        false);
  }
  return o;
}

/* ------------------------------------------------------------------------ */
/* Element state                                                            */

/* Everything the streaming thread uses; built in start(), dropped in
 * stop(). */
struct StreamState
{
  gs::FeatureOptions opts;
  gs::BackendPtr backend;
  std::unique_ptr < gs::StreamingFeatureExtractor > extractor;
  GstCaps *src_caps = NULL;
  gint rate = 0;
  gboolean post_messages = TRUE;
  gboolean cmn_carry = TRUE;

  /* negotiated input */
  gboolean have_format = FALSE;
  gboolean is_float = FALSE;
  guint8 partial[4];            /* bytes of a sample split across buffers */
  guint partial_len = 0;
  gboolean src_caps_pushed = FALSE;

  GstSegment segment;
  /* The detector's silence start last sent downstream (frames; -1: in
   * speech; -2: nothing sent since the utterance began). */
  gint64 vad_sent = -2;

  /* current utterance */
  gboolean have_base = FALSE;
  GstClockTime utt_base = 0;    /* time of the utterance's sample 0 */
  guint64 utt_nonfinite = 0;
  gboolean discont_pending = TRUE;

  /* whole stream */
  guint64 next_offset = 0;      /* frames pushed since the stream started */
  GstClockTime last_end = GST_CLOCK_TIME_NONE;  /* end of the last input */
  gboolean nonfinite_warned = FALSE;

  std::vector < float >samples;
  gs::FeatureMatrix frames;
  gs::CmnTrace trace;           /* live CMN's, of `frames` (GpuspeechCmnMeta) */

  StreamState ()
  {
    gst_segment_init (&segment, GST_FORMAT_TIME);
  }
  /* The last caps refused, with the error already posted: sticky caps come
   * again with every push upstream retries, and one error message is what
   * an application (and gst-launch, which can otherwise keep prerolling on
   * the EOS that follows) should see. */
  GstCaps *refused_caps = NULL;
  ~StreamState ()
  {
    if (src_caps)
      gst_caps_unref (src_caps);
    if (refused_caps)
      gst_caps_unref (refused_caps);
  }
};

struct _GstGpuFeatures
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  Settings *settings;           /* object lock */
  StreamState *stream;          /* NULL when stopped; stream lock */
  gint configured_rate;         /* atomic; 0 = not started */
  gint64 latency_ns;            /* atomic-ish, set at start */
};

#define gst_gpu_features_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (GstGpuFeatures, gst_gpu_features, GST_TYPE_ELEMENT,
    GST_DEBUG_CATEGORY_INIT (gst_gpu_features_debug, "gpufeatures", 0,
        "speech feature extraction"));
GST_ELEMENT_REGISTER_DEFINE (gpufeatures, "gpufeatures", GST_RANK_NONE,
    GST_TYPE_GPU_FEATURES);

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
    GST_STATIC_CAPS (GPUSPEECH_FEATURES_MEDIA_TYPE ", "
        "format = (string) F32LE, "
        "kind = (string) { mfcc, fbank, plp, traps }, "
        "flavour = (string) { sphinx, htk, kaldi }, "
        "dim = (int) [ 1, MAX ], "
        "base-dim = (int) [ 1, MAX ], "
        "frame-rate = (fraction) [ 0/1, MAX ], "
        "layout = (string) { c, 1s_c_d_dd, c_d, c_d_dd, s2_4x }, "
        "num-warps = (int) [ 1, MAX ], "
        "sample-rate = (int) [ 1, MAX ], "
        "cmn = (string) { none, batch, live }"));

static void gst_gpu_features_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpu_features_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_gpu_features_finalize (GObject * object);
static GstStateChangeReturn gst_gpu_features_change_state (GstElement *
    element, GstStateChange transition);
static GstFlowReturn gst_gpu_features_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean gst_gpu_features_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_gpu_features_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
static gboolean gst_gpu_features_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);

/* ------------------------------------------------------------------------ */
/* Class and instance                                                       */

static void
gst_gpu_features_class_init (GstGpuFeaturesClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const gs::FeatureOptions d;   /* defaults, options.h */
  const GParamFlags rw =
      (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_gpu_features_set_property;
  gobject_class->get_property = gst_gpu_features_get_property;
  gobject_class->finalize = gst_gpu_features_finalize;

  g_object_class_install_property (gobject_class, PROP_FEAT_PARAMS,
      g_param_spec_string ("feat-params", "feat.params file",
          "An acoustic model's feat.params (Sphinx front-end options, e.g. "
          "/usr/share/pocketsphinx/model/en-us/en-us/feat.params); its "
          "values replace the flavour's defaults, and properties set "
          "explicitly override both. NULL: flavour defaults",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_SAMPLE_RATE,
      g_param_spec_int ("sample-rate", "Sample rate",
          "Sample rate the features are defined for (Hz); the sink pad "
          "accepts only this rate (default: the flavour's or feat.params')",
          1000, 384000, (gint) d.frame.sample_rate, rw));
  g_object_class_install_property (gobject_class, PROP_FLAVOUR,
      g_param_spec_enum ("flavour", "Flavour",
          "Toolkit whose conventions and defaults the features follow",
          GST_TYPE_GPU_FEATURES_FLAVOUR, (gint) d.flavour, rw));
  g_object_class_install_property (gobject_class, PROP_KIND,
      g_param_spec_enum ("kind", "Kind", "Which features to compute",
          GST_TYPE_GPU_FEATURES_KIND, (gint) d.kind, rw));
  g_object_class_install_property (gobject_class, PROP_NUM_CEPS,
      g_param_spec_int ("num-ceps", "Cepstra",
          "Cepstral coefficients per frame (MFCC, PLP) "
          "(default: the flavour's or feat.params')",
          1, 1024, d.mfcc.num_ceps, rw));
  g_object_class_install_property (gobject_class, PROP_NUM_FILTERS,
      g_param_spec_int ("num-filters", "Filters",
          "Filterbank channels: mel filters (MFCC, fbank, TRAPS) or Bark "
          "bands (PLP) (default: the flavour's or feat.params')",
          1, 1024, d.mel.num_filters, rw));
  g_object_class_install_property (gobject_class, PROP_LOW_FREQ,
      g_param_spec_float ("low-freq", "Low frequency",
          "Lower edge of the filterbank in Hz "
          "(default: the flavour's or feat.params')",
          0.0f, 192000.0f, d.mel.low_freq, rw));
  g_object_class_install_property (gobject_class, PROP_HIGH_FREQ,
      g_param_spec_float ("high-freq", "High frequency",
          "Upper edge of the filterbank in Hz; <= 0 means that far below "
          "the Nyquist frequency (default: the flavour's or feat.params')",
          -192000.0f, 192000.0f, d.mel.high_freq, rw));
  g_object_class_install_property (gobject_class, PROP_FRAME_LENGTH,
      g_param_spec_float ("frame-length", "Frame length",
          "Analysis window length in milliseconds "
          "(default: the flavour's or feat.params')",
          0.1f, 1000.0f, d.frame.frame_length_ms, rw));
  g_object_class_install_property (gobject_class, PROP_FRAME_SHIFT,
      g_param_spec_float ("frame-shift", "Frame shift",
          "Distance between frame starts in milliseconds "
          "(default: the flavour's or feat.params')",
          0.1f, 1000.0f, d.frame.frame_shift_ms, rw));
  g_object_class_install_property (gobject_class, PROP_PREEMPHASIS,
      g_param_spec_float ("preemphasis", "Pre-emphasis",
          "Pre-emphasis coefficient a in y[n] = x[n] - a x[n-1]; 0 disables "
          "(default: the flavour's or feat.params')",
          0.0f, 0.999f, d.frame.preemphasis, rw));
  g_object_class_install_property (gobject_class, PROP_WINDOW,
      g_param_spec_enum ("window", "Window",
          "Analysis window (default: the flavour's)",
          GST_TYPE_GPU_FEATURES_WINDOW, (gint) d.frame.window, rw));
  g_object_class_install_property (gobject_class, PROP_LIFTER,
      g_param_spec_int ("lifter", "Lifter",
          "Cepstral lifter L (c_i *= 1 + L/2 sin(pi i / L)); 0 disables "
          "(default: the flavour's or feat.params')",
          0, 1000, d.mfcc.lifter, rw));
  g_object_class_install_property (gobject_class, PROP_DELTAS,
      g_param_spec_enum ("deltas", "Deltas",
          "Dynamic features appended to each frame "
          "(default: none, or feat.params' -feat)",
          GST_TYPE_GPU_FEATURES_DELTAS, (gint) DeltaChoice::kNone, rw));
  g_object_class_install_property (gobject_class, PROP_CMN,
      g_param_spec_enum ("cmn", "CMN",
          "Cepstral mean normalisation (default: none, or feat.params' -cmn)",
          GST_TYPE_GPU_FEATURES_CMN, (gint) d.norm.cmn, rw));
  g_object_class_install_property (gobject_class, PROP_CMN_INIT,
      g_param_spec_string ("cmn-init", "CMN start",
          "Comma-separated starting mean for live CMN (Sphinx -cmninit), "
          "padded with zeros to the feature dimension; NULL: start from the "
          "first frame (default: NULL, or feat.params' -cmninit). Combines "
          "with the front end taken from gpudecoder's model: a stream can "
          "start from its channel's mean as an earlier stream ended it "
          "(gpufeatures-utterance's cmn-mean)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_CMN_INIT_FRAMES,
      g_param_spec_int ("cmn-init-frames", "CMN start's weight",
          "How many frames cmn-init counts as when live CMN starts (Sphinx "
          "weighs it as its 500-frame window): with few, a stream's own "
          "speech takes the mean over within a second or two",
          1, G_MAXINT, d.norm.live_init_frames, rw));
  g_object_class_install_property (gobject_class, PROP_CMN_CARRY,
      g_param_spec_boolean ("cmn-carry", "Live CMN carried over",
          "Live CMN starts each utterance after the stream's first (after "
          "a DISCONT buffer, a GAP or a new SEGMENT) from the mean the "
          "utterance before it left, as pocketsphinx keeps its live CMN "
          "from utterance to utterance: the channel has not changed. "
          "false: every utterance starts from cmn-init, and its frames "
          "equal gpuspeech-features on its audio alone. A FLUSH (seek) "
          "and a restart go back to cmn-init either way",
          TRUE, rw));
  g_object_class_install_property (gobject_class, PROP_CMN_FROM_SPEECH,
      g_param_spec_boolean ("cmn-from-speech", "Live CMN from speech",
          "Live CMN learns its running mean only from the frames Sphinx's "
          "VAD calls speech, as pocketsphinx's CMN sees only the frames its "
          "VAD keeps; every frame is still normalised and passed on (the "
          "VAD's tracker runs for this even with remove-noise=false). For "
          "kind mfcc and fbank; PLP and TRAPS learn from every frame. "
          "false: every frame counts",
          d.norm.live_from_speech, rw));
  g_object_class_install_property (gobject_class, PROP_CMN_SKIP_NEGATIVE_C0,
      g_param_spec_boolean ("cmn-skip-negative-c0", "CMN skips negative c0",
          "CMN (batch or live) leaves frames whose c0 is negative (digital "
          "silence and near-silence) out of the mean it subtracts, as "
          "Sphinx's CMN does; every frame is still normalised. Sphinx MFCC "
          "only. Helps where digital silence follows the speech, costs a "
          "little on noisy audio (docs/benchmarks.md)",
          d.norm.skip_negative_c0, rw));
  g_object_class_install_property (gobject_class, PROP_CVN,
      g_param_spec_boolean ("cvn", "CVN",
          "Variance normalisation over each utterance (needs cmn=batch)",
          d.norm.cvn, rw));
  g_object_class_install_property (gobject_class, PROP_VTLN_WARP,
      g_param_spec_float ("vtln-warp", "VTLN warp",
          "Piecewise-linear VTLN frequency warp factor; 1 = none",
          0.51f, 1.99f, d.mel.vtln.warp, rw));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where to compute: auto takes a CUDA device, else an OpenCL GPU, "
          "else the CPU; a named backend that is unavailable is an error",
          GPUSPEECH_TYPE_BACKEND_CHOICE,
          (gint) gpuspeech::BackendChoice::kAuto, rw));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device",
          "Device index for the cuda and opencl backends", 0, G_MAXINT, 0,
          rw));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a gpufeatures-utterance element message at the end of each "
          "utterance", TRUE, rw));
  g_object_class_install_property (gobject_class, PROP_REMOVE_NOISE,
      g_param_spec_boolean ("remove-noise", "Remove noise",
          "Sphinx spectral noise subtraction on the mel energies (sphinx_fe "
          "and pocketsphinx -remove_noise; MFCC and fbank, one VTLN warp). "
          "Default: on when the front end is taken from gpudecoder's "
          "model (no front-end property set), as in pocketsphinx; set it "
          "false with gpufmllr (measured in docs/benchmarks.md); "
          "otherwise off, or feat.params' -remove_noise",
          d.noise.remove_noise, rw));
  g_object_class_install_property (gobject_class, PROP_NOISE_CARRY,
      g_param_spec_boolean ("noise-carry", "Noise estimate carried over",
          "The noise subtraction's estimates (noise level, signal floor, "
          "peaks per band; with cmn-from-speech they also make the speech "
          "decisions live CMN learns from) go on from one utterance to "
          "the next (after a DISCONT buffer, a GAP or a new SEGMENT), "
          "as pocketsphinx keeps them for a whole stream: the channel has "
          "not changed, and a fresh estimate takes the utterance's first "
          "frames to learn the noise. false: every utterance starts them "
          "afresh (and with cmn-carry=false too, an utterance's frames "
          "equal gpuspeech-features on its audio alone). A FLUSH (seek) "
          "and a restart start them afresh either way; the voice activity "
          "detector starts each utterance in silence either way",
          TRUE, rw));
  g_object_class_install_property (gobject_class, PROP_NOISE_START,
      g_param_spec_enum ("noise-start", "Where the noise estimate starts",
          "With remove-noise: first-frame starts the noise estimate at the "
          "stream's first frame, at its energy / 20, as pocketsphinx and "
          "sphinx_fe do (0 after digital silence, so the first seconds of "
          "noise pass for speech); first-sound skips digital silence and "
          "starts it at the first sound's energy, as gpuspeech-transcribe "
          "does by default (docs/benchmarks.md, \"The noise "
          "estimate started at the first sound\"). The same at every "
          "fresh start of the estimate (see noise-carry)",
          GST_TYPE_GPU_FEATURES_NOISE_START,
          d.noise.start_at_first_sound, rw));
  g_object_class_install_property (gobject_class, PROP_DECLIP,
      g_param_spec_boolean ("declip", "Restore clipped peaks",
          "Redraw runs of 2 to 4 ms of (nearly) equal samples at the "
          "signal's peak level that recur at one level, as a level pushed "
          "past full scale leaves them, from the samples around them, "
          "before framing (the first two runs of a plateau stay; holds "
          "samples back by at most 4 ms). Default: on when the front end "
          "is taken from gpudecoder's model (no front-end property set), "
          "as gpuspeech-transcribe does; otherwise off (sphinx_fe and "
          "Kaldi have no such stage)",
          d.declip.enabled, rw));
  g_object_class_install_property (gobject_class, PROP_REMOVE_SILENCE,
      g_param_spec_boolean ("remove-silence", "Remove silence",
          "Drop the frames Sphinx's voice activity detector calls silence "
          "(-remove_silence). Not supported in a stream: true is refused "
          "when the element starts, since dropped frames would break the "
          "timestamps and gpudecoder's word times; gpuspeech-transcribe "
          "does it on whole files",
          d.noise.remove_silence, rw));

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_gpu_features_change_state);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Speech feature extractor", "Filter/Analyzer/Audio",
      "Computes MFCC, filterbank, PLP or TRAPS speech features on a GPU "
      "(CUDA, OpenCL) or the CPU",
      "gpuspeech developers");

  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FEATURES_FLAVOUR,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FEATURES_KIND,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FEATURES_WINDOW,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FEATURES_DELTAS,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_FEATURES_CMN,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GPUSPEECH_TYPE_BACKEND_CHOICE,
      (GstPluginAPIFlags) 0);
}

static void
gst_gpu_features_init (GstGpuFeatures * self)
{
  self->settings = new Settings ();
  self->stream = NULL;
  self->configured_rate = 0;
  self->latency_ns = 0;

  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_features_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_features_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_features_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_gpu_features_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

static void
gst_gpu_features_finalize (GObject * object)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (object);
  delete self->stream;
  self->stream = NULL;
  delete self->settings;
  self->settings = NULL;
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_gpu_features_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (object);
  GST_OBJECT_LOCK (self);
  Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_FEAT_PARAMS:{
      const gchar *v = g_value_get_string (value);
      s.feat_params = v ? v : "";
      break;
    }
    case PROP_SAMPLE_RATE:
      s.sample_rate = g_value_get_int (value);
      break;
    case PROP_FLAVOUR:
      s.flavour = (gs::Flavour) g_value_get_enum (value);
      break;
    case PROP_KIND:
      s.kind = (gs::FeatureKind) g_value_get_enum (value);
      break;
    case PROP_NUM_CEPS:
      s.num_ceps = g_value_get_int (value);
      break;
    case PROP_NUM_FILTERS:
      s.num_filters = g_value_get_int (value);
      break;
    case PROP_LOW_FREQ:
      s.low_freq = g_value_get_float (value);
      break;
    case PROP_HIGH_FREQ:
      s.high_freq = g_value_get_float (value);
      break;
    case PROP_FRAME_LENGTH:
      s.frame_length = g_value_get_float (value);
      break;
    case PROP_FRAME_SHIFT:
      s.frame_shift = g_value_get_float (value);
      break;
    case PROP_PREEMPHASIS:
      s.preemphasis = g_value_get_float (value);
      break;
    case PROP_WINDOW:
      s.window = (gs::WindowType) g_value_get_enum (value);
      break;
    case PROP_LIFTER:
      s.lifter = g_value_get_int (value);
      break;
    case PROP_DELTAS:
      s.deltas = (DeltaChoice) g_value_get_enum (value);
      break;
    case PROP_CMN:
      s.cmn = (gs::NormOptions::Cmn) g_value_get_enum (value);
      break;
    case PROP_CMN_INIT:{
      const gchar *v = g_value_get_string (value);
      s.cmn_init = v ? v : "";
      break;
    }
    case PROP_CMN_INIT_FRAMES:
      s.cmn_init_frames = g_value_get_int (value);
      break;
    case PROP_CMN_CARRY:
      s.cmn_carry = g_value_get_boolean (value);
      break;
    case PROP_CMN_FROM_SPEECH:
      s.cmn_from_speech = g_value_get_boolean (value);
      break;
    case PROP_CMN_SKIP_NEGATIVE_C0:
      s.cmn_skip_negative_c0 = g_value_get_boolean (value);
      break;
    case PROP_CVN:
      s.cvn = g_value_get_boolean (value);
      break;
    case PROP_VTLN_WARP:
      s.vtln_warp = g_value_get_float (value);
      break;
    case PROP_BACKEND:
      s.backend = (gpuspeech::BackendChoice) g_value_get_enum (value);
      break;
    case PROP_DEVICE_ID:
      s.device_id = g_value_get_int (value);
      break;
    case PROP_POST_MESSAGES:
      s.post_messages = g_value_get_boolean (value);
      break;
    case PROP_REMOVE_NOISE:
      s.remove_noise = g_value_get_boolean (value);
      break;
    case PROP_NOISE_CARRY:
      s.noise_carry = g_value_get_boolean (value);
      break;
    case PROP_NOISE_START:
      s.noise_start_at_first_sound = g_value_get_enum (value) != FALSE;
      break;
    case PROP_REMOVE_SILENCE:
      s.remove_silence = g_value_get_boolean (value);
      break;
    case PROP_DECLIP:
      s.declip = g_value_get_boolean (value);
      break;
    default:
      GST_OBJECT_UNLOCK (self);
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
  }
  s.explicit_mask |= G_GUINT64_CONSTANT (1) << prop_id;
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_features_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (object);
  GST_OBJECT_LOCK (self);
  const Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_FEAT_PARAMS:
      g_value_set_string (value,
          s.feat_params.empty ()? NULL : s.feat_params.c_str ());
      break;
    case PROP_SAMPLE_RATE:
      g_value_set_int (value, s.sample_rate);
      break;
    case PROP_FLAVOUR:
      g_value_set_enum (value, (gint) s.flavour);
      break;
    case PROP_KIND:
      g_value_set_enum (value, (gint) s.kind);
      break;
    case PROP_NUM_CEPS:
      g_value_set_int (value, s.num_ceps);
      break;
    case PROP_NUM_FILTERS:
      g_value_set_int (value, s.num_filters);
      break;
    case PROP_LOW_FREQ:
      g_value_set_float (value, s.low_freq);
      break;
    case PROP_HIGH_FREQ:
      g_value_set_float (value, s.high_freq);
      break;
    case PROP_FRAME_LENGTH:
      g_value_set_float (value, s.frame_length);
      break;
    case PROP_FRAME_SHIFT:
      g_value_set_float (value, s.frame_shift);
      break;
    case PROP_PREEMPHASIS:
      g_value_set_float (value, s.preemphasis);
      break;
    case PROP_WINDOW:
      g_value_set_enum (value, (gint) s.window);
      break;
    case PROP_LIFTER:
      g_value_set_int (value, s.lifter);
      break;
    case PROP_DELTAS:
      g_value_set_enum (value, (gint) s.deltas);
      break;
    case PROP_CMN:
      g_value_set_enum (value, (gint) s.cmn);
      break;
    case PROP_CMN_INIT:
      g_value_set_string (value,
          s.cmn_init.empty ()? NULL : s.cmn_init.c_str ());
      break;
    case PROP_CMN_INIT_FRAMES:
      g_value_set_int (value, s.cmn_init_frames);
      break;
    case PROP_CMN_CARRY:
      g_value_set_boolean (value, s.cmn_carry);
      break;
    case PROP_CMN_FROM_SPEECH:
      g_value_set_boolean (value, s.cmn_from_speech);
      break;
    case PROP_CMN_SKIP_NEGATIVE_C0:
      g_value_set_boolean (value, s.cmn_skip_negative_c0);
      break;
    case PROP_CVN:
      g_value_set_boolean (value, s.cvn);
      break;
    case PROP_VTLN_WARP:
      g_value_set_float (value, s.vtln_warp);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, (gint) s.backend);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, s.device_id);
      break;
    case PROP_REMOVE_NOISE:
      g_value_set_boolean (value, s.remove_noise);
      break;
    case PROP_NOISE_CARRY:
      g_value_set_boolean (value, s.noise_carry);
      break;
    case PROP_NOISE_START:
      g_value_set_enum (value, s.noise_start_at_first_sound);
      break;
    case PROP_REMOVE_SILENCE:
      g_value_set_boolean (value, s.remove_silence);
      break;
    case PROP_DECLIP:
      g_value_set_boolean (value, s.declip);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, s.post_messages);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Caps                                                                     */

static GstCaps *
make_src_caps (const gs::FeatureOptions & o, int frame_shift)
{
  const gint rate = (gint) o.frame.sample_rate;
  const gint gcd = gst_util_greatest_common_divisor (rate, frame_shift);
  const std::string signature = gs::feature_signature (o);
  const char *cmn = o.norm.cmn == gs::NormOptions::Cmn::kBatch ? "batch" :
      o.norm.cmn == gs::NormOptions::Cmn::kLive ? "live" : "none";
  return gst_caps_new_simple (GPUSPEECH_FEATURES_MEDIA_TYPE,
      "format", G_TYPE_STRING, "F32LE",
      "kind", G_TYPE_STRING, gs::to_string (o.kind),
      "flavour", G_TYPE_STRING, gs::to_string (o.flavour),
      "dim", G_TYPE_INT, o.output_dim (),
      "base-dim", G_TYPE_INT, o.base_dim (),
      "frame-rate", GST_TYPE_FRACTION, rate / gcd, frame_shift / gcd,
      "layout", G_TYPE_STRING, gs::feature_layout_name (o.delta).c_str (),
      "num-warps", G_TYPE_INT, 1,
      "sample-rate", G_TYPE_INT, rate,
      "cmn", G_TYPE_STRING, cmn,
      "config", G_TYPE_STRING, signature.c_str (), NULL);
}

/* Options from the current property values, for queries before start();
 * FALSE when they do not form a valid configuration (start() will say
 * why). */
static gboolean
peek_options (GstGpuFeatures * self, gs::FeatureOptions * out,
    bool validate = true)
{
  GST_OBJECT_LOCK (self);
  Settings copy = *self->settings;
  GST_OBJECT_UNLOCK (self);
  try {
    *out = build_options (copy, NULL, validate);
    return TRUE;
  } catch (const std::exception & e) {
    GST_DEBUG_OBJECT (self, "configuration not usable yet: %s", e.what ());
    return FALSE;
  }
}

static gint
expected_rate (GstGpuFeatures * self)
{
  gint rate = g_atomic_int_get (&self->configured_rate);
  if (rate > 0)
    return rate;
  /* Before start: the rate the properties (or feat.params) ask for, even if
   * other options are still inconsistent (start() will report those). */
  gs::FeatureOptions o;
  return peek_options (self, &o, false) ? (gint) o.frame.sample_rate : 0;
}

/* Checks upstream's caps against what the features need; on a mismatch
 * posts an error naming both sides. */
static gboolean
gst_gpu_features_set_sink_caps (GstGpuFeatures * self, GstCaps * caps)
{
  StreamState *st = self->stream;
  if (!st) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("caps arrived before the element was started"));
    return FALSE;
  }
  if (st->refused_caps && gst_caps_is_equal (caps, st->refused_caps))
    return FALSE;
  gchar *offered = gst_caps_to_string (caps);
  GstAudioInfo info;
  gboolean ok = TRUE;
  const GstStructure *s = gst_caps_get_size (caps) > 0 ?
      gst_caps_get_structure (caps, 0) : NULL;
  if (!s || !gst_structure_has_name (s, "audio/x-raw")
      || !gst_audio_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufeatures needs raw audio (audio/x-raw, S16LE or F32LE, mono, "
            "%d Hz), but upstream offers %s", st->rate, offered),
        ("unparseable or non-raw caps"));
    ok = FALSE;
  } else if (GST_AUDIO_INFO_CHANNELS (&info) != 1) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufeatures needs mono audio, but upstream offers %d channels "
            "(put audioconvert before gpufeatures)",
            GST_AUDIO_INFO_CHANNELS (&info)), ("upstream caps: %s", offered));
    ok = FALSE;
  } else if (GST_AUDIO_INFO_RATE (&info) != st->rate) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufeatures is configured for %d Hz audio, but upstream offers "
            "%d Hz (put audioresample before gpufeatures, or set "
            "sample-rate=%d)", st->rate, GST_AUDIO_INFO_RATE (&info),
            GST_AUDIO_INFO_RATE (&info)), ("upstream caps: %s", offered));
    ok = FALSE;
  } else if (GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_S16LE
      && GST_AUDIO_INFO_FORMAT (&info) != GST_AUDIO_FORMAT_F32LE) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufeatures needs S16LE or F32LE samples, but upstream offers %s "
            "(put audioconvert before gpufeatures)",
            GST_AUDIO_INFO_NAME (&info)), ("upstream caps: %s", offered));
    ok = FALSE;
  } else if (GST_AUDIO_INFO_LAYOUT (&info) != GST_AUDIO_LAYOUT_INTERLEAVED) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("gpufeatures needs interleaved audio, but upstream offers %s",
            offered), (NULL));
    ok = FALSE;
  }
  g_free (offered);
  if (!ok) {
    gst_caps_replace (&st->refused_caps, caps);
    return FALSE;
  }

  const gboolean is_float =
      GST_AUDIO_INFO_FORMAT (&info) == GST_AUDIO_FORMAT_F32LE;
  if (st->have_format && is_float != st->is_float)
    st->partial_len = 0;        /* bytes of the old format mean nothing */
  st->is_float = is_float;
  st->have_format = TRUE;

  if (!st->src_caps_pushed) {
    if (gst_pad_is_linked (self->srcpad)
        && !gst_pad_peer_query_accept_caps (self->srcpad, st->src_caps)) {
      GstCaps *peer = gst_pad_peer_query_caps (self->srcpad, NULL);
      gchar *mine = gst_caps_to_string (st->src_caps);
      gchar *theirs = peer ? gst_caps_to_string (peer) : g_strdup ("nothing");
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("downstream does not accept the features gpufeatures produces: "
              "gpufeatures produces %s; downstream accepts %s", mine, theirs),
          (NULL));
      g_free (mine);
      g_free (theirs);
      if (peer)
        gst_caps_unref (peer);
      return FALSE;
    }
    if (!gst_pad_push_event (self->srcpad,
            gst_event_new_caps (st->src_caps))) {
      gchar *mine = gst_caps_to_string (st->src_caps);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("downstream refused the feature caps %s", mine), (NULL));
      g_free (mine);
      return FALSE;
    }
    st->src_caps_pushed = TRUE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                */

static GstClockTime
frame_time (const StreamState * st, int64_t frame)
{
  const int64_t sample = st->extractor->frame_start_sample (frame);
  return st->utt_base + gst_util_uint64_scale_int ((guint64) sample,
      GST_SECOND, st->rate);
}

/* Pushes frames [first, first + rows) of the current utterance. */
static GstFlowReturn
push_frames (GstGpuFeatures * self, const gs::FeatureMatrix & m,
    int64_t first)
{
  StreamState *st = self->stream;
  if (m.rows == 0)
    return GST_FLOW_OK;
  const gsize bytes = (gsize) m.rows * m.dim * sizeof (float);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, bytes, NULL);
  if (!buf) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, (NULL),
        ("could not allocate %" G_GSIZE_FORMAT " bytes", bytes));
    return GST_FLOW_ERROR;
  }
  gst_buffer_fill (buf, 0, m.data.data (), bytes);
  if (st->extractor->cmn_trace_enabled ()) {
    st->extractor->take_cmn_trace (st->trace);
    if (st->trace.rows () == m.rows && st->trace.dim == m.dim)
      gpuspeech_buffer_add_cmn_meta (buf, (guint) m.rows, (guint) m.dim,
          st->trace.offsets.data (), st->trace.learned.data ());
    else
      GST_WARNING_OBJECT (self, "live CMN's trace has %" G_GINT64_FORMAT
          " frames for %" G_GINT64_FORMAT, (gint64) st->trace.rows (),
          (gint64) m.rows);
  }
  const GstClockTime start = frame_time (st, first);
  const GstClockTime end = frame_time (st, first + m.rows);
  GST_BUFFER_PTS (buf) = start;
  GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buf) = end - start;
  GST_BUFFER_OFFSET (buf) = st->next_offset;
  GST_BUFFER_OFFSET_END (buf) = st->next_offset + m.rows;
  if (st->discont_pending) {
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    st->discont_pending = FALSE;
  }
  st->next_offset += m.rows;
  GST_LOG_OBJECT (self, "pushing %" G_GINT64_FORMAT " frames at %"
      GST_TIME_FORMAT, (gint64) m.rows, GST_TIME_ARGS (start));
  return gst_pad_push (self->srcpad, buf);
}

/* Tells downstream where the voice activity detector's silence began, or
 * that speech began, when that changed since it last did (see
 * gpuspeech_vad_event.h). Nothing without a detector. */
static void
push_vad_state (GstGpuFeatures * self)
{
  StreamState *st = self->stream;
  const int64_t start = st->extractor->vad_silence_start ();
  if (start == st->vad_sent || (start < 0 && st->vad_sent == -2))
    return;
  st->vad_sent = start;
  GstEvent *event = start >= 0 ?
      gpuspeech_vad_event_new (FALSE, frame_time (st, start)) :
      gpuspeech_vad_event_new (TRUE, GST_CLOCK_TIME_NONE);
  GST_LOG_OBJECT (self, "voice activity: %s",
      start >= 0 ? "silence" : "speech");
  gst_pad_push_event (self->srcpad, event);
}

/* Ends the current utterance: pushes its last frames, posts the utterance
 * message and makes the next buffer start a new one. */
static GstFlowReturn
end_utterance (GstGpuFeatures * self, const char *reason)
{
  StreamState *st = self->stream;
  if (!st || !st->extractor)
    return GST_FLOW_OK;
  const int64_t samples = st->extractor->samples_accepted ();
  const int64_t first = st->extractor->frames_emitted ();
  GstFlowReturn ret = GST_FLOW_OK;
  st->frames.rows = 0;
  st->frames.data.clear ();
  std::vector<float> cmn_mean;
  try {
    st->extractor->flush (st->frames, &cmn_mean);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("feature extraction failed: %s", e.what ()), (NULL));
    st->extractor->reset ();
    return GST_FLOW_ERROR;
  }
  const int64_t frames = first + st->frames.rows;
  if (st->frames.rows > 0) {
    if (!st->have_base)         /* cannot happen with samples; be safe */
      st->utt_base = 0;
    ret = push_frames (self, st->frames, first);
  }
  if (samples > 0 && st->post_messages) {
    GstStructure *s = gst_structure_new ("gpufeatures-utterance",
        "timestamp", G_TYPE_UINT64, (guint64) st->utt_base,
        "duration", G_TYPE_UINT64,
        gst_util_uint64_scale_int ((guint64) samples, GST_SECOND, st->rate),
        "samples", G_TYPE_UINT64, (guint64) samples,
        "frames", G_TYPE_UINT64, (guint64) frames,
        "reason", G_TYPE_STRING, reason,
        "nonfinite-samples", G_TYPE_UINT64, st->utt_nonfinite, NULL);
    /* Only where cmn-init can take it back: one set of cepstra (several
     * VTLN warps normalise a mean per warp). */
    if (!cmn_mean.empty () && (int) cmn_mean.size () == st->opts.base_dim ())
      gst_structure_set (s, "cmn-mean", G_TYPE_STRING,
          format_float_list (cmn_mean).c_str (), NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }
  if (samples > 0)
    GST_DEBUG_OBJECT (self, "utterance ended (%s): %" G_GINT64_FORMAT
        " samples, %" G_GINT64_FORMAT " frames", reason, (gint64) samples,
        (gint64) frames);
  /* The same channel goes on: the next utterance's live CMN starts where
   * this one left it (cmn-carry). flush() left the extractor reset. */
  if (st->cmn_carry && !cmn_mean.empty ()) {
    try {
      st->extractor->restart_live_cmn_from (cmn_mean);
    } catch (const std::exception & e) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED,
          ("feature extraction failed: %s", e.what ()), (NULL));
      return GST_FLOW_ERROR;
    }
  }
  st->have_base = FALSE;
  st->utt_nonfinite = 0;
  st->vad_sent = -2;
  st->discont_pending = TRUE;   /* the next utterance starts afresh */
  return ret;
}

/* Drops the current utterance without output (FLUSH). */
static void
drop_utterance (StreamState * st)
{
  if (st->extractor)
    st->extractor->reset ();
  st->have_base = FALSE;
  st->utt_nonfinite = 0;
  st->vad_sent = -2;
  st->partial_len = 0;
  st->discont_pending = TRUE;
  st->last_end = GST_CLOCK_TIME_NONE;
}

/* Converts `size` bytes (after any carried partial sample) to samples in
 * 16-bit units; returns how many NaN/Inf values were replaced by 0. */
static guint64
convert_samples (StreamState * st, const guint8 * data, gsize size)
{
  const guint bps = st->is_float ? 4 : 2;
  st->samples.clear ();
  guint64 nonfinite = 0;
  auto take = [&](const guint8 * p) {
    float v;
    if (st->is_float) {
      v = GST_READ_FLOAT_LE (p) * 32768.0f;
      if (!std::isfinite (v)) {
        v = 0.0f;
        ++nonfinite;
      }
    } else {
      v = (float) (gint16) GST_READ_UINT16_LE (p);
    }
    st->samples.push_back (v);
  };
  gsize pos = 0;
  if (st->partial_len > 0) {
    while (st->partial_len < bps && pos < size)
      st->partial[st->partial_len++] = data[pos++];
    if (st->partial_len == bps) {
      take (st->partial);
      st->partial_len = 0;
    }
  }
  const gsize whole = (size - pos) / bps;
  st->samples.reserve (st->samples.size () + whole);
  for (gsize i = 0; i < whole; ++i)
    take (data + pos + i * bps);
  pos += whole * bps;
  while (pos < size)
    st->partial[st->partial_len++] = data[pos++];
  return nonfinite;
}

static GstFlowReturn
gst_gpu_features_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (parent);
  StreamState *st = self->stream;
  (void) pad;

  if (!st || !st->extractor || !st->have_format) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("received audio before caps"));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  GstFlowReturn ret = GST_FLOW_OK;
  if (GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DISCONT)
      && st->extractor->samples_accepted () > 0) {
    GST_DEBUG_OBJECT (self, "DISCONT: ending the utterance");
    ret = end_utterance (self, "discont");
    st->partial_len = 0;
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buffer);
      return ret;
    }
  }

  if (!st->have_base) {
    /* The utterance's clock: this buffer's PTS, else where the previous
     * input ended, else the segment start. Later timestamps count samples,
     * so frames straddling buffers need no interpolation. */
    if (GST_BUFFER_PTS_IS_VALID (buffer))
      st->utt_base = GST_BUFFER_PTS (buffer);
    else if (GST_CLOCK_TIME_IS_VALID (st->last_end))
      st->utt_base = st->last_end;
    else if (st->segment.format == GST_FORMAT_TIME
        && GST_CLOCK_TIME_IS_VALID (st->segment.start))
      st->utt_base = st->segment.start;
    else
      st->utt_base = 0;
    st->have_base = TRUE;
  }

  GstMapInfo map;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("could not map the input buffer"));
    return GST_FLOW_ERROR;
  }
  const guint64 nonfinite = convert_samples (st, map.data, map.size);
  gst_buffer_unmap (buffer, &map);

  if (nonfinite > 0) {
    st->utt_nonfinite += nonfinite;
    if (!st->nonfinite_warned) {
      st->nonfinite_warned = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FORMAT,
          ("input audio contains NaN or infinite samples; gpufeatures "
              "replaces them by 0 (warned once per stream)"),
          ("%" G_GUINT64_FORMAT " such samples in the buffer at %"
              GST_TIME_FORMAT, nonfinite,
              GST_TIME_ARGS (GST_BUFFER_PTS (buffer))));
    }
  }

  const int64_t first = st->extractor->frames_emitted ();
  st->frames.rows = 0;
  st->frames.data.clear ();
  try {
    st->extractor->accept (st->samples.data (), st->samples.size (),
        st->frames);
  } catch (const std::exception & e) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("feature extraction failed: %s", e.what ()), (NULL));
    return GST_FLOW_ERROR;
  }
  st->last_end = st->utt_base +
      gst_util_uint64_scale_int ((guint64) st->extractor->samples_accepted (),
      GST_SECOND, st->rate);
  gst_buffer_unref (buffer);
  /* The detector's change first: it concerns frames of this buffer or
   * earlier (it runs on the spectral frames, ahead of the deltas), and a
   * decoder that learns it after the frames would treat the onset of
   * speech in them as silence. */
  push_vad_state (self);
  return push_frames (self, st->frames, first);
}

static gboolean
gst_gpu_features_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (parent);
  StreamState *st = self->stream;

  GST_LOG_OBJECT (self, "sink event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      const gboolean ok = gst_gpu_features_set_sink_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_SEGMENT:{
      if (!st)
        break;
      GstSegment seg;
      gst_event_copy_segment (event, &seg);
      if (end_utterance (self, "segment") == GST_FLOW_ERROR) {
        gst_event_unref (event);
        return FALSE;
      }
      if (seg.format == GST_FORMAT_DEFAULT) {
        /* Samples to time, so that the output segment matches the
         * timestamps. */
        GstSegment t;
        gst_segment_init (&t, GST_FORMAT_TIME);
        t.rate = seg.rate;
        t.applied_rate = seg.applied_rate;
        t.flags = seg.flags;
        t.start = gst_util_uint64_scale_int (seg.start, GST_SECOND, st->rate);
        t.stop = GST_CLOCK_TIME_IS_VALID (seg.stop) ?
            gst_util_uint64_scale_int (seg.stop, GST_SECOND, st->rate) :
            GST_CLOCK_TIME_NONE;
        t.time = gst_util_uint64_scale_int (seg.time, GST_SECOND, st->rate);
        t.position = t.start;
        seg = t;
      } else if (seg.format != GST_FORMAT_TIME) {
        GST_DEBUG_OBJECT (self, "replacing a %s segment by an open TIME one",
            gst_format_get_name (seg.format));
        gst_segment_init (&seg, GST_FORMAT_TIME);
      }
      st->segment = seg;
      GstEvent *out = gst_event_new_segment (&seg);
      gst_event_set_seqnum (out, gst_event_get_seqnum (event));
      gst_event_unref (event);
      return gst_pad_push_event (self->srcpad, out);
    }
    case GST_EVENT_EOS:
      if (st)
        end_utterance (self, "eos");
      break;
    case GST_EVENT_GAP:
      if (st)
        end_utterance (self, "gap");
      break;
    case GST_EVENT_FLUSH_STOP:
      if (st) {
        drop_utterance (st);
        st->next_offset = 0;
        st->nonfinite_warned = FALSE;
        gst_segment_init (&st->segment, GST_FORMAT_TIME);
      }
      break;
    case GST_EVENT_STREAM_START:
      if (st)
        st->nonfinite_warned = FALSE;
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                  */

static gboolean
gst_gpu_features_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (parent);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      /* Only the configured rate, so that audioresample converts. */
      GstCaps *filter;
      gst_query_parse_caps (query, &filter);
      GstCaps *caps = gst_pad_get_pad_template_caps (pad);
      const gint rate = expected_rate (self);
      if (rate > 0) {
        caps = gst_caps_make_writable (caps);
        gst_caps_set_simple (caps, "rate", G_TYPE_INT, rate, NULL);
      }
      if (filter) {
        GstCaps *tmp = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    case GST_QUERY_ACCEPT_CAPS:{
      /* Accept any fixed raw audio here so that the CAPS event reaches
       * set_sink_caps, which explains a mismatch instead of failing
       * silently. The CAPS query above is what steers negotiation. */
      GstCaps *caps;
      gst_query_parse_accept_caps (query, &caps);
      const GstStructure *s = gst_caps_is_fixed (caps) ?
          gst_caps_get_structure (caps, 0) : NULL;
      gst_query_set_accept_caps_result (query, s != NULL
          && gst_structure_has_name (s, "audio/x-raw"));
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      /* Output is a different media type: nothing to forward. */
      return FALSE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_gpu_features_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (parent);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *filter;
      gst_query_parse_caps (query, &filter);
      GstCaps *caps = gst_pad_get_current_caps (pad);
      if (!caps) {
        gs::FeatureOptions o;
        if (peek_options (self, &o))
          caps = make_src_caps (o, o.frame.frame_shift_samples ());
        else
          caps = gst_pad_get_pad_template_caps (pad);
      }
      if (filter) {
        GstCaps *tmp = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    case GST_QUERY_LATENCY:{
      if (!gst_pad_peer_query (self->sinkpad, query))
        return FALSE;
      gboolean live;
      GstClockTime min, max;
      gst_query_parse_latency (query, &live, &min, &max);
      const GstClockTime ours = (GstClockTime) self->latency_ns;
      GST_DEBUG_OBJECT (self, "upstream latency %" GST_TIME_FORMAT
          ", ours %" GST_TIME_FORMAT, GST_TIME_ARGS (min),
          GST_TIME_ARGS (ours));
      min += ours;
      if (GST_CLOCK_TIME_IS_VALID (max))
        max += ours;
      gst_query_set_latency (query, live, min, max);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                           */

/* With no front-end property set, takes the feat.params file downstream's
 * caps name (gpudecoder's model), with live CMN: a streaming decoder wants
 * frames as the audio arrives, not at the end of each utterance. */
static void
adopt_downstream_front_end (GstGpuFeatures * self, Settings * settings)
{
  /* remove-noise, remove-silence and declip choose a stage, not the
   * model's front end: they combine with adopting it. So do live CMN's
   * start (cmn-init, cmn-init-frames: a stream's channel known from an
   * earlier stream), what it learns from and whether it carries over. */
  const guint64 non_shaping = (1ull << PROP_BACKEND) |
      (1ull << PROP_DEVICE_ID) | (1ull << PROP_POST_MESSAGES) |
      (1ull << PROP_REMOVE_NOISE) | (1ull << PROP_REMOVE_SILENCE) |
      (1ull << PROP_DECLIP) | (1ull << PROP_CMN_FROM_SPEECH) | (1ull << PROP_CMN_INIT_FRAMES) |
      (1ull << PROP_CMN_CARRY) | (1ull << PROP_NOISE_CARRY) |
      (1ull << PROP_NOISE_START) | (1ull << PROP_CMN_INIT) |
      (1ull << PROP_CMN_SKIP_NEGATIVE_C0);
  if (!settings->feat_params.empty ()
      || (settings->explicit_mask & ~non_shaping) != 0)
    return;
  GstCaps *peer = gst_pad_peer_query_caps (self->srcpad, NULL);
  if (!peer)
    return;
  const gchar *fp = NULL;
  for (guint i = 0; i < gst_caps_get_size (peer) && !fp; ++i)
    fp = gst_structure_get_string (gst_caps_get_structure (peer, i),
        "feat-params");
  if (fp) {
    GST_INFO_OBJECT (self, "no front-end property set: using downstream's "
        "feat-params %s with live CMN, remove-noise=%s", fp,
        settings->remove_noise ? "true" : "false");
    settings->feat_params = fp;
    settings->cmn = gs::NormOptions::Cmn::kLive;
    settings->explicit_mask |= 1ull << PROP_CMN;
    /* pocketsphinx subtracts noise by default, and gpuspeech-transcribe
     * does; so does this chain unless told not to. Measured in the live
     * chain (docs/benchmarks.md): 31.0 -> 22.5 % on LibriVox and 7-15
     * points on the noisy long recordings, but 45.1 -> 50.7 % on the
     * telephone-band set, and worse with online fMLLR (gpufmllr's chain
     * sets it false). */
    if (!settings->is_set (PROP_REMOVE_NOISE)) {
      settings->remove_noise = TRUE;
      settings->explicit_mask |= 1ull << PROP_REMOVE_NOISE;
    }
    /* A stream keeps every frame (see remove-silence), whatever the
     * model's feat.params says. */
    if (!settings->is_set (PROP_REMOVE_SILENCE)) {
      settings->remove_silence = FALSE;
      settings->explicit_mask |= 1ull << PROP_REMOVE_SILENCE;
    }
    /* Clipped peaks restored, as gpuspeech-transcribe and gpudecoder's own
     * front end do (docs/benchmarks.md, "Restoring clipped peaks"). */
    if (!settings->is_set (PROP_DECLIP)) {
      settings->declip = TRUE;
      settings->explicit_mask |= 1ull << PROP_DECLIP;
    }
  }
  gst_caps_unref (peer);
}

static gboolean
gst_gpu_features_start (GstGpuFeatures * self)
{
  GST_OBJECT_LOCK (self);
  Settings settings = *self->settings;
  GST_OBJECT_UNLOCK (self);

  adopt_downstream_front_end (self, &settings);
  std::unique_ptr < StreamState > st (new StreamState ());
  std::vector < std::string > warnings;
  try {
    st->opts = build_options (settings, &warnings);
  } catch (const ConfigError & e) {
    if (e.not_found)
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", e.what ()),
          (NULL));
    else
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", e.what ()), (NULL));
    return FALSE;
  }
  for (const std::string & w:warnings)
    GST_WARNING_OBJECT (self, "feat-params: %s", w.c_str ());

  const char *requested = gpuspeech::backend_choice_name (settings.backend);
  std::string why;
  try {
    st->backend = gs::open_backend (requested, settings.device_id, &why);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("%s", e.what ()),
        ("device-id=%d", settings.device_id));
    return FALSE;
  }
  if (why.empty ())
    why = std::string ("backend=") + requested + " was requested";
  const std::string device = st->backend->device_name ();
  GST_INFO_OBJECT (self, "using backend %s (%s): %s", st->backend->name (),
      device.c_str (), why.c_str ());
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("gpufeatures-backend",
              "backend", G_TYPE_STRING, st->backend->name (),
              "device", G_TYPE_STRING, device.c_str (),
              "reason", G_TYPE_STRING, why.c_str (), NULL)));

  try {
    st->extractor.reset (new gs::StreamingFeatureExtractor (st->opts,
            *st->backend));
    /* Live CMN's trace goes out with the frames (GpuspeechCmnMeta), so
     * that gpudecoder can normalise an utterance again at its end. */
    if (st->opts.norm.cmn == gs::NormOptions::Cmn::kLive
        && !st->extractor->buffers_utterance ())
      st->extractor->set_cmn_trace (true);
    st->extractor->set_noise_carry (settings.noise_carry);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("cannot set up feature extraction: %s", e.what ()), (NULL));
    return FALSE;
  }
  st->rate = (gint) st->opts.frame.sample_rate;
  st->post_messages = settings.post_messages;
  st->cmn_carry = settings.cmn_carry;
  st->src_caps = make_src_caps (st->opts, st->extractor->frame_shift ());
  const std::string signature = gs::feature_signature (st->opts);
  GST_INFO_OBJECT (self, "features %s (config hash %016" G_GINT64_MODIFIER
      "x): %s", gs::to_string (st->opts.kind),
      (guint64) gs::feature_signature_hash (signature), signature.c_str ());

  self->latency_ns = (gint64) gst_util_uint64_scale_int_ceil ((guint64)
      st->extractor->latency_samples (), GST_SECOND, st->rate);
  self->stream = st.release ();
  g_atomic_int_set (&self->configured_rate, self->stream->rate);
  return TRUE;
}

static void
gst_gpu_features_stop (GstGpuFeatures * self)
{
  g_atomic_int_set (&self->configured_rate, 0);
  self->latency_ns = 0;
  delete self->stream;
  self->stream = NULL;
}

static GstStateChangeReturn
gst_gpu_features_change_state (GstElement * element, GstStateChange transition)
{
  GstGpuFeatures *self = GST_GPU_FEATURES (element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    if (!gst_gpu_features_start (self))
      return GST_STATE_CHANGE_FAILURE;
  }
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      gst_gpu_features_stop (self);
    return ret;
  }
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_gpu_features_stop (self);
  return ret;
}
