/**
 * SECTION:element-gpudecoder
 * @title: gpudecoder
 * @see_also: gpufeatures, subparse, textoverlay, matroskamux
 *
 * Recognises speech: takes the feature frames of `gpufeatures`
 * (`audio/x-gpuspeech-features`, docs/feature-caps.md), scores them with a
 * Sphinx acoustic model on a CUDA or OpenCL device or the CPU (the `backend`
 * property) and searches a graph compiled from an n-gram language model, a
 * JSGF or FSG grammar or a keyphrase list (common/engine/recognizer.h). Results go
 * to the bus as element messages and out of the src pad as timed text
 * (`text/x-raw, format=utf8`), SubRip (`application/x-subtitle`), WebVTT
 * (`application/x-subtitle-vtt`) or JSON lines (`application/x-json`).
 *
 * With no model property set it uses the installed pocketsphinx en-us model,
 * dictionary and language model (/usr/share/pocketsphinx/model/en-us). The
 * model, dictionary and grammar are loaded, and the search graph compiled or
 * taken from the graph cache (`cache-dir`), when the element goes from NULL
 * to READY; for the en-us language model the first compilation takes minutes
 * (then it is cached). A missing or malformed file is an error message
 * naming the file and the reason (RESOURCE/NOT_FOUND or RESOURCE/SETTINGS)
 * and the state change fails.
 *
 * Sink caps: the feature stream the model was trained on. The caps query is
 * answered with the model's kind, flavour, dim, layout and rates, and a
 * stream is accepted only if its `config` (gpuspeech::feature_signature)
 * equals the model's feat.params configuration, except that the CMN mode
 * may be `live` where the model says `batch` or the reverse (live CMN is
 * how a streaming decoder normalises the model's features; batch CMN holds
 * all frames until the utterance ends, so no partial results come before
 * it). Anything else fails negotiation with an error that names every key
 * that differs, the caps offered and the configuration expected. Put
 * `gpufeatures feat-params=MODEL/feat.params cmn=live` in front.
 *
 * Utterances. An utterance ends, and its final result is posted, at EOS; at
 * a DISCONT buffer, a GAP event or a new SEGMENT from upstream (gpufeatures
 * marks those); and by silence endpointing (checked every
 * `partial-interval`; `endpoint-silence` 0 turns it off): when at least
 * one word has been recognised and the best path has been in silence or
 * filler words (noises) since its last word for at least
 * `endpoint-silence` ms of stream time. The engine tells silence from
 * speech by the acoustic model's filler phones, so a word longer than
 * `endpoint-silence` is not cut. Audio with no word in it never makes a
 * final result; it is dropped without a message, and the next utterance
 * starts after it, once the best path has been in silence or noise for 5 x
 * `endpoint-silence`, or after 20 x `endpoint-silence` with no word
 * whatever the audio is (so hours of silence do not grow one utterance).
 * With a voice activity detector upstream (gpufeatures' Sphinx detector in
 * the front end this element configures, which sends `gpuspeech-vad`
 * events, gst/gpuspeech_vad_event.h) and `vad-endpointing` (default TRUE),
 * the detector's word also counts, as in pocketsphinx: an utterance with a
 * word ends once the detector has heard `endpoint-silence` of silence
 * after speech, its last words that lie mostly in that silence are left
 * out (of the result and of what adaptation learns from), and a stretch
 * the detector calls silent throughout is dropped after 0.4 s, words or
 * not. In steady noise the search can take the pauses for words and never
 * reach its own silence (white noise 20 dB below the speech made one
 * utterance of the first 100 s of a stream); the detector, tracking the
 * noise floor, still hears them.
 * The next utterance starts at the frame after. A flushing seek
 * (FLUSH_STOP) drops the utterance in progress without a result.
 *
 * Speaker adaptation (`adapt`, on by default with an n-gram LM): the
 * stream is taken to be one speaker, and the decoder learns a feature
 * transform (fMLLR) for that speaker from the final words of its
 * utterances. Frames are decoded under the transform learnt so far; at the
 * end of each utterance its words are aligned, the transform is estimated
 * again with them, and the utterance is decoded again under it: the final
 * result is that second decoding (the partials are the first). Until the
 * stream has about 3 s of speech there is no transform and no second pass
 * (but see `utterance-cmn` below). A young stream's transform (its first
 * sentences, below `adapt-young-frames`, with no channel prior) has fewer
 * values than the full one (`adapt-young-update`: three diagonal blocks),
 * which so little speech estimates better; later ones, and those with a
 * channel prior's statistics, have `adapt-update`'s form.
 * The second pass costs one more decoding of each utterance, at its end,
 * so the final result comes that much later (common/engine/
 * adaptive_redecoder.h, docs/gpudecoder.md). Once the transform has
 * settled (a new estimate gains less than `redecode-min-gain`), an
 * utterance keeps its first pass, already decoded under the transform, and
 * costs one decoding again. A new stream (READY to
 * PAUSED) starts with no transform, or with a channel's: `adapt-prior`
 * names fMLLR statistics of the channel the streams come through (what
 * gpuspeech-transcribe --fmllr-dir writes), which every estimate adds,
 * weighing as `adapt-prior-frames` frames, so that a stream's first
 * sentence is adapted to the channel too. Where the channel is not known,
 * `adapt-channels` names a library of such priors, and each stream takes
 * the one its own speech fits best, or none (by default the library made
 * for the en-us model: the GSM telephone codec, which takes GSM-coded
 * speech in the live chain from 17.3 to 10.6 % WER, and G.711 mu-law,
 * recognised so that mu-law streams do not take GSM's prior but bringing
 * none of its own (its `weights` file), 11.0 -> 8.2 %;
 * common/fmllr/channel_priors.h). A
 * prior's weight fades as the stream's own speech grows
 * (`adapt-prior-fade-frames`). Measured, adaptation still gains when the
 * speaker changes at every sentence (the transform then learns the
 * channel); `adapt=false` is for when every stream must cost one decoding.
 * With `adapt`, the features of an utterance are kept until it ends.
 * When they come from gpufeatures with live CMN (its trace on the buffers,
 * gst/gpuspeech_cmn_meta.h), the utterance is normalised again at its end
 * with the cepstral mean of the stream's speech up to that end (for the
 * first utterance its own mean, as the batch path normalises a file), for
 * what the adaptation learns and for the second decoding
 * (`utterance-cmn`); a stream's first utterance, decoded live against the
 * model's average mean, is decoded again so even before there is a
 * transform, and words it hears before the detector's speech (in leading
 * digital silence) are left out.
 *
 * Every `partial-interval` ms of stream time (counted in frames, so the
 * same frames give the same messages however they are cut into buffers),
 * a partial result is posted. Its first `stable-words` words are the ones
 * every live search path shares: they never change afterwards, and the
 * final result begins with them, unless the final result comes from a
 * second pass (`adapt`'s second decoding, `lattice-lw`'s lattice).
 *
 * Bus messages:
 *
 * `gpudecoder` (one for each partial and each final result):
 * - `hypothesis` (string): the words, separated by single spaces (filler
 *   words such as <sil> left out).
 * - `confidence` (gdouble): the hypothesis' posterior among the distinct
 *   word sequences the search kept (0..1; a margin, not a calibrated
 *   probability), computed at every partial and final result.
 * - `final` (gboolean): TRUE for the result of a whole utterance.
 * - `stable-words` (guint): how many leading words are stable (all of them
 *   in a final result).
 * - `words` (GstValueArray of GstStructure `word`): per word `word`
 *   (string), `start` and `end` (guint64, stream time in ns; end exclusive)
 *   and `confidence` (gdouble, in (0, 1]): the posterior mass of the kept
 *   word sequences that have this word at an overlapping time (1: every
 *   surviving path agrees; lower where an alternative is close).
 * - `trailing-silence` (guint64): ns the best path has spent in silence or
 *   fillers since its last word (0 while inside a word); what silence
 *   endpointing compares with `endpoint-silence`.
 * - `utterance` (guint): index of the utterance in the stream, from 0.
 * - `timestamp` (guint64): stream time of the utterance's first frame.
 * - `duration` (guint64): audio decoded in this utterance so far, in ns.
 * - `frames` (guint64): frames decoded in this utterance so far.
 * - `running-time` (guint64): running time of the end of the audio decoded
 *   so far (compare with the pipeline clock to measure the delay).
 * - `adapted` (gboolean, final only, with `adapt`): TRUE when the result
 *   was decoded under a speaker transform: the second decoding, or late in
 *   a stream, when a new estimate gains less than `redecode-min-gain`, the
 *   first (FALSE until the stream has enough speech for a transform).
 * - `utterance-cmn` (gboolean, final only, with `adapt`): TRUE when the
 *   utterance was normalised again at its end (`utterance-cmn`; it needs
 *   gpufeatures' live CMN trace on the buffers).
 * - `channel` (string, final only, with `adapt` and a channel library
 *   (`adapt-channels`)): the channel the stream was last found to come
 *   through ("gsm"), "" for none.
 * - `reason` (string, final only): why the utterance ended: "eos",
 *   "silence", "discont", "gap" or "segment".
 * - `nbest` (GstValueArray of GstStructure `alternative`, final only, when
 *   `nbest` > 0): `hypothesis` (string), `confidence` (gdouble), `cost`
 *   (gdouble, minus log probability: lower is better), best first.
 *
 * `gpudecoder-model`, posted once the model is loaded:
 * - `hmm`, `dict`, `grammar` (strings): the files in use.
 * - `grammar-kind` (string): "lm", "jsgf", "fsg" or "kws".
 * - `graph-states`, `graph-arcs` (guint64): size of the search graph.
 * - `backend` (string), `device` (string), `search` (string): where
 *   scoring and search run; `device-id` (gint): the device index (the one
 *   chosen when the `device-id` property is -1); `batched-search`
 *   (gboolean): whether the search runs in launches shared with other
 *   decoders (the property, on a CUDA search).
 * - `shared` (gboolean): TRUE when the model, graph and LM were already
 *   loaded by another decoder of this process and are shared with it.
 * - `load-seconds` (gdouble): how long loading took.
 *
 * Upstream event `gpuspeech-alignment` (gst/gpuspeech_alignment_event.h,
 * while `send-alignments` is TRUE, the default): the frames of final words
 * aligned to the acoustic model's senones (tied HMM states), pushed up the
 * sink pad for elements that adapt the features to the speaker (gpufmllr)
 * or for applications (a pad probe upstream of gpudecoder). Each time a
 * partial result's stable words grow, their frames are Viterbi-aligned to
 * the words' pronunciations and sent; when the utterance ends, the rest of
 * its words. Events of one utterance come in order and never overlap;
 * frames between words (silence, fillers) and words that cannot be aligned
 * have senone -1. A type GST_EVENT_CUSTOM_UPSTREAM, structure
 * `gpuspeech-alignment`:
 * - `timestamp` (guint64): time of the first frame, on the clock of the
 *   feature buffers' PTS as received (buffer time, like the word times
 *   before their conversion to stream time); frame i is at `timestamp` +
 *   i x `frame-duration`.
 * - `frame-duration` (guint64): ns from one frame to the next.
 * - `senones` (GBytes): gint32 per frame in host byte order, -1 = not
 *   aligned.
 * - `num-senones` (gint): the model's senone count.
 * - `model` (string): the acoustic model directory.
 * - `utterance` (guint): as in the `gpudecoder` messages.
 * - `segment-seqnum` (guint): the seqnum of the SEGMENT event the frames
 *   came after (buffer times start again in a new segment, so a consumer
 *   that keeps frames by time tells the segments apart by it); the
 *   alignment of an utterance that a new SEGMENT ends names the old one.
 * The event is pushed from the streaming thread, inside gpudecoder's chain
 * function (or its EOS, GAP or SEGMENT handling): an element upstream must
 * handle it without waiting for its own streaming thread. Alignment never
 * stops decoding: if it fails (GST_WARNING in the debug log) no event is
 * sent for those words. The features of an utterance are kept only until
 * their words are aligned (with `adapt`, until the utterance ends).
 *
 * Src pad: each group of final words (a cue: at most `cue-max-chars`
 * characters and `cue-max-duration` ms, broken at pauses of a second or
 * more) becomes one buffer with PTS and duration from the words' times.
 * `cue-timing` says when: `stable`, as soon as its words are stable (the
 * first pass's words); `final`, when the utterance ends, from its final
 * result (the bus message's words); `auto` (default), final where a
 * second pass decides the final words (adapt, lattice-lw), else stable.
 * In between, GAP events tell sparse-stream
 * consumers (textoverlay, muxers) that no text is coming before a time.
 * `output-format` picks `text/x-raw, format=utf8` (the cue's words, on two
 * lines when long), `application/x-subtitle` (SubRip blocks, numbered from
 * 1) or `application/x-subtitle-vtt` (a WebVTT file: the header before the
 * first cue); `auto` takes the first of these downstream accepts.
 * `output-format=json` (`application/x-json`) instead pushes one line per
 * final result, when the utterance ends: {"utterance", "start", "end"
 * (seconds of stream time), "reason", "hypothesis", "confidence", "words":
 * [{"word", "start", "end", "confidence"}], and with `nbest` > 0 "nbest":
 * [{"hypothesis", "confidence", "cost"}]}. The src pad may also be left
 * unlinked: the bus messages are then the output.
 *
 * Latency query: upstream's plus `partial-interval` (the longest a word
 * waits for the next partial analysis). Timed text can come later than
 * that: a word is pushed once it is stable and its cue is complete, or
 * with `cue-timing` final once its utterance ends, so the
 * maximum latency is unbounded (reported as GST_CLOCK_TIME_NONE); for live
 * subtitling give the sink enough `ts-offset` or latency.
 *
 * Decoding runs in the streaming thread on the CPU backend, or in calls
 * that wait for the device on CUDA and OpenCL, so a saturated device holds
 * upstream back (no audio is dropped or queued without bound). Instances
 * in one process with the same model, dictionary and grammar share one
 * copy of them (the `shared` field above); each keeps its own device
 * queue, and with `batched-search` their search rounds share launches.
 *
 * ## Example launch lines
 * |[
 * M=/usr/share/pocketsphinx/model/en-us/en-us
 * gst-launch-1.0 -m filesrc location=speech.wav ! decodebin ! audioconvert ! \
 *     audioresample ! gpufeatures feat-params=$M/feat.params cmn=live ! \
 *     gpudecoder ! fakesink
 * ]| Prints partial and final hypotheses (the `gpudecoder` messages).
 * |[
 * gst-launch-1.0 filesrc location=speech.wav ! decodebin ! audioconvert ! \
 *     audioresample ! gpufeatures feat-params=$M/feat.params cmn=live ! \
 *     gpudecoder output-format=srt ! filesink location=speech.srt
 * ]| Writes a SubRip subtitle file.
 */
#include "gstgpudecoder.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/engine/endpointing.h"
#include "common/features/feature_signature.h"
#include "common/engine/recognizer.h"
#include "common/engine/utterance_decoder.h"
#include "common/fmllr/channel_prior_cache.h"
#include "common/fmllr/fmllr_stats_io.h"
#include "common/output/result_json.h"
#include "common/output/subtitle_format.h"
#include "gpuspeech_alignment_event.h"
#include "gpuspeech_cmn_meta.h"
#include "gpuspeech_vad_event.h"
#include "gpuspeech_backend_choice.h"
#include "gstgpufeatures.h"

/* Design: a plain GstElement like gpufeatures: results do not correspond
 * to input buffers (partials on a timer, text when words become stable),
 * and the pads carry unrelated media types. The numbers all come from
 * gpuspeech::Recognizer; this file adapts it to pads, caps, events, time
 * and messages. */

GST_DEBUG_CATEGORY_STATIC (gst_gpu_decoder_debug);
#define GST_CAT_DEFAULT gst_gpu_decoder_debug

namespace gs = gpuspeech;

/* ------------------------------------------------------------------------ */
/* Enumerations for the properties                                          */

enum class OutputFormat { kAuto, kText, kSrt, kWebvtt, kJson };


#define GST_TYPE_GPU_DECODER_OUTPUT_FORMAT \
  (gst_gpu_decoder_output_format_get_type ())
static GType
gst_gpu_decoder_output_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) OutputFormat::kAuto,
        "The first of text, srt, webvtt, json that downstream accepts",
        "auto"},
    {(gint) OutputFormat::kText, "Timed text (text/x-raw, format=utf8)",
        "text"},
    {(gint) OutputFormat::kSrt, "SubRip (application/x-subtitle)", "srt"},
    {(gint) OutputFormat::kWebvtt, "WebVTT (application/x-subtitle-vtt)",
        "webvtt"},
    {(gint) OutputFormat::kJson,
        "One JSON object a final result, one a line (application/x-json)",
        "json"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuDecoderOutputFormat", values));
  return type;
}


/* When the src pad's text goes out: see the cue-timing property. */
enum class CueTiming { kAuto, kStable, kFinal };

#define GST_TYPE_GPU_DECODER_CUE_TIMING (gst_gpu_decoder_cue_timing_get_type ())
static GType
gst_gpu_decoder_cue_timing_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) CueTiming::kAuto,
        "Final where a second pass decides the final words (adapt, "
          "lattice-lw), else stable", "auto"},
    {(gint) CueTiming::kStable,
        "Each cue as soon as its words are stable (the first pass's words)",
        "stable"},
    {(gint) CueTiming::kFinal,
        "The cues of an utterance when it ends, from its final result",
        "final"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuDecoderCueTiming", values));
  return type;
}

/* adapt-update: which part of the speaker transform is estimated
 * (FmllrUpdateType's values, the same nicks as gpufmllr's update-type). */
#define GST_TYPE_GPU_DECODER_ADAPT_UPDATE \
  (gst_gpu_decoder_adapt_update_get_type ())
static GType
gst_gpu_decoder_adapt_update_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) gs::FmllrUpdateType::kFull,
        "Full matrix and offset (1 560 values for 39 features)", "full"},
    {(gint) gs::FmllrUpdateType::kBlock,
        "Matrix of three diagonal blocks (static, delta, acceleration) and "
          "offset (546 values for 39 features)", "block"},
    {(gint) gs::FmllrUpdateType::kDiag,
        "Diagonal matrix and offset (78 values for 39 features)", "diag"},
    {(gint) gs::FmllrUpdateType::kOffset,
        "Offset only (39 values for 39 features)", "offset"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuDecoderAdaptUpdate", values));
  return type;
}

static const char *
format_media_type (OutputFormat f)
{
  switch (f) {
    case OutputFormat::kSrt:
      return "application/x-subtitle";
    case OutputFormat::kWebvtt:
      return "application/x-subtitle-vtt";
    case OutputFormat::kJson:
      return "application/x-json";
    default:
      return "text/x-raw";
  }
}

/* ------------------------------------------------------------------------ */
/* Properties                                                               */

enum
{
  PROP_0,
  PROP_HMM,
  PROP_DICT,
  PROP_FDICT,
  PROP_LM,
  PROP_JSGF,
  PROP_JSGF_RULE,
  PROP_FSG,
  PROP_KWS,
  PROP_BEAM,
  PROP_WBEAM,
  PROP_MAX_ACTIVE,
  PROP_TOP_N,
  PROP_LW,
  PROP_WIP,
  PROP_SILPROB,
  PROP_FILLPROB,
  PROP_PARTIAL_INTERVAL,
  PROP_ENDPOINT_SILENCE,
  PROP_VAD_ENDPOINTING,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_NBEST,
  PROP_OUTPUT_FORMAT,
  PROP_CUE_MAX_CHARS,
  PROP_CUE_MAX_DURATION,
  PROP_CUE_TIMING,
  PROP_CACHE_DIR,
  PROP_SEND_ALIGNMENTS,
  PROP_BATCHED_SEARCH,
  PROP_LATTICE_LW,
  PROP_LATTICE_WIP,
  PROP_ADAPT,
  PROP_REDECODE_MIN_GAIN,
  PROP_UTTERANCE_CMN,
  PROP_ADAPT_PRIOR,
  PROP_ADAPT_PRIOR_FRAMES,
  PROP_ADAPT_YOUNG_FRAMES,
  PROP_ADAPT_YOUNG_UPDATE,
  PROP_ADAPT_YOUNG_VTLN,
  PROP_ADAPT_CHANNELS,
  PROP_ADAPT_CHANNEL_MIN_GAIN,
  PROP_ADAPT_PRIOR_FADE_FRAMES,
  PROP_ADAPT_UPDATE,
  N_PROPS
};

#define DEFAULT_BEAM 1e-42
#define DEFAULT_WBEAM 7e-29
#define DEFAULT_LW -1.0 /* gpuspeech::kLanguageWeightByKind */
#define DEFAULT_WIP 0.65
#define DEFAULT_SILPROB 0.005
#define DEFAULT_FILLPROB 1e-8
#define DEFAULT_PARTIAL_INTERVAL 300
#define DEFAULT_ENDPOINT_SILENCE 1000
#define DEFAULT_VAD_ENDPOINTING TRUE
#define DEFAULT_NBEST 0
#define DEFAULT_CUE_MAX_CHARS 84
#define DEFAULT_CUE_MAX_DURATION 5000
#define DEFAULT_SEND_ALIGNMENTS TRUE
#define DEFAULT_BATCHED_SEARCH FALSE
#define DEFAULT_LATTICE_LW -1.0 /* auto: with adapt, gs::kDictationLatticeWeight */
#define DEFAULT_LATTICE_WIP -1.0 /* auto: with adapt, gs::kDictationLatticeWip */
#define DEFAULT_ADAPT TRUE
#define DEFAULT_UTTERANCE_CMN TRUE

/* The channel prior library made for the default model (adapt-channels'
 * default): the first directory of GPUSPEECH_CHANNEL_PRIORS_DIRS (the
 * installed copy, then the source tree's) that holds one; "" when none
 * does. */
static const std::string &
default_channel_priors (void)
{
  static const std::string dir =[]{
    const std::string list = GPUSPEECH_CHANNEL_PRIORS_DIRS;
    for (size_t at = 0; at <= list.size ();) {
      size_t end = list.find (':', at);
      if (end == std::string::npos)
        end = list.size ();
      const std::string d = list.substr (at, end - at);
      if (!d.empty () && g_file_test ((d + "/reference.stats").c_str (),
              G_FILE_TEST_IS_REGULAR))
        return d;
      at = end + 1;
    }
    return std::string ();
  }
  ();
  return dir;
}

/* Property values, under the object lock. Empty strings mean unset. */
struct Settings
{
  std::string hmm, dict, fdict, lm, jsgf, jsgf_rule, fsg, kws, cache_dir;
  gdouble beam = DEFAULT_BEAM;
  gdouble wbeam = DEFAULT_WBEAM;
  gint max_active = gpuspeech::SearchOptions ().max_active;
  /* gpuspeech::RecognizerConfig's default, the one place it is set. */
  gint top_n = gpuspeech::RecognizerConfig ().top_n;
  gdouble lw = DEFAULT_LW;
  gdouble wip = DEFAULT_WIP;
  gdouble silprob = DEFAULT_SILPROB;
  gdouble fillprob = DEFAULT_FILLPROB;
  guint partial_interval = DEFAULT_PARTIAL_INTERVAL;
  guint endpoint_silence = DEFAULT_ENDPOINT_SILENCE;
  gboolean vad_endpointing = DEFAULT_VAD_ENDPOINTING;
  gpuspeech::BackendChoice backend = gpuspeech::BackendChoice::kAuto;
  gint device_id = 0;
  gint nbest = DEFAULT_NBEST;
  OutputFormat output_format = OutputFormat::kAuto;
  gint cue_max_chars = DEFAULT_CUE_MAX_CHARS;
  guint cue_max_duration = DEFAULT_CUE_MAX_DURATION;
  CueTiming cue_timing = CueTiming::kAuto;
  gboolean send_alignments = DEFAULT_SEND_ALIGNMENTS;
  gboolean batched_search = DEFAULT_BATCHED_SEARCH;
  gdouble lattice_lw = DEFAULT_LATTICE_LW;
  gdouble lattice_wip = DEFAULT_LATTICE_WIP;
  gboolean adapt = DEFAULT_ADAPT;
  gdouble redecode_min_gain =
      gs::AdaptiveRedecoderOptions ().min_redecode_gain;
  gboolean utterance_cmn = DEFAULT_UTTERANCE_CMN;
  std::string adapt_prior;
  gdouble adapt_prior_frames = gs::AdaptiveRedecoderOptions ().prior_frames;
  gdouble adapt_young_frames = gs::AdaptiveRedecoderOptions ().young_below_frames;
  gs::FmllrUpdateType adapt_young_update =
      gs::AdaptiveRedecoderOptions ().young_update;
  gboolean adapt_young_vtln = gs::AdaptiveRedecoderOptions ().young_vtln;
  std::string adapt_channels = default_channel_priors ();
  gdouble adapt_channel_min_gain =
      gs::AdaptiveRedecoderOptions ().channel_min_gain;
  gdouble adapt_prior_fade_frames =
      gs::AdaptiveRedecoderOptions ().prior_fade_frames;
  gs::FmllrUpdateType adapt_update =
      gs::AdaptiveRedecoderOptions ().estimation.update;
};

/* A configuration problem for the user; `not_found` marks a missing file. */
struct ConfigError:std::runtime_error
{
  bool not_found;
  ConfigError (const std::string & what, bool nf)
  : std::runtime_error (what), not_found (nf)
  {
  }
};

static void
require_path (const std::string & path, const char *property, bool dir)
{
  if (!g_file_test (path.c_str (), G_FILE_TEST_EXISTS))
    throw ConfigError (std::string (property) + ": '" + path +
        "' does not exist", true);
  if (dir && !g_file_test (path.c_str (), G_FILE_TEST_IS_DIR))
    throw ConfigError (std::string (property) + ": '" + path +
        "' is not a directory", false);
  if (!dir && g_file_test (path.c_str (), G_FILE_TEST_IS_DIR))
    throw ConfigError (std::string (property) + ": '" + path +
        "' is a directory, not a file", false);
}

/* The recognizer configuration the properties ask for: the installed en-us
 * model for what is unset. Throws ConfigError. */
/* Whether the decoder adapts to the speaker itself (the adapt property):
 * with an n-gram LM only, as gpuspeech-transcribe's two-pass default. */
static bool
adapts (const Settings & s, const gs::RecognizerConfig & c)
{
  return s.adapt && c.grammar_kind == gs::GrammarKind::kNgram;
}

static gs::RecognizerConfig
build_config (const Settings & s)
{
  gs::RecognizerConfig c = gs::RecognizerConfig::en_us_defaults ();
  /* The features come from gpufeatures, frame for frame in the stream's
   * time: no frame is dropped, so word times and endpointing stay on the
   * audio's clock (gpufeatures refuses remove-silence=true). Noise
   * subtraction is gpufeatures' choice (remove-noise). */
  c.remove_silence = false;
  std::string grammars;
  int num_grammars = 0;
  auto grammar = [&](const std::string & path, const char *name,
      gs::GrammarKind kind) {
    if (path.empty ())
      return;
    grammars += std::string (num_grammars ? ", " : "") + name;
    ++num_grammars;
    c.grammar_kind = kind;
    c.grammar = path;
    require_path (path, name, false);
  };
  grammar (s.lm, "lm", gs::GrammarKind::kNgram);
  grammar (s.jsgf, "jsgf", gs::GrammarKind::kJsgf);
  grammar (s.fsg, "fsg", gs::GrammarKind::kFsg);
  grammar (s.kws, "kws", gs::GrammarKind::kKeyphrases);
  if (num_grammars > 1)
    throw ConfigError ("set at most one of lm, jsgf, fsg and kws (set: " +
        grammars + ")", false);
  if (!s.jsgf_rule.empty () && c.grammar_kind != gs::GrammarKind::kJsgf)
    throw ConfigError ("jsgf-rule is set but jsgf is not", false);
  c.jsgf_rule = s.jsgf_rule;
  if (!s.hmm.empty ())
    c.model_dir = s.hmm;
  if (!s.dict.empty ())
    c.dictionary = s.dict;
  if (!s.fdict.empty ())
    c.filler_dictionary = s.fdict;
  require_path (c.model_dir, "hmm", true);
  require_path (c.dictionary, "dict", false);
  if (!c.filler_dictionary.empty ())
    require_path (c.filler_dictionary, "fdict", false);
  if (num_grammars == 0)
    require_path (c.grammar, "lm (the default en-us language model)", false);

  if (!(s.wbeam >= s.beam))
    throw ConfigError ("wbeam must be at least beam (a word-end beam no "
        "wider than the beam), got beam=" + std::to_string (s.beam) +
        " wbeam=" + std::to_string (s.wbeam), false);
  c.search.beam = (float) -std::log (s.beam);
  c.search.word_end_beam = (float) -std::log (s.wbeam);
  c.search.max_active = s.max_active;
  c.top_n = s.top_n;
  c.graph.language_weight = (float) s.lw;
  c.graph.word_insertion_penalty = (float) s.wip;
  c.graph.silence_prob = (float) s.silprob;
  c.graph.filler_prob = (float) s.fillprob;
  c.scoring_backend = gpuspeech::backend_choice_name (s.backend);
  c.device_id = s.device_id;
  c.nbest = s.nbest;
  c.cache_dir = s.cache_dir;
  /* The recognizer keeps an utterance's features only for alignment (the
   * events, or its own speaker adaptation). */
  c.keep_features_for_alignment = s.send_alignments || adapts (s, c);
  c.batched_search = s.batched_search;
  if (s.lattice_lw > 0.0 && c.grammar_kind != gs::GrammarKind::kNgram)
    throw ConfigError ("lattice-lw needs an n-gram language model (lm), "
        "not a grammar or keyphrases", false);
  /* lattice-lw auto is decided once the resources are loaded (load_model:
   * the pass needs an LM rescored at word ends). Its word cost by default
   * where the decoder adapts is gpuspeech-transcribe's two-pass default:
   * the pass gains on adapted features and loses on raw ones
   * (docs/gpudecoder.md). */
  const bool adapted = adapts (s, c);
  c.search.lattice.language_weight = s.lattice_lw >= 0.0 ?
      (float) s.lattice_lw : 0.0f;
  c.lattice_word_insertion_penalty = s.lattice_wip >= 0.0 ?
      (float) s.lattice_wip : adapted ? gs::kDictationLatticeWip :
      gs::RecognizerConfig{}.lattice_word_insertion_penalty;
  try {
    c.search.validate ();
    c.graph.validate ();
  } catch (const std::exception & e) {
    throw ConfigError (std::string ("invalid search setting: ") + e.what (),
        false);
  }
  return c;
}

/* ------------------------------------------------------------------------ */
/* Element state                                                            */

/* Everything the streaming thread uses; built when going to PAUSED. */
struct StreamState
{
  /* from the settings */
  gint64 tick_frames = 1;       /* frames between partial analyses */
  gint64 endpoint_frames = 0;   /* 0: no silence endpointing */
  gboolean vad_endpointing = TRUE;      /* read gpuspeech-vad events */
  gboolean post_partials = TRUE;
  gint nbest = 0;
  gboolean send_alignments = FALSE;
  OutputFormat requested_format = OutputFormat::kAuto;
  gs::CueOptions cue_options;
  /* Cues only when an utterance ends, from its final result (cue-timing
   * final, or auto with a second pass); else as words become stable. */
  gboolean cues_at_end = FALSE;

  /* negotiated */
  gboolean caps_ok = FALSE;
  OutputFormat format = OutputFormat::kText;
  GstSegment segment;
  /* The seqnum of the last SEGMENT event: the segment of the frames in the
   * alignment events (GST_SEQNUM_INVALID before the first). */
  guint32 segment_seqnum = GST_SEQNUM_INVALID;
  /* The last sink caps refused, with the error already posted: sticky caps
   * come again with every push upstream retries, and one error message is
   * what an application (and gst-launch, prerolling) should see, as in
   * gpufeatures. Likewise buffers without accepted caps: one error. */
  GstCaps *refused_caps = NULL;
  gboolean unnegotiated_reported = FALSE;

  /* Where upstream's voice activity detector last said silence began
   * (buffer time), from gpuspeech-vad events; NONE while it hears speech
   * or when no detector speaks to us. */
  GstClockTime vad_silence_start = GST_CLOCK_TIME_NONE;
  gboolean vad_heard = FALSE;   /* a gpuspeech-vad event came: a detector */

  /* the utterance in progress */
  gboolean utt_started = FALSE;
  GstClockTime utt_pts = 0;     /* buffer time of its frame 0 */
  gint64 utt_frames = 0;
  gint64 next_tick = 0;
  guint utt_index = 0;
  size_t cued_words = 0;        /* its words already pushed as cues */
  gint64 cued_end_ns = 0;       /* the end of the last of them */
  /* Its words whose frames went upstream in alignment events, and the
   * frame before which everything was sent (or skipped): later events start
   * there, and the recognizer's kept features before it are freed. */
  size_t aligned_words = 0;
  gint64 aligned_end = 0;

  /* the whole stream */
  GstClockTime last_end = GST_CLOCK_TIME_NONE;  /* end of the last input */
  GstClockTime out_pos = GST_CLOCK_TIME_NONE;   /* end of text or gap sent */
  gint64 cue_index = 0;
  gboolean vtt_header_sent = FALSE;
  gboolean nonfinite_warned = FALSE;
  std::vector < float >scratch;
  /* The last frames decoded (at most kDropOverlapFrames), decoded again
   * when an utterance of silence is dropped. */
  std::vector < float >recent;
  gint recent_dim = 0;
  /* Live CMN's trace of `recent` (GpuspeechCmnMeta), and which of its
   * frames came with one. */
  gs::CmnTrace recent_trace;
  std::vector < guint8 > recent_has_trace;
  /* Its utterances, with the speaker adaptation and second pass when the
   * adapt property is on (then the stream is one speaker: a new stream,
   * READY to PAUSED, starts from no statistics). */
  std::unique_ptr < gs::UtteranceDecoder > decoder;

  StreamState ()
  {
    gst_segment_init (&segment, GST_FORMAT_TIME);
  }
  ~StreamState ()
  {
    if (refused_caps)
      gst_caps_unref (refused_caps);
  }
  StreamState (const StreamState &) = delete;
  StreamState & operator= (const StreamState &) = delete;
};

struct _GstGpuDecoder
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  Settings *settings;           /* object lock */
  /* Built in NULL->READY, freed in READY->NULL; used by the streaming
   * thread and by queries. */
  gs::Recognizer *recognizer;
  gs::FeatureOptions *model_features;
  gint64 frame_shift_samples;
  gint sample_rate;
  gint num_senones;             /* the acoustic model's, for alignments */
  /* As loaded (NULL to READY): send-alignments, and whether adapt applies. */
  gboolean sends_alignments;
  gboolean adapts;
  /* adapt-prior's statistics, as loaded; shared by the streams, and by
   * the decoders of the process that name the same file
   * (common/fmllr/channel_prior_cache.h). */
  std::shared_ptr < const gs::FmllrStats > *adapt_prior;
  /* adapt-channels' library, as loaded; shared by the streams. */
  std::shared_ptr < const gs::ChannelPriorSet > *adapt_channels;
  StreamState *stream;          /* NULL unless PAUSED or PLAYING */
  gint64 latency_ns;
};

#define gst_gpu_decoder_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (GstGpuDecoder, gst_gpu_decoder, GST_TYPE_ELEMENT,
    GST_DEBUG_CATEGORY_INIT (gst_gpu_decoder_debug, "gpudecoder", 0,
        "speech recognition"));
GST_ELEMENT_REGISTER_DEFINE (gpudecoder, "gpudecoder", GST_RANK_NONE,
    GST_TYPE_GPU_DECODER);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPUSPEECH_FEATURES_MEDIA_TYPE ", "
        "format = (string) F32LE, "
        "kind = (string) { mfcc, fbank, plp, traps }, "
        "flavour = (string) { sphinx, htk, kaldi }, "
        "dim = (int) [ 1, MAX ], "
        "base-dim = (int) [ 1, MAX ], "
        "frame-rate = (fraction) [ 0/1, MAX ], "
        "layout = (string) { c, 1s_c_d_dd, c_d, c_d_dd, s2_4x }, "
        "num-warps = (int) 1, "
        "sample-rate = (int) [ 1, MAX ], "
        "cmn = (string) { none, batch, live }"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/x-raw, format = (string) utf8; "
        "application/x-subtitle; application/x-subtitle-vtt; "
        "application/x-json"));

static void gst_gpu_decoder_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpu_decoder_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_gpu_decoder_finalize (GObject * object);
static GstStateChangeReturn gst_gpu_decoder_change_state (GstElement *
    element, GstStateChange transition);
static GstFlowReturn gst_gpu_decoder_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean gst_gpu_decoder_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_gpu_decoder_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
static gboolean gst_gpu_decoder_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);

/* ------------------------------------------------------------------------ */
/* Class and instance                                                       */

static void
gst_gpu_decoder_class_init (GstGpuDecoderClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw =
      (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_gpu_decoder_set_property;
  gobject_class->get_property = gst_gpu_decoder_get_property;
  gobject_class->finalize = gst_gpu_decoder_finalize;

  g_object_class_install_property (gobject_class, PROP_HMM,
      g_param_spec_string ("hmm", "Acoustic model",
          "Directory of the Sphinx acoustic model (mdef, means, variances, "
          "mixture_weights, transition_matrices, feat.params, noisedict). "
          "NULL: /usr/share/pocketsphinx/model/en-us/en-us",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DICT,
      g_param_spec_string ("dict", "Dictionary",
          "Pronunciation dictionary. NULL: "
          "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_FDICT,
      g_param_spec_string ("fdict", "Filler dictionary",
          "Filler (noise) dictionary. NULL: the model's noisedict",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_LM,
      g_param_spec_string ("lm", "Language model",
          "N-gram language model, ARPA or Sphinx binary (.lm.bin). At most "
          "one of lm, jsgf, fsg, kws; NULL for all four: "
          "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_JSGF,
      g_param_spec_string ("jsgf", "JSGF grammar",
          "JSGF grammar file (instead of lm)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_JSGF_RULE,
      g_param_spec_string ("jsgf-rule", "JSGF rule",
          "The JSGF rule to recognise. NULL: the grammar's first public rule",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_FSG,
      g_param_spec_string ("fsg", "FSG grammar",
          "Sphinx finite-state grammar file (instead of lm)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_KWS,
      g_param_spec_string ("kws", "Keyphrases",
          "Keyphrase list, one phrase a line with an optional /threshold/ "
          "(instead of lm): spots the phrases", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_BEAM,
      g_param_spec_double ("beam", "Beam",
          "Beam as a probability ratio: paths less likely than this times "
          "the best are pruned (pocketsphinx -beam)",
          1e-300, 1.0, DEFAULT_BEAM, rw));
  g_object_class_install_property (gobject_class, PROP_WBEAM,
      g_param_spec_double ("wbeam", "Word-end beam",
          "Beam for paths that just ended a word, as a probability ratio; "
          "at least beam (pocketsphinx -wbeam)",
          1e-300, 1.0, DEFAULT_WBEAM, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_ACTIVE,
      g_param_spec_int ("max-active", "Most active states",
          "Most search graph states kept per frame (pocketsphinx -maxhmmpf, "
          "Kaldi --max-active)", 1, G_MAXINT,
          gpuspeech::SearchOptions ().max_active, rw));
  g_object_class_install_property (gobject_class, PROP_TOP_N,
      g_param_spec_int ("top-n", "Gaussians per codebook",
          "Gaussian selection in scoring: the N most likely Gaussians of each "
          "codebook per frame enter the senone mixtures (pocketsphinx -topn, "
          "4 there; 0: every Gaussian, exact and much slower)",
          0, gpuspeech::Backend::kMaxTopN, gpuspeech::RecognizerConfig ().top_n, rw));
  g_object_class_install_property (gobject_class, PROP_LW,
      g_param_spec_double ("lw", "Language weight",
          "Language model weight (pocketsphinx -lw); -1: 7.5 with an n-gram "
          "LM, 6.5 with a grammar or keyphrases",
          -1.0, 1000.0, DEFAULT_LW, rw));
  g_object_class_install_property (gobject_class, PROP_WIP,
      g_param_spec_double ("wip", "Word insertion penalty",
          "Word insertion penalty, a probability (pocketsphinx -wip)",
          1e-300, 1e300, DEFAULT_WIP, rw));
  g_object_class_install_property (gobject_class, PROP_SILPROB,
      g_param_spec_double ("silprob", "Silence probability",
          "Probability of silence between words (pocketsphinx -silprob)",
          0.0, 1.0, DEFAULT_SILPROB, rw));
  g_object_class_install_property (gobject_class, PROP_FILLPROB,
      g_param_spec_double ("fillprob", "Filler probability",
          "Probability of a filler (noise) word (pocketsphinx -fillprob)",
          0.0, 1.0, DEFAULT_FILLPROB, rw));
  g_object_class_install_property (gobject_class, PROP_PARTIAL_INTERVAL,
      g_param_spec_uint ("partial-interval", "Partial interval",
          "Stream time between partial results, in milliseconds; also how "
          "often stable words are pushed as text and endpointing is "
          "checked. 0: no partial messages (analyses then run every 300 ms)",
          0, 600000, DEFAULT_PARTIAL_INTERVAL, rw));
  g_object_class_install_property (gobject_class, PROP_ENDPOINT_SILENCE,
      g_param_spec_uint ("endpoint-silence", "Endpoint silence",
          "End the utterance (final result) when, after at least one word, "
          "the best path has been in silence or fillers for this many "
          "milliseconds of stream time; audio with no word is dropped "
          "after 5x this of silence (20x of anything). 0: utterances end "
          "only at EOS, DISCONT, GAP and SEGMENT",
          0, 600000, DEFAULT_ENDPOINT_SILENCE, rw));
  g_object_class_install_property (gobject_class, PROP_VAD_ENDPOINTING,
      g_param_spec_boolean ("vad-endpointing", "Endpointing by the VAD",
          "Also end utterances where gpufeatures' voice activity detector "
          "(its gpuspeech-vad events) has heard endpoint-silence of "
          "silence after speech, leaving out last words that lie mostly "
          "in that silence, and drop stretches it calls silent throughout, as "
          "pocketsphinx does; for steady noise the search takes for words. "
          "No effect without such a detector upstream",
          DEFAULT_VAD_ENDPOINTING, rw));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where acoustic scoring runs (the search runs on CUDA with cuda, "
          "else on the CPU): auto takes a CUDA device, else an OpenCL GPU, "
          "else the CPU; a named backend that is unavailable is an error",
          GPUSPEECH_TYPE_BACKEND_CHOICE,
          (gint) gpuspeech::BackendChoice::kAuto, rw));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device",
          "Device index for the cuda and opencl backends; -1: the device "
          "with the fewest decoders of this process (placed when the model "
          "loads; the gpudecoder-model message names it)", -1, G_MAXINT, 0,
          rw));
  g_object_class_install_property (gobject_class, PROP_NBEST,
      g_param_spec_int ("nbest", "N-best",
          "Alternatives in each final result's nbest field (0: none)",
          0, 1000, DEFAULT_NBEST, rw));
  g_object_class_install_property (gobject_class, PROP_OUTPUT_FORMAT,
      g_param_spec_enum ("output-format", "Output format",
          "What the src pad carries: timed text, SRT, WebVTT or JSON "
          "lines; auto: the first of those downstream accepts",
          GST_TYPE_GPU_DECODER_OUTPUT_FORMAT, (gint) OutputFormat::kAuto,
          rw));
  g_object_class_install_property (gobject_class, PROP_CUE_MAX_CHARS,
      g_param_spec_int ("cue-max-chars", "Cue length",
          "Most characters in one text buffer or subtitle cue (a longer "
          "word still gets a cue of its own)", 1, 100000,
          DEFAULT_CUE_MAX_CHARS, rw));
  g_object_class_install_property (gobject_class, PROP_CUE_MAX_DURATION,
      g_param_spec_uint ("cue-max-duration", "Cue duration",
          "Longest span of one text buffer or subtitle cue, in ms",
          1, 3600000, DEFAULT_CUE_MAX_DURATION, rw));
  g_object_class_install_property (gobject_class, PROP_CUE_TIMING,
      g_param_spec_enum ("cue-timing", "Cue timing",
          "When text goes out of the src pad: stable pushes each cue as "
          "soon as its words are stable (the least latency, but where a "
          "second pass decides the final words, the text can differ from "
          "the final result by a word); final pushes an utterance's cues "
          "when it ends, with the final result's words (the bus message's); "
          "auto: final where a second pass runs (adapt or lattice-lw), else "
          "stable (there the two give the same words, stable sooner). Read "
          "when the stream starts (READY to PAUSED)",
          GST_TYPE_GPU_DECODER_CUE_TIMING, (gint) CueTiming::kAuto, rw));
  g_object_class_install_property (gobject_class, PROP_CACHE_DIR,
      g_param_spec_string ("cache-dir", "Graph cache",
          "Where compiled search graphs are cached. NULL: "
          "$GPUSPEECH_CACHE_DIR, else $XDG_CACHE_HOME/gpuspeech, else "
          "~/.cache/gpuspeech; \"-\": compile every time", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_SEND_ALIGNMENTS,
      g_param_spec_boolean ("send-alignments", "Send alignments",
          "Align the frames of final words to the acoustic model's senones "
          "and send them upstream as gpuspeech-alignment events (for "
          "speaker adaptation, gpufmllr); the recognizer then keeps an "
          "utterance's features until its words are final. Read when the "
          "model is loaded (NULL to READY)", DEFAULT_SEND_ALIGNMENTS, rw));
  g_object_class_install_property (gobject_class, PROP_BATCHED_SEARCH,
      g_param_spec_boolean ("batched-search", "Batched search",
          "With the search on CUDA: run this decoder's search in device "
          "launches shared with the other decoders of this process on the "
          "same device that set it (the same words; more audio per GPU with "
          "tens of decoders, slower for one alone). Ignored when the search "
          "runs on the CPU. Read when the model is loaded (NULL to READY)",
          DEFAULT_BATCHED_SEARCH, rw));
  g_object_class_install_property (gobject_class, PROP_LATTICE_LW,
      g_param_spec_double ("lattice-lw", "Word-lattice language weight",
          "Final results from a second pass (like pocketsphinx -bestpath): "
          "the best path through the lattice of every word end the search "
          "made, with the full n-gram LM at this language weight (8.5 was "
          "best on our degraded sets; docs/search.md); 0: off, final results "
          "are the search's best path; -1 (auto): 8.5 when the decoder adapts "
          "(adapt, with an n-gram LM), else off. Needs an n-gram LM (lm, or "
          "the default). A final result may then differ from its partials' "
          "stable words; it costs host time per utterance (about 0.1 s for "
          "5 s of speech)",
          -1.0, 1000.0, DEFAULT_LATTICE_LW, rw));
  g_object_class_install_property (gobject_class, PROP_LATTICE_WIP,
      g_param_spec_double ("lattice-wip", "Word-lattice word insertion penalty",
          "The word-lattice pass's word insertion penalty (a probability: "
          "each word costs -ln of it), used only when the lattice pass runs; "
          "0: the wip property's value, as the search pays; -1 (auto): 2e-5 "
          "when the decoder adapts (adapt), else 0. The pass can want a "
          "larger cost per word than the search: each lattice node takes the "
          "least acoustic cost of the paths that made it, so a path of more, "
          "shorter words gains more from that choice (docs/search.md)",
          -1.0, 1e300, DEFAULT_LATTICE_WIP, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT,
      g_param_spec_boolean ("adapt", "Adapt to the speaker",
          "With an n-gram LM: learn the speaker's feature transform (fMLLR) "
          "from the final words of every utterance of the stream, decode "
          "each utterance under the transform learnt so far, and at its end "
          "decode it again under the transform that includes it; that second "
          "decoding is the final result (common/engine/adaptive_redecoder.h). "
          "A stream is one speaker; a new one (READY to PAUSED) starts "
          "afresh. Costs one more decoding of each utterance, at its end, "
          "from 3 s of speech on until the transform settles "
          "(redecode-min-gain), and host time that limits how many streams "
          "one GPU serves (false for the most streams). No "
          "effect with a grammar or keyphrases. Read when the model is "
          "loaded (NULL to READY)",
          DEFAULT_ADAPT, rw));
  g_object_class_install_property (gobject_class, PROP_REDECODE_MIN_GAIN,
      g_param_spec_double ("redecode-min-gain",
          "Least gain to decode again",
          "With adapt: decode an utterance again only when the new transform "
          "raises the fit to the stream's speech by at least this much over "
          "the transform in use (nats a frame); below it the new transform "
          "serves the utterances that follow and the first pass is final. "
          "Late in a long stream the transform barely moves and the second "
          "decoding would give the same words; this saves that decoding. 0: "
          "decode again after every new estimate. Read when a stream starts "
          "(READY to PAUSED)",
          0.0, 1e6, gs::AdaptiveRedecoderOptions ().min_redecode_gain, rw));
  g_object_class_install_property (gobject_class, PROP_UTTERANCE_CMN,
      g_param_spec_boolean ("utterance-cmn",
          "Normalise each utterance again at its end",
          "With adapt and features whose CMN is live (gpufeatures' default "
          "for Sphinx models): at an utterance's end, normalise its frames "
          "again with the cepstral mean of the stream's speech up to that "
          "end, the utterance's included (for a stream's first utterance its "
          "own mean, as the batch path, gpuspeech-transcribe, normalises a "
          "file), for what the adaptation learns and for the second "
          "decoding; a stream's first utterance is decoded again so even "
          "before there is a transform. Live CMN starts from the model's "
          "average, not the channel's mean, and gets a stream's first words "
          "wrong. Needs gpufeatures' trace of its live CMN on the buffers "
          "(gpufmllr in between removes it; then no effect). Read when a "
          "stream starts (READY to PAUSED)",
          DEFAULT_UTTERANCE_CMN, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_PRIOR,
      g_param_spec_string ("adapt-prior", "Adaptation prior",
          "With adapt: fMLLR statistics of the channel the streams come "
          "through (a telephone line, a codec), recorded once from other "
          "speakers: the .stats file gpuspeech-transcribe --fmllr-dir writes "
          "beside each speaker's transform. Every stream's estimates start "
          "from them (weighing as adapt-prior-frames frames) and its first "
          "pass from their transform, so a stream's first sentence is "
          "adapted to the channel before the stream has heard enough of its "
          "speaker; its own speech outweighs them as it grows. Measured to "
          "pay on a channel that distorts much (GSM) and to cost on mild "
          "ones (docs/gpudecoder.md). NULL: none. Read when the model is "
          "loaded (NULL to READY)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_CHANNELS,
      g_param_spec_string ("adapt-channels", "Channel prior library",
          "With adapt: a directory of channel priors (reference.stats, the "
          "library's recordings as made, and NAME.stats, the same through "
          "each channel; an optional weights file scales a channel's "
          "prior, 0 for none; tools/make-channel-priors.sh writes one). At every "
          "estimate each stream takes the channel whose transform explains "
          "its speech best, by at least adapt-channel-min-gain nats a frame "
          "over the reference's, as adapt-prior (weighing "
          "adapt-prior-frames frames), or none. For streams whose channel "
          "is not known in advance. Default: the library made for the "
          "default model (en-us: GSM 06.10, and G.711 mu-law with no prior; "
          "skipped with another model or "
          "with adapt-prior). \"none\", \"\" or NULL: none. Read when the model is "
          "loaded (NULL to READY)", default_channel_priors ().empty ()? NULL :
          default_channel_priors ().c_str (), rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_CHANNEL_MIN_GAIN,
      g_param_spec_double ("adapt-channel-min-gain",
          "Least gain to take a channel",
          "With adapt-channels: how much better (fMLLR objective, nats a "
          "frame) a channel's transform must explain a stream's speech than "
          "the library's reference before the stream takes that channel. On "
          "issue 15's sets a GSM channel scored 3.2-5.7 on GSM speech and "
          "at most 0.84 on eight other channels. Read when a stream starts "
          "(READY to PAUSED)", -1e9, 1e9,
          gs::AdaptiveRedecoderOptions ().channel_min_gain, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_PRIOR_FADE_FRAMES,
      g_param_spec_double ("adapt-prior-fade-frames",
          "Frames over which the prior fades",
          "With adapt-prior or a channel from adapt-channels: the prior "
          "weighs adapt-prior-frames x (1 - own / this), own being the "
          "stream's frames of speech so far, and nothing from this many on. "
          "0: it never fades. Read when a stream starts (READY to PAUSED)",
          0.0, 1e9, gs::AdaptiveRedecoderOptions ().prior_fade_frames, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_PRIOR_FRAMES,
      g_param_spec_double ("adapt-prior-frames", "Weight of the prior",
          "How many frames (10 ms each) of the stream's own speech "
          "adapt-prior weighs as. Read when a stream starts (READY to "
          "PAUSED)", 1.0, 1e9, gs::AdaptiveRedecoderOptions ().prior_frames,
          rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_YOUNG_FRAMES,
      g_param_spec_double ("adapt-young-frames",
          "Young stream's frames",
          "With adapt: while the stream's own statistics hold fewer "
          "frames (10 ms each) of speech than this and no prior's "
          "statistics are joined to them (adapt-prior, or a channel "
          "adapt-channels chose), the transform estimated has "
          "adapt-young-update's form, otherwise adapt-update's. A "
          "stream's first sentences (1 500 frames: about four) are too "
          "little to estimate the full transform's 1 560 values well; a "
          "prior's statistics carry the full form (docs/gpudecoder.md). "
          "0: never. Read when a stream starts (READY to PAUSED)",
          0.0, 1e9, gs::AdaptiveRedecoderOptions ().young_below_frames, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_YOUNG_UPDATE,
      g_param_spec_enum ("adapt-young-update", "Young stream's transform form",
          "With adapt: the form of the transform estimated below "
          "adapt-young-frames frames (the values as for adapt-update). "
          "Read when a stream starts (READY to PAUSED)",
          GST_TYPE_GPU_DECODER_ADAPT_UPDATE,
          (gint) gs::AdaptiveRedecoderOptions ().young_update, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_YOUNG_VTLN,
      g_param_spec_boolean ("adapt-young-vtln", "Young stream's VTLN warp",
          "With adapt: below adapt-young-frames (and with no prior), the "
          "transform is a vocal tract length warp (0.80-1.20, done on the "
          "cepstra) with a diagonal scaling, the warp its first "
          "sentence's alignment favours (each warp scored on its own "
          "features), instead of adapt-young-update's form: one "
          "value that a first pass's errors cannot teach much. The "
          "warp serves that sentence's second decoding; the next "
          "utterance starts under adapt-young-update's form "
          "(docs/gpudecoder.md). MFCC models only; others keep "
          "adapt-young-update. Read when a stream starts (READY to PAUSED)",
          gs::AdaptiveRedecoderOptions ().young_vtln, rw));
  g_object_class_install_property (gobject_class, PROP_ADAPT_UPDATE,
      g_param_spec_enum ("adapt-update", "Speaker transform's form",
          "With adapt: which part of the transform [A b] is estimated "
          "once a stream is past adapt-young-frames, or has a prior: all "
          "of it, A in three diagonal blocks (static, delta, acceleration "
          "features), A diagonal, or b alone. Fewer values need less "
          "speech to estimate well (docs/gpudecoder.md). Read when a "
          "stream starts (READY to PAUSED)",
          GST_TYPE_GPU_DECODER_ADAPT_UPDATE,
          (gint) gs::AdaptiveRedecoderOptions ().estimation.update, rw));

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_gpu_decoder_change_state);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Speech recogniser", "Filter/Analyzer/Audio/Text",
      "Recognises speech in feature frames on a GPU (CUDA, OpenCL) or the "
      "CPU: hypotheses on the bus, timed text or subtitles out",
      "gpuspeech developers");

  gst_type_mark_as_plugin_api (GPUSPEECH_TYPE_BACKEND_CHOICE,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_DECODER_OUTPUT_FORMAT,
      (GstPluginAPIFlags) 0);
}

static void
gst_gpu_decoder_init (GstGpuDecoder * self)
{
  self->settings = new Settings ();
  self->recognizer = NULL;
  self->model_features = NULL;
  self->frame_shift_samples = 0;
  self->sample_rate = 0;
  self->num_senones = 0;
  self->sends_alignments = FALSE;
  self->adapts = FALSE;
  self->adapt_prior = NULL;
  self->adapt_channels = NULL;
  self->stream = NULL;
  self->latency_ns = 0;

  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_decoder_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_decoder_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_decoder_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_gpu_decoder_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

static void
free_model (GstGpuDecoder * self)
{
  /* model_features is read by caps queries from other threads. */
  GST_OBJECT_LOCK (self);
  gs::FeatureOptions *features = self->model_features;
  self->model_features = NULL;
  GST_OBJECT_UNLOCK (self);
  delete features;
  delete self->recognizer;
  self->recognizer = NULL;
  delete self->adapt_prior;
  self->adapt_prior = NULL;
  delete self->adapt_channels;
  self->adapt_channels = NULL;
}

static void
gst_gpu_decoder_finalize (GObject * object)
{
  GstGpuDecoder *self = GST_GPU_DECODER (object);
  delete self->stream;
  self->stream = NULL;
  free_model (self);
  delete self->settings;
  self->settings = NULL;
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
set_string (std::string & dst, const GValue * value)
{
  const gchar *v = g_value_get_string (value);
  dst = v ? v : "";
}

static void
gst_gpu_decoder_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuDecoder *self = GST_GPU_DECODER (object);
  GST_OBJECT_LOCK (self);
  Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_HMM:
      set_string (s.hmm, value);
      break;
    case PROP_DICT:
      set_string (s.dict, value);
      break;
    case PROP_FDICT:
      set_string (s.fdict, value);
      break;
    case PROP_LM:
      set_string (s.lm, value);
      break;
    case PROP_JSGF:
      set_string (s.jsgf, value);
      break;
    case PROP_JSGF_RULE:
      set_string (s.jsgf_rule, value);
      break;
    case PROP_FSG:
      set_string (s.fsg, value);
      break;
    case PROP_KWS:
      set_string (s.kws, value);
      break;
    case PROP_BEAM:
      s.beam = g_value_get_double (value);
      break;
    case PROP_WBEAM:
      s.wbeam = g_value_get_double (value);
      break;
    case PROP_MAX_ACTIVE:
      s.max_active = g_value_get_int (value);
      break;
    case PROP_TOP_N:
      s.top_n = g_value_get_int (value);
      break;
    case PROP_LW:
      s.lw = g_value_get_double (value);
      break;
    case PROP_WIP:
      s.wip = g_value_get_double (value);
      break;
    case PROP_SILPROB:
      s.silprob = g_value_get_double (value);
      break;
    case PROP_FILLPROB:
      s.fillprob = g_value_get_double (value);
      break;
    case PROP_PARTIAL_INTERVAL:
      s.partial_interval = g_value_get_uint (value);
      break;
    case PROP_ENDPOINT_SILENCE:
      s.endpoint_silence = g_value_get_uint (value);
      break;
    case PROP_VAD_ENDPOINTING:
      s.vad_endpointing = g_value_get_boolean (value);
      break;
    case PROP_BACKEND:
      s.backend = (gpuspeech::BackendChoice) g_value_get_enum (value);
      break;
    case PROP_DEVICE_ID:
      s.device_id = g_value_get_int (value);
      break;
    case PROP_NBEST:
      s.nbest = g_value_get_int (value);
      break;
    case PROP_OUTPUT_FORMAT:
      s.output_format = (OutputFormat) g_value_get_enum (value);
      break;
    case PROP_CUE_MAX_CHARS:
      s.cue_max_chars = g_value_get_int (value);
      break;
    case PROP_CUE_MAX_DURATION:
      s.cue_max_duration = g_value_get_uint (value);
      break;
    case PROP_CUE_TIMING:
      s.cue_timing = (CueTiming) g_value_get_enum (value);
      break;
    case PROP_CACHE_DIR:
      set_string (s.cache_dir, value);
      break;
    case PROP_SEND_ALIGNMENTS:
      s.send_alignments = g_value_get_boolean (value);
      break;
    case PROP_BATCHED_SEARCH:
      s.batched_search = g_value_get_boolean (value);
      break;
    case PROP_LATTICE_LW:
      s.lattice_lw = g_value_get_double (value);
      break;
    case PROP_LATTICE_WIP:
      s.lattice_wip = g_value_get_double (value);
      break;
    case PROP_ADAPT:
      s.adapt = g_value_get_boolean (value);
      break;
    case PROP_REDECODE_MIN_GAIN:
      s.redecode_min_gain = g_value_get_double (value);
      break;
    case PROP_UTTERANCE_CMN:
      s.utterance_cmn = g_value_get_boolean (value);
      break;
    case PROP_ADAPT_PRIOR:
      set_string (s.adapt_prior, value);
      break;
    case PROP_ADAPT_YOUNG_FRAMES:
      s.adapt_young_frames = g_value_get_double (value);
      break;
    case PROP_ADAPT_YOUNG_UPDATE:
      s.adapt_young_update = (gs::FmllrUpdateType) g_value_get_enum (value);
      break;
    case PROP_ADAPT_YOUNG_VTLN:
      s.adapt_young_vtln = g_value_get_boolean (value);
      break;
    case PROP_ADAPT_UPDATE:
      s.adapt_update = (gs::FmllrUpdateType) g_value_get_enum (value);
      break;
    case PROP_ADAPT_CHANNELS:
      set_string (s.adapt_channels, value);
      break;
    case PROP_ADAPT_CHANNEL_MIN_GAIN:
      s.adapt_channel_min_gain = g_value_get_double (value);
      break;
    case PROP_ADAPT_PRIOR_FADE_FRAMES:
      s.adapt_prior_fade_frames = g_value_get_double (value);
      break;
    case PROP_ADAPT_PRIOR_FRAMES:
      s.adapt_prior_frames = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
get_string (GValue * value, const std::string & s)
{
  g_value_set_string (value, s.empty ()? NULL : s.c_str ());
}

static void
gst_gpu_decoder_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpuDecoder *self = GST_GPU_DECODER (object);
  GST_OBJECT_LOCK (self);
  const Settings & s = *self->settings;
  switch (prop_id) {
    case PROP_HMM:
      get_string (value, s.hmm);
      break;
    case PROP_DICT:
      get_string (value, s.dict);
      break;
    case PROP_FDICT:
      get_string (value, s.fdict);
      break;
    case PROP_LM:
      get_string (value, s.lm);
      break;
    case PROP_JSGF:
      get_string (value, s.jsgf);
      break;
    case PROP_JSGF_RULE:
      get_string (value, s.jsgf_rule);
      break;
    case PROP_FSG:
      get_string (value, s.fsg);
      break;
    case PROP_KWS:
      get_string (value, s.kws);
      break;
    case PROP_BEAM:
      g_value_set_double (value, s.beam);
      break;
    case PROP_WBEAM:
      g_value_set_double (value, s.wbeam);
      break;
    case PROP_MAX_ACTIVE:
      g_value_set_int (value, s.max_active);
      break;
    case PROP_TOP_N:
      g_value_set_int (value, s.top_n);
      break;
    case PROP_LW:
      g_value_set_double (value, s.lw);
      break;
    case PROP_WIP:
      g_value_set_double (value, s.wip);
      break;
    case PROP_SILPROB:
      g_value_set_double (value, s.silprob);
      break;
    case PROP_FILLPROB:
      g_value_set_double (value, s.fillprob);
      break;
    case PROP_PARTIAL_INTERVAL:
      g_value_set_uint (value, s.partial_interval);
      break;
    case PROP_ENDPOINT_SILENCE:
      g_value_set_uint (value, s.endpoint_silence);
      break;
    case PROP_VAD_ENDPOINTING:
      g_value_set_boolean (value, s.vad_endpointing);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, (gint) s.backend);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, s.device_id);
      break;
    case PROP_NBEST:
      g_value_set_int (value, s.nbest);
      break;
    case PROP_OUTPUT_FORMAT:
      g_value_set_enum (value, (gint) s.output_format);
      break;
    case PROP_CUE_MAX_CHARS:
      g_value_set_int (value, s.cue_max_chars);
      break;
    case PROP_CUE_MAX_DURATION:
      g_value_set_uint (value, s.cue_max_duration);
      break;
    case PROP_CUE_TIMING:
      g_value_set_enum (value, (gint) s.cue_timing);
      break;
    case PROP_CACHE_DIR:
      get_string (value, s.cache_dir);
      break;
    case PROP_SEND_ALIGNMENTS:
      g_value_set_boolean (value, s.send_alignments);
      break;
    case PROP_BATCHED_SEARCH:
      g_value_set_boolean (value, s.batched_search);
      break;
    case PROP_LATTICE_LW:
      g_value_set_double (value, s.lattice_lw);
      break;
    case PROP_LATTICE_WIP:
      g_value_set_double (value, s.lattice_wip);
      break;
    case PROP_ADAPT:
      g_value_set_boolean (value, s.adapt);
      break;
    case PROP_REDECODE_MIN_GAIN:
      g_value_set_double (value, s.redecode_min_gain);
      break;
    case PROP_UTTERANCE_CMN:
      g_value_set_boolean (value, s.utterance_cmn);
      break;
    case PROP_ADAPT_PRIOR:
      get_string (value, s.adapt_prior);
      break;
    case PROP_ADAPT_YOUNG_FRAMES:
      g_value_set_double (value, s.adapt_young_frames);
      break;
    case PROP_ADAPT_YOUNG_UPDATE:
      g_value_set_enum (value, (gint) s.adapt_young_update);
      break;
    case PROP_ADAPT_YOUNG_VTLN:
      g_value_set_boolean (value, s.adapt_young_vtln);
      break;
    case PROP_ADAPT_UPDATE:
      g_value_set_enum (value, (gint) s.adapt_update);
      break;
    case PROP_ADAPT_CHANNELS:
      get_string (value, s.adapt_channels);
      break;
    case PROP_ADAPT_CHANNEL_MIN_GAIN:
      g_value_set_double (value, s.adapt_channel_min_gain);
      break;
    case PROP_ADAPT_PRIOR_FADE_FRAMES:
      g_value_set_double (value, s.adapt_prior_fade_frames);
      break;
    case PROP_ADAPT_PRIOR_FRAMES:
      g_value_set_double (value, s.adapt_prior_frames);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------------ */
/* Caps                                                                     */

/* The model's feature caps, or NULL before the model is loaded. */
static GstCaps *
model_sink_caps (GstGpuDecoder * self)
{
  GST_OBJECT_LOCK (self);
  if (!self->model_features) {
    GST_OBJECT_UNLOCK (self);
    return NULL;
  }
  const gs::FeatureOptions o = *self->model_features;
  GST_OBJECT_UNLOCK (self);
  const gint rate = self->sample_rate;
  const gint shift = (gint) self->frame_shift_samples;
  const gint gcd = gst_util_greatest_common_divisor (rate, shift);
  GstCaps *caps = gst_caps_new_simple (GPUSPEECH_FEATURES_MEDIA_TYPE,
      "format", G_TYPE_STRING, "F32LE",
      "kind", G_TYPE_STRING, gs::to_string (o.kind),
      "flavour", G_TYPE_STRING, gs::to_string (o.flavour),
      "dim", G_TYPE_INT, o.output_dim (),
      "base-dim", G_TYPE_INT, o.base_dim (),
      "frame-rate", GST_TYPE_FRACTION, rate / gcd, shift / gcd,
      "layout", G_TYPE_STRING, gs::feature_layout_name (o.delta).c_str (),
      "num-warps", G_TYPE_INT, 1,
      "sample-rate", G_TYPE_INT, rate, NULL);
  GValue list = G_VALUE_INIT;
  GValue v = G_VALUE_INIT;
  gst_value_list_init (&list, 2);
  g_value_init (&v, G_TYPE_STRING);
  if (o.norm.cmn == gs::NormOptions::Cmn::kNone) {
    g_value_set_string (&v, "none");
    gst_value_list_append_value (&list, &v);
  } else {
    g_value_set_string (&v, "live");
    gst_value_list_append_value (&list, &v);
    g_value_set_string (&v, "batch");
    gst_value_list_append_value (&list, &v);
  }
  g_value_unset (&v);
  gst_caps_set_value (caps, "cmn", &list);
  g_value_unset (&list);
  /* Where the front end is described, so that a gpufeatures with no
   * front-end property set can configure itself from it (its start()). */
  if (self->recognizer) {
    const std::string fp = self->recognizer->config ().model_dir +
        "/feat.params";
    if (g_file_test (fp.c_str (), G_FILE_TEST_IS_REGULAR))
      gst_caps_set_simple (caps, "feat-params", G_TYPE_STRING, fp.c_str (),
          NULL);
  }
  return caps;
}

/* Picks the output format and pushes the src caps. */
static gboolean
negotiate_src (GstGpuDecoder * self, StreamState * st)
{
  OutputFormat f = st->requested_format;
  GstCaps *tmpl = gst_pad_get_pad_template_caps (self->srcpad);
  if (f == OutputFormat::kAuto) {
    GstCaps *peer = gst_pad_peer_query_caps (self->srcpad, tmpl);
    if (gst_caps_is_empty (peer)) {
      gchar *t = gst_caps_to_string (tmpl);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("downstream accepts none of gpudecoder's outputs (%s)", t),
          (NULL));
      g_free (t);
      gst_caps_unref (peer);
      gst_caps_unref (tmpl);
      return FALSE;
    }
    const gchar *name =
        gst_structure_get_name (gst_caps_get_structure (peer, 0));
    f = g_str_equal (name, "application/x-subtitle") ? OutputFormat::kSrt :
        g_str_equal (name, "application/x-subtitle-vtt") ?
        OutputFormat::kWebvtt : g_str_equal (name, "application/x-json") ?
        OutputFormat::kJson : OutputFormat::kText;
    gst_caps_unref (peer);
  }
  gst_caps_unref (tmpl);
  st->format = f;
  GstCaps *caps = f == OutputFormat::kText ?
      gst_caps_new_simple ("text/x-raw", "format", G_TYPE_STRING, "utf8",
      NULL) : gst_caps_new_empty_simple (format_media_type (f));
  GST_DEBUG_OBJECT (self, "output caps %" GST_PTR_FORMAT, caps);
  gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
  if (!ok && gst_pad_is_linked (self->srcpad)) {
    GstCaps *peer = gst_pad_peer_query_caps (self->srcpad, NULL);
    gchar *a = gst_caps_to_string (caps);
    gchar *b = gst_caps_to_string (peer);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("downstream does not accept gpudecoder's output: gpudecoder "
            "produces %s (output-format); downstream accepts %s", a, b),
        (NULL));
    g_free (a);
    g_free (b);
    gst_caps_unref (peer);
    gst_caps_unref (caps);
    return FALSE;
  }
  gst_caps_unref (caps);
  return TRUE;
}

/* Checks upstream's feature caps against the model; on a mismatch posts an
 * error naming both. */
static gboolean
gst_gpu_decoder_set_sink_caps (GstGpuDecoder * self, GstCaps * caps)
{
  StreamState *st = self->stream;
  if (!st || !self->recognizer) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("caps arrived before the element was started"));
    return FALSE;
  }
  if (st->refused_caps && gst_caps_is_equal (caps, st->refused_caps))
    return FALSE;               /* said so already (see refused_caps) */
  const gs::FeatureOptions & o = *self->model_features;
  const std::string wanted = gs::feature_signature (o);
  gchar *offered_str = gst_caps_to_string (caps);
  const GstStructure *s = gst_caps_get_size (caps) == 1 ?
      gst_caps_get_structure (caps, 0) : NULL;
  std::string problem;
  if (!s || !gst_structure_has_name (s, GPUSPEECH_FEATURES_MEDIA_TYPE)) {
    problem = "not a feature stream (" GPUSPEECH_FEATURES_MEDIA_TYPE ")";
  } else {
    gint dim = 0;
    gst_structure_get_int (s, "dim", &dim);
    const gchar *config = gst_structure_get_string (s, "config");
    const gchar *format = gst_structure_get_string (s, "format");
    if (!format || !g_str_equal (format, "F32LE"))
      problem = std::string ("format: upstream ") + (format ? format :
          "(absent)") + ", model F32LE";
    else if (dim != o.output_dim ())
      problem = "dim: upstream " + std::to_string (dim) + ", model " +
          std::to_string (o.output_dim ());
    if (problem.empty () && config) {
      problem = gs::feature_signature_mismatch (config, wanted);
    } else if (problem.empty ()) {
      /* A producer without `config` (not gpufeatures): check the shape. */
      const gchar *kind = gst_structure_get_string (s, "kind");
      const gchar *layout = gst_structure_get_string (s, "layout");
      const std::string want_layout = gs::feature_layout_name (o.delta);
      gint rate = 0;
      gst_structure_get_int (s, "sample-rate", &rate);
      if (!kind || !g_str_equal (kind, gs::to_string (o.kind)))
        problem = std::string ("kind: upstream ") + (kind ? kind : "(absent)")
            + ", model " + gs::to_string (o.kind);
      else if (!layout || want_layout != layout)
        problem = std::string ("layout: upstream ") + (layout ? layout :
            "(absent)") + ", model " + want_layout;
      else if (rate != self->sample_rate)
        problem = "sample-rate: upstream " + std::to_string (rate) +
            ", model " + std::to_string (self->sample_rate);
      else
        GST_ELEMENT_WARNING (self, STREAM, FORMAT,
            ("the feature caps have no config field: gpudecoder cannot "
                "check that the features are the ones the model expects"),
            ("offered %s", offered_str));
    }
  }
  if (!problem.empty ()) {
    const std::string model = self->recognizer->config ().model_dir;
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("the features from upstream do not match the acoustic model %s "
            "(feat.params): %s", model.c_str (), problem.c_str ()),
        ("upstream offers %s; the model expects %s", offered_str,
            wanted.c_str ()));
    g_free (offered_str);
    gst_caps_replace (&st->refused_caps, caps);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "features accepted: %s", offered_str);
  g_free (offered_str);
  st->caps_ok = TRUE;
  st->unnegotiated_reported = FALSE;
  /* Downstream refusing every output comes back with the same caps too. */
  const gboolean ok = negotiate_src (self, st);
  gst_caps_replace (&st->refused_caps, ok ? NULL : caps);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* Results                                                                  */

static GstClockTime
frame_time (GstGpuDecoder * self, StreamState * st, gint64 frame)
{
  return st->utt_pts + gst_util_uint64_scale ((guint64) frame,
      (guint64) self->frame_shift_samples * GST_SECOND,
      (guint64) self->sample_rate);
}

/* Whole frames in `duration` (rounded down): frame_time()'s inverse. */
static gint64
frames_in (GstGpuDecoder * self, GstClockTime duration)
{
  return (gint64) gst_util_uint64_scale (duration,
      (guint64) self->sample_rate,
      (guint64) self->frame_shift_samples * GST_SECOND);
}

/* The detector upstream has heard no speech since before the utterance
 * began (gpuspeech-vad events). */
static gboolean
vad_silent_throughout (StreamState * st)
{
  return GST_CLOCK_TIME_IS_VALID (st->vad_silence_start)
      && st->vad_silence_start <= st->utt_pts;
}

static GstClockTime
to_stream_time (StreamState * st, GstClockTime t)
{
  const guint64 s =
      gst_segment_to_stream_time (&st->segment, GST_FORMAT_TIME, t);
  return GST_CLOCK_TIME_IS_VALID (s) ? s : t;
}

/* The hypothesis' words in buffer time. */
static std::vector < gs::TimedWord >
timed_words (GstGpuDecoder * self, StreamState * st, const gs::Hypothesis & h)
{
  std::vector < gs::TimedWord > out;
  out.reserve (h.words.size ());
  for (const gs::HypothesisWord & w:h.words)
    out.push_back ({w.text, (int64_t) frame_time (self, st, w.start_frame),
            (int64_t) frame_time (self, st, (gint64) w.end_frame + 1)});
  return out;
}

static void
append_structure (GValue * array, GstStructure * s)
{
  GValue v = G_VALUE_INIT;
  g_value_init (&v, GST_TYPE_STRUCTURE);
  gst_value_set_structure (&v, s);
  gst_value_array_append_and_take_value (array, &v);
  gst_structure_free (s);
}

static void
post_result (GstGpuDecoder * self, StreamState * st, const gs::Hypothesis & h,
    gboolean final, const char *reason,
    const std::vector < gs::Hypothesis > *nbest)
{
  const std::string text = h.text ();
  GValue words = G_VALUE_INIT;
  gst_value_array_init (&words, h.words.size ());
  for (const gs::HypothesisWord & w:h.words) {
    append_structure (&words, gst_structure_new ("word",
            "word", G_TYPE_STRING, w.text.c_str (),
            "start", G_TYPE_UINT64, to_stream_time (st, frame_time (self, st,
                    w.start_frame)),
            "end", G_TYPE_UINT64, to_stream_time (st, frame_time (self, st,
                    (gint64) w.end_frame + 1)),
            "confidence", G_TYPE_DOUBLE, (gdouble) w.confidence, NULL));
  }
  const guint stable = final ? (guint) h.words.size () :
      (guint) CLAMP (h.stable_words, 0, (gint) h.words.size ());
  const GstClockTime end = frame_time (self, st, st->utt_frames);
  GstStructure *s = gst_structure_new (GPUSPEECH_DECODER_MESSAGE,
      "hypothesis", G_TYPE_STRING, text.c_str (),
      "confidence", G_TYPE_DOUBLE, (gdouble) h.confidence,
      "final", G_TYPE_BOOLEAN, final,
      "stable-words", G_TYPE_UINT, stable,
      "utterance", G_TYPE_UINT, st->utt_index,
      "timestamp", G_TYPE_UINT64, to_stream_time (st, st->utt_pts),
      "duration", G_TYPE_UINT64, (guint64) (end - st->utt_pts),
      "frames", G_TYPE_UINT64, (guint64) st->utt_frames,
      "trailing-silence", G_TYPE_UINT64,
      (guint64) (frame_time (self, st, h.trailing_silence_frames) -
          frame_time (self, st, 0)),
      "running-time", G_TYPE_UINT64,
      gst_segment_to_running_time (&st->segment, GST_FORMAT_TIME, end),
      NULL);
  gst_structure_take_value (s, "words", &words);
  if (final)
    gst_structure_set (s, "reason", G_TYPE_STRING, reason, NULL);
  if (final && st->decoder->adapter ())
    gst_structure_set (s, "adapted", G_TYPE_BOOLEAN,
        (gboolean) st->decoder->adapter ()->last_report ().adapted,
        "utterance-cmn", G_TYPE_BOOLEAN,
        (gboolean) st->decoder->adapter ()->last_report ().own_cmn, NULL);
  if (final && st->decoder->adapter () && self->adapt_channels) {
    const gs::ChannelPrior *c = st->decoder->adapter ()->channel ();
    gst_structure_set (s, "channel", G_TYPE_STRING, c ? c->name.c_str () : "",
        NULL);
  }
  if (final && nbest && st->nbest > 0) {
    GValue alts = G_VALUE_INIT;
    gst_value_array_init (&alts, nbest->size ());
    for (const gs::Hypothesis & a:*nbest)
      append_structure (&alts, gst_structure_new ("alternative",
              "hypothesis", G_TYPE_STRING, a.text ().c_str (),
              "confidence", G_TYPE_DOUBLE, (gdouble) a.confidence,
              "cost", G_TYPE_DOUBLE, (gdouble) a.cost, NULL));
    gst_structure_take_value (s, "nbest", &alts);
  }
  GST_LOG_OBJECT (self, "%s result: %s", final ? "final" : "partial",
      text.c_str ());
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* An unlinked src pad is allowed: the bus messages are then the output. */
static GstFlowReturn
output_flow (GstFlowReturn ret)
{
  return ret == GST_FLOW_NOT_LINKED ? GST_FLOW_OK : ret;
}

static GstFlowReturn
push_text (GstGpuDecoder * self, StreamState * st, const std::string & text,
    GstClockTime pts, GstClockTime duration)
{
  GstBuffer *buf = gst_buffer_new_memdup (text.data (), text.size ());
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = duration;
  if (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (duration))
    st->out_pos = pts + duration;
  return output_flow (gst_pad_push (self->srcpad, buf));
}

/* Pushes the cues the words from st->cued_words on make (all of them when
 * `final`, else those later words cannot change). */
static GstFlowReturn
push_cues (GstGpuDecoder * self, StreamState * st,
    const std::vector < gs::TimedWord > &words, gboolean final)
{
  GstFlowReturn ret = GST_FLOW_OK;
  if (st->format == OutputFormat::kJson)
    return ret;                 /* whole results only, in end_utterance */
  for (const gs::Cue & c:gs::complete_cues (words, st->cued_words, !final,
          st->cue_options)) {
    st->cued_words = c.first_word + c.num_words;
    st->cued_end_ns = c.end_ns;
    std::string text;
    switch (st->format) {
      case OutputFormat::kSrt:
        text = gs::srt_cue (++st->cue_index, c);
        break;
      case OutputFormat::kWebvtt:
        if (!st->vtt_header_sent)
          text = gs::webvtt_header ();
        st->vtt_header_sent = TRUE;
        text += gs::webvtt_cue (c);
        break;
      default:
        text = c.text;
        break;
    }
    /* Text never starts before text already pushed ends (a final word
     * that begins inside the last stable cue, above). */
    GstClockTime start = (GstClockTime) c.start_ns;
    if (GST_CLOCK_TIME_IS_VALID (st->out_pos) && start < st->out_pos
        && (GstClockTime) c.end_ns > st->out_pos)
      start = st->out_pos;
    ret = push_text (self, st, text, start, (GstClockTime) c.end_ns - start);
    if (ret != GST_FLOW_OK)
      break;
  }
  return ret;
}

/* Tells downstream that no text comes before `until`. */
static void
push_gap_until (GstGpuDecoder * self, StreamState * st, GstClockTime until)
{
  if (!GST_CLOCK_TIME_IS_VALID (until) || !st->caps_ok)
    return;                     /* nothing goes out before the src caps */
  const GstClockTime from = GST_CLOCK_TIME_IS_VALID (st->out_pos) ?
      st->out_pos : (GST_CLOCK_TIME_IS_VALID (st->segment.start) ?
      st->segment.start : 0);
  if (until <= from)
    return;
  st->out_pos = until;
  gst_pad_push_event (self->srcpad, gst_event_new_gap (from, until - from));
}

/* A final result as one line of JSON (common/output/result_json.h), times in
 * seconds of stream time. */
static std::string
result_json (GstGpuDecoder * self, StreamState * st,
    const gs::RecognitionResult & r, const char *reason)
{
  gs::ResultJsonOptions o;
  o.utterance = st->utt_index;
  o.frames = st->utt_frames;
  o.reason = reason;
  o.with_nbest = st->nbest > 0;
  return gs::result_json (r, o,[&](int64_t frame) {
        return (double) to_stream_time (st, frame_time (self, st,
                frame)) / GST_SECOND;
      });
}

/* Sends the frames of words [st->aligned_words, upto) of the utterance in
 * progress upstream as a gpuspeech-alignment event (their senones from the
 * recognizer's forced alignment), then lets the recognizer free the
 * features before the last of them. Frames already sent are never sent
 * again, so events do not overlap. Alignment is a by-product: a failure is
 * logged and skips these words, and never stops decoding. */
static void
send_alignment (GstGpuDecoder * self, StreamState * st,
    const std::vector < gs::HypothesisWord > &words, size_t upto)
{
  upto = std::min (upto, words.size ());
  if (!st->send_alignments || upto <= st->aligned_words)
    return;
  const gint64 words_end = (gint64) words[upto - 1].end_frame + 1;
  /* align() can only use frames the recognizer still keeps, and frames
   * already sent must not be sent again: words that start before either
   * point are left out whole (a word cut at its start would be forced
   * into its HMM's first states from the middle, a wrong alignment). Such
   * words come only where the hypothesis moved a boundary back over what
   * was aligned, or where the recognizer discarded features on its own;
   * their frames get no event, the words after them still do. */
  const gint64 from = std::max < gint64 > (st->aligned_end,
      self->recognizer->features_kept_from ());
  size_t first_word = st->aligned_words;
  while (first_word < upto && (gint64) words[first_word].start_frame < from)
    ++first_word;
  if (first_word > st->aligned_words)
    GST_DEBUG_OBJECT (self, "utterance %u: words %" G_GSIZE_FORMAT "..%"
        G_GSIZE_FORMAT " start before frame %" G_GINT64_FORMAT " (sent or "
        "discarded already): not aligned", st->utt_index, st->aligned_words,
        first_word, from);
  if (first_word < upto) {
    const std::vector < gs::HypothesisWord > fresh (words.begin () +
        (std::ptrdiff_t) first_word, words.begin () + (std::ptrdiff_t) upto);
    try {
      const gs::FrameAlignment a = self->recognizer->align (fresh);
      const size_t n = a.senones.size ();
      GST_LOG_OBJECT (self, "utterance %u: aligned %d words (%d failed) to "
          "frames %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, st->utt_index,
          a.words_aligned, a.words_failed, (gint64) a.first_frame,
          (gint64) a.first_frame + (gint64) n);
      if (n > 0) {
        const guint64 frame_duration = gst_util_uint64_scale ((guint64)
            self->frame_shift_samples, GST_SECOND,
            (guint64) self->sample_rate);
        GstEvent *event = gpuspeech_alignment_event_new (frame_time (self,
                st, a.first_frame), frame_duration, a.senones.data (), n,
            self->num_senones, self->recognizer->config ().model_dir.c_str (),
            st->utt_index, st->segment_seqnum);
        if (event) {
          /* FALSE only means nobody upstream wanted it. */
          if (!gst_pad_push_event (self->sinkpad, event))
            GST_LOG_OBJECT (self, "no element upstream handled the "
                "alignment");
        } else {
          GST_WARNING_OBJECT (self, "the aligner returned an alignment the "
              "event cannot carry (a senone outside the model's %d, or "
              "times out of range); not sent", self->num_senones);
        }
        st->aligned_end = (gint64) a.first_frame + (gint64) n;
      }
    } catch (const std::exception & e) {
      GST_WARNING_OBJECT (self, "cannot align words %" G_GSIZE_FORMAT "..%"
          G_GSIZE_FORMAT " of utterance %u (no alignment event for them): "
          "%s", first_word, upto, st->utt_index, e.what ());
    }
  }
  st->aligned_words = upto;
  st->aligned_end = std::max (st->aligned_end, words_end);
  /* The adaptation aligns the whole utterance at its end. */
  if (st->decoder->adapter ())
    return;
  try {
    self->recognizer->discard_features_before (st->aligned_end);
  } catch (const std::exception & e) {
    GST_WARNING_OBJECT (self, "cannot free aligned features: %s", e.what ());
  }
}

/* A partial analysis at a tick: message, stable words as text, endpoint. */
static GstFlowReturn
analyse (GstGpuDecoder * self, StreamState * st, gs::EndpointDecision * endpoint)
{
  *endpoint = gs::EndpointDecision::kNone;
  const gs::RecognitionResult r = self->recognizer->partial ();
  const gs::Hypothesis & h = r.best;
  if (st->post_partials)
    post_result (self, st, h, FALSE, NULL, NULL);

  const std::vector < gs::TimedWord > words = timed_words (self, st, h);
  /* With cues at the end, none now: the gap below then reaches the
   * utterance's start. */
  size_t stable = st->cues_at_end ? 0 :
      (size_t) CLAMP (h.stable_words, 0, (gint) words.size ());
  if (stable < st->cued_words) {
    /* The search promises that stable words stay; if that ever broke, the
     * text already pushed stays as it is. */
    GST_WARNING_OBJECT (self, "stable prefix shrank from %" G_GSIZE_FORMAT
        " to %" G_GSIZE_FORMAT " words", st->cued_words, stable);
    stable = st->cued_words;
  }
  const std::vector < gs::TimedWord > stable_words (words.begin (),
      words.begin () + std::min (stable, words.size ()));
  GstFlowReturn ret = push_cues (self, st, stable_words, FALSE);
  if (ret != GST_FLOW_OK)
    return ret;
  GstClockTime safe = st->utt_pts;
  if (st->cued_words < stable_words.size ())
    safe = (GstClockTime) stable_words[st->cued_words].start_ns;
  else if (!stable_words.empty ())
    safe = (GstClockTime) stable_words.back ().end_ns;
  push_gap_until (self, st, safe);
  send_alignment (self, st, h.words,
      (size_t) CLAMP (h.stable_words, 0, (gint) h.words.size ()));

  /* The detector's view of this utterance, once it has spoken. */
  gs::VoiceActivity vad;
  vad.silent_throughout = vad_silent_throughout (st);
  if (GST_CLOCK_TIME_IS_VALID (st->vad_silence_start)
      && !vad.silent_throughout) {
    const GstClockTime end = frame_time (self, st, st->utt_frames);
    vad.silence_frames = end > st->vad_silence_start ?
        frames_in (self, end - st->vad_silence_start) : 0;
  }
  *endpoint = gs::decide_endpoint (st->endpoint_frames, st->utt_frames, h,
      st->vad_heard ? &vad : NULL);
  if (st->vad_heard && *endpoint != gs::EndpointDecision::kNone)
    GST_DEBUG_OBJECT (self, "utterance %u: %s with the detector's %s",
        st->utt_index, *endpoint == gs::EndpointDecision::kFinal ?
        "final" : "dropped", vad.silent_throughout ? "silence throughout" :
        "silence after speech");
  return GST_FLOW_OK;
}

static void
clear_utterance (StreamState * st)
{
  st->utt_started = FALSE;
  st->utt_frames = 0;
  st->next_tick = st->tick_frames;
  st->cued_words = 0;
  st->cued_end_ns = 0;
  st->aligned_words = 0;
  st->aligned_end = 0;
}

/* Ends the utterance in progress: final result, remaining text, reset. With
 * `continues`, the next utterance starts at the frame after. */
static GstFlowReturn
end_utterance (GstGpuDecoder * self, StreamState * st, const char *reason,
    gboolean continues)
{
  if (!st->utt_started || st->utt_frames == 0) {
    /* Nothing decoded, nothing to report; a continuing utterance keeps the
     * start it has. */
    const gboolean started = st->utt_started && continues;
    const GstClockTime pts = st->utt_pts;
    clear_utterance (st);
    st->utt_started = started;
    st->utt_pts = pts;
    return GST_FLOW_OK;
  }
  /* Last words that lie mostly in the detector's silence are what the
   * search heard in the noise of the pause (the detector heard no speech
   * there): left out of the result and of what the adaptation learns
   * from (gs::drop_words_from has the rule). */
  gint64 silence_start = gs::kNoSilence;
  if (GST_CLOCK_TIME_IS_VALID (st->vad_silence_start)
      && st->vad_silence_start > st->utt_pts) {
    silence_start = frames_in (self, st->vad_silence_start - st->utt_pts);
    GST_DEBUG_OBJECT (self, "utterance %u: the detector's silence from frame %"
        G_GINT64_FORMAT " of %" G_GINT64_FORMAT, st->utt_index, silence_start,
        st->utt_frames);
  }
  const gs::RecognitionResult r = st->decoder->finish (silence_start);
  if (st->decoder->adapter ()) {
    const gs::RedecodeReport & a = st->decoder->adapter ()->last_report ();
    GST_DEBUG_OBJECT (self, "utterance %u: %s%s (%s%s%s), gain %.4f, %"
        G_GINT64_FORMAT " frames aligned, speaker statistics %.0f frames, "
        "ln|det A| %.3f", st->utt_index,
        a.redecoded ? "decoded again" : "first pass kept",
        a.own_cmn ? " (normalised again)" : "", gs::to_string (a.outcome),
        a.message.empty ()? "" : ": ", a.message.c_str (), a.gain,
        a.frames_aligned, a.stream_weight, a.log_abs_det);
    if (a.warp > 0.0)
      GST_DEBUG_OBJECT (self, "utterance %u: VTLN warp %.2f", st->utt_index, a.warp);
    if (self->adapt_channels)
      GST_DEBUG_OBJECT (self, "utterance %u: channel %s (best gain over the "
          "reference %.3f nats a frame)", st->utt_index,
          a.channel.empty ()? "none" : a.channel.c_str (), a.channel_gain);
    if (a.own_cmn)
      GST_DEBUG_OBJECT (self, "utterance %u normalised again: c0 moved by up "
          "to %.2f, %" G_GINT64_FORMAT " first words before the detector's "
          "speech left out", st->utt_index, a.cmn_shift,
          a.leading_words_dropped);
  }
  const GstClockTime end = frame_time (self, st, st->utt_frames);
  post_result (self, st, r.best, TRUE, reason, &r.nbest);
  const std::vector < gs::TimedWord > final_words =
      timed_words (self, st, r.best);
  if (st->cued_words > 0) {
    /* Stable cues went out: the final words after them in time. A second
     * pass's words can differ from the stable ones in number, so the index
     * of the last one pushed says nothing here. */
    size_t next = 0;
    /* A word the second pass moved a little earlier than the first pass's
     * last cued word ended is still a word to show: words count as pushed
     * when their middle lies in the time already cued. */
    while (next < final_words.size ()
        && (final_words[next].start_ns + final_words[next].end_ns) / 2 <
        st->cued_end_ns)
      ++next;
    st->cued_words = next;
  }
  GstFlowReturn ret = push_cues (self, st, final_words, TRUE);
  if (ret == GST_FLOW_OK && st->format == OutputFormat::kJson && st->caps_ok)
    ret = push_text (self, st, result_json (self, st, r, reason),
        st->utt_pts, end - st->utt_pts);
  push_gap_until (self, st, end);
  /* Before reset(), which drops the utterance's features. */
  send_alignment (self, st, r.best.words, r.best.words.size ());
  st->decoder->reset ();
  clear_utterance (st);
  ++st->utt_index;
  if (continues) {
    st->utt_started = TRUE;
    st->utt_pts = end;
  }
  GST_DEBUG_OBJECT (self, "utterance ended (%s) at %" GST_TIME_FORMAT,
      reason, GST_TIME_ARGS (end));
  return ret;
}

/* Frames decoded again after a dropped utterance: a word may begin in the
 * last frames before the drop while the best path is still in silence. */
static const gint64 kDropOverlapFrames = 50;

static void
remember_frames (StreamState * st, const float *frames, gint64 n, gint dim,
    const float *cmn_offsets, const guint8 * cmn_learned)
{
  if (st->recent_dim != dim) {
    st->recent.clear ();
    st->recent_trace.clear ();
    st->recent_has_trace.clear ();
  }
  st->recent_dim = dim;
  st->recent_trace.dim = dim;
  st->recent.insert (st->recent.end (), frames, frames + n * dim);
  /* The trace runs parallel to the frames (zeros where a frame had none). */
  if (cmn_offsets && cmn_learned) {
    st->recent_trace.append (cmn_offsets, cmn_learned, n);
  } else {
    st->recent_trace.offsets.insert (st->recent_trace.offsets.end (),
        (size_t) (n * dim), 0.0f);
    st->recent_trace.learned.insert (st->recent_trace.learned.end (),
        (size_t) n, 0);
  }
  st->recent_has_trace.insert (st->recent_has_trace.end (), (size_t) n,
      cmn_offsets && cmn_learned ? 1 : 0);
  const size_t keep = (size_t) (kDropOverlapFrames * dim);
  if (st->recent.size () > keep) {
    const size_t drop = st->recent.size () - keep;
    st->recent.erase (st->recent.begin (), st->recent.begin () + drop);
    st->recent_trace.offsets.erase (st->recent_trace.offsets.begin (),
        st->recent_trace.offsets.begin () + drop);
    st->recent_trace.learned.erase (st->recent_trace.learned.begin (),
        st->recent_trace.learned.begin () + drop / dim);
    st->recent_has_trace.erase (st->recent_has_trace.begin (),
        st->recent_has_trace.begin () + drop / dim);
  }
}

/* Drops the utterance in progress without a result (it held no word, or
 * the detector heard no speech in it, see gs::decide_endpoint); the next
 * one starts with its last `keep` frames (at most kDropOverlapFrames),
 * decoded again. The index stays, as no result
 * was posted. */
static void
drop_utterance (GstGpuDecoder * self, StreamState * st, gint64 keep)
{
  const gint dim = st->recent_dim;
  const gint64 overlap = dim > 0 ? std::min < gint64 > ({st->utt_frames,
      (gint64) st->recent.size () / dim, keep}) : 0;
  const GstClockTime start = frame_time (self, st, st->utt_frames - overlap);
  GST_DEBUG_OBJECT (self, "dropping %" G_GINT64_FORMAT " frames without a "
      "word or without speech, up to %" GST_TIME_FORMAT,
      st->utt_frames - overlap,
      GST_TIME_ARGS (start));
  push_gap_until (self, st, start);
  st->decoder->reset ();
  const gint64 next_tick = st->next_tick - st->utt_frames + overlap;
  clear_utterance (st);
  st->utt_started = TRUE;
  st->utt_pts = start;
  if (overlap > 0) {
    const size_t from = st->recent.size () - (size_t) (overlap * dim);
    const gboolean traced =
        std::all_of (st->recent_has_trace.end () - overlap,
        st->recent_has_trace.end (),[](guint8 h) {
          return h != 0;
        });
    st->decoder->push_features (st->recent.data () + from, overlap,
        traced ? st->recent_trace.offsets.data () + from : NULL,
        traced ? st->recent_trace.learned.data () + from / dim : NULL);
  }
  st->utt_frames = overlap;
  /* Ticks keep their spacing in stream time across the drop. */
  st->next_tick = std::max < gint64 > (overlap + 1, next_tick);
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                */

static GstFlowReturn
decode_frames (GstGpuDecoder * self, StreamState * st, const float *frames,
    gint64 n, gint dim, const GpuspeechCmnMeta * cmn)
{
  gint64 done = 0;
  while (done < n) {
    const gint64 k = std::min (n - done, st->next_tick - st->utt_frames);
    const float *offsets = cmn ? cmn->offsets + done * dim : NULL;
    const guint8 *learned = cmn ? cmn->learned + done : NULL;
    st->decoder->push_features (frames + done * dim, k, offsets, learned);
    remember_frames (st, frames + done * dim, k, dim, offsets, learned);
    st->utt_frames += k;
    done += k;
    if (st->utt_frames == st->next_tick) {
      st->next_tick += st->tick_frames;
      gs::EndpointDecision endpoint = gs::EndpointDecision::kNone;
      GstFlowReturn ret = analyse (self, st, &endpoint);
      if (ret == GST_FLOW_OK && endpoint == gs::EndpointDecision::kFinal)
        ret = end_utterance (self, st, "silence", TRUE);
      else if (ret == GST_FLOW_OK && endpoint == gs::EndpointDecision::kDrop)
        /* Silence by the detector's word keeps less: its onset comes
         * confirmed within a few frames. */
        drop_utterance (self, st, vad_silent_throughout (st) ?
            gs::kVadDropOverlapFrames : kDropOverlapFrames);
      if (ret != GST_FLOW_OK)
        return ret;
    }
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_gpu_decoder_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  GstGpuDecoder *self = GST_GPU_DECODER (parent);
  StreamState *st = self->stream;
  (void) pad;

  if (!st || !self->recognizer || !st->caps_ok) {
    gst_buffer_unref (buffer);
    /* Once: upstream may go on pushing (see refused_caps). */
    if (!st || !st->unnegotiated_reported)
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
          ("received features before accepted caps"));
    if (st)
      st->unnegotiated_reported = TRUE;
    return GST_FLOW_NOT_NEGOTIATED;
  }
  const gint dim = self->recognizer->feature_dim ();
  GstMapInfo map;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("could not map the input buffer"));
    return GST_FLOW_ERROR;
  }
  const gsize frame_bytes = sizeof (float) * (gsize) dim;
  if (map.size % frame_bytes != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("a feature buffer of %" G_GSIZE_FORMAT " bytes is not a whole "
            "number of %d-float frames", map.size, dim), (NULL));
    gst_buffer_unmap (buffer, &map);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  const gint64 n = (gint64) (map.size / frame_bytes);
  /* Live CMN's trace, when upstream gave one for these very frames (read
   * in place: the buffer outlives decode_frames()). */
  const GpuspeechCmnMeta *cmn = gpuspeech_buffer_get_cmn_meta (buffer);
  if (cmn && ((gint64) cmn->frames != n || (gint) cmn->dim != dim))
    cmn = NULL;
  /* Copy (the data may be unaligned) and keep out NaN/Inf, which would
   * silently empty the search. */
  st->scratch.resize ((size_t) n * dim);
  memcpy (st->scratch.data (), map.data, map.size);
  gst_buffer_unmap (buffer, &map);
  guint64 nonfinite = 0;
  for (float &v:st->scratch)
    if (!std::isfinite (v)) {
      v = 0.0f;
      ++nonfinite;
    }
  if (nonfinite > 0 && !st->nonfinite_warned) {
    st->nonfinite_warned = TRUE;
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("the features contain NaN or infinite values; gpudecoder replaces "
            "them by 0 (warned once per stream)"), (NULL));
  }

  GstFlowReturn ret = GST_FLOW_OK;
  try {
    if (GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DISCONT)
        && st->utt_frames > 0)
      ret = end_utterance (self, st, "discont", FALSE);
    if (ret == GST_FLOW_OK && !st->utt_started) {
      /* The utterance's clock: this buffer's PTS, else where the previous
       * input ended, else the segment start. Later frames count from it. */
      if (GST_BUFFER_PTS_IS_VALID (buffer))
        st->utt_pts = GST_BUFFER_PTS (buffer);
      else if (GST_CLOCK_TIME_IS_VALID (st->last_end))
        st->utt_pts = st->last_end;
      else
        st->utt_pts = GST_CLOCK_TIME_IS_VALID (st->segment.start) ?
            st->segment.start : 0;
      st->utt_started = TRUE;
    }
    if (ret == GST_FLOW_OK)
      ret = decode_frames (self, st, st->scratch.data (), n, dim, cmn);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("recognition failed: %s", e.what ()), (NULL));
    ret = GST_FLOW_ERROR;
  }
  if (st->utt_started)
    st->last_end = frame_time (self, st, st->utt_frames);
  gst_buffer_unref (buffer);
  return ret;
}

/* Ends the utterance in an event handler; FALSE after posting an error. */
static gboolean
end_utterance_for_event (GstGpuDecoder * self, const char *reason)
{
  StreamState *st = self->stream;
  if (!st || !self->recognizer)
    return TRUE;
  try {
    end_utterance (self, st, reason, FALSE);
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("recognition failed: %s", e.what ()), (NULL));
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_gpu_decoder_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstGpuDecoder *self = GST_GPU_DECODER (parent);
  StreamState *st = self->stream;

  GST_LOG_OBJECT (self, "sink event %" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gst_event_parse_caps (event, &caps);
      const gboolean ok = gst_gpu_decoder_set_sink_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_SEGMENT:{
      if (!st)
        break;
      if (!end_utterance_for_event (self, "segment")) {
        gst_event_unref (event);
        return FALSE;
      }
      GstSegment seg;
      gst_event_copy_segment (event, &seg);
      if (seg.format != GST_FORMAT_TIME) {
        GST_DEBUG_OBJECT (self, "replacing a %s segment by an open TIME one",
            gst_format_get_name (seg.format));
        gst_segment_init (&seg, GST_FORMAT_TIME);
        GstEvent *out = gst_event_new_segment (&seg);
        gst_event_set_seqnum (out, gst_event_get_seqnum (event));
        gst_event_unref (event);
        event = out;
      }
      st->segment = seg;
      /* After end_utterance_for_event(): the alignment of the utterance it
       * ended names the segment of its frames, the previous one. */
      st->segment_seqnum = gst_event_get_seqnum (event);
      st->last_end = GST_CLOCK_TIME_NONE;
      st->out_pos = GST_CLOCK_TIME_NONE;
      break;
    }
    case GST_EVENT_CUSTOM_DOWNSTREAM:{
      gboolean speech;
      GstClockTime silence_start;
      if (!gpuspeech_vad_event_parse (event, &speech, &silence_start))
        break;
      /* Ours alone: read here, not passed on (the src pad carries text). */
      if (st && st->vad_endpointing) {
        st->vad_silence_start = speech ? GST_CLOCK_TIME_NONE : silence_start;
        st->vad_heard = TRUE;
      }
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_GAP:{
      if (!st)
        break;
      GstClockTime ts, dur;
      gst_event_parse_gap (event, &ts, &dur);
      gst_event_unref (event);
      if (!end_utterance_for_event (self, "gap"))
        return FALSE;
      /* Our own gap up to the end of upstream's, after any text. */
      if (GST_CLOCK_TIME_IS_VALID (ts))
        push_gap_until (self, st, GST_CLOCK_TIME_IS_VALID (dur) ? ts + dur :
            ts);
      return TRUE;
    }
    case GST_EVENT_EOS:
      if (st) {
        end_utterance_for_event (self, "eos");
        if (st->format == OutputFormat::kWebvtt && !st->vtt_header_sent
            && st->caps_ok) {
          /* An empty but valid WebVTT file. */
          st->vtt_header_sent = TRUE;
          push_text (self, st, gs::webvtt_header (), st->segment.start, 0);
        }
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      if (st && self->recognizer) {
        /* A flushing seek: the utterance in progress is dropped. */
        st->decoder->reset ();
        clear_utterance (st);
        st->last_end = GST_CLOCK_TIME_NONE;
        st->out_pos = GST_CLOCK_TIME_NONE;
        st->vad_silence_start = GST_CLOCK_TIME_NONE;
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
gst_gpu_decoder_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpuDecoder *self = GST_GPU_DECODER (parent);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *filter;
      gst_query_parse_caps (query, &filter);
      GstCaps *caps = model_sink_caps (self);
      if (!caps)
        caps = gst_pad_get_pad_template_caps (pad);
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
      /* Any fixed feature caps, so that the CAPS event reaches
       * set_sink_caps, which explains a mismatch instead of failing
       * silently. */
      GstCaps *caps;
      gst_query_parse_accept_caps (query, &caps);
      const GstStructure *s = gst_caps_is_fixed (caps) ?
          gst_caps_get_structure (caps, 0) : NULL;
      gst_query_set_accept_caps_result (query, s != NULL
          && gst_structure_has_name (s, GPUSPEECH_FEATURES_MEDIA_TYPE));
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      return FALSE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_gpu_decoder_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpuDecoder *self = GST_GPU_DECODER (parent);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *filter;
      gst_query_parse_caps (query, &filter);
      GstCaps *caps = gst_pad_get_current_caps (pad);
      if (!caps) {
        GST_OBJECT_LOCK (self);
        const OutputFormat f = self->settings->output_format;
        GST_OBJECT_UNLOCK (self);
        if (f == OutputFormat::kText)
          caps = gst_caps_new_simple ("text/x-raw", "format", G_TYPE_STRING,
              "utf8", NULL);
        else if (f != OutputFormat::kAuto)
          caps = gst_caps_new_empty_simple (format_media_type (f));
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
      gst_query_set_latency (query, live, min + ours, GST_CLOCK_TIME_NONE);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* State changes                                                            */

static gboolean
load_model (GstGpuDecoder * self)
{
  GST_OBJECT_LOCK (self);
  const Settings settings = *self->settings;
  GST_OBJECT_UNLOCK (self);

  gs::RecognizerConfig config;
  try {
    config = build_config (settings);
  } catch (const ConfigError & e) {
    if (e.not_found)
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", e.what ()),
          (NULL));
    else
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", e.what ()), (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "loading %s, %s, %s %s (the first compilation of a "
      "large language model's graph takes minutes)", config.model_dir.c_str (),
      config.dictionary.c_str (), gs::to_string (config.grammar_kind),
      config.grammar.c_str ());
  /* Graph compilation can take minutes: its stages go to the debug log
   * (GST_DEBUG=gpudecoder:4) as they finish. */
  config.graph.progress =[self](const std::string & line) {
    GST_INFO_OBJECT (self, "graph compiler: %s", line.c_str ());
  };
  const gint64 t0 = g_get_monotonic_time ();
  std::string log;
  try {
    self->recognizer = new gs::Recognizer (config, &log);
    gs::FeatureOptions *features =
        new gs::FeatureOptions (self->recognizer->feature_options ());
    GST_OBJECT_LOCK (self);
    self->model_features = features;
    GST_OBJECT_UNLOCK (self);
  } catch (const std::exception & e) {
    free_model (self);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("cannot load the recognition model: %s", e.what ()),
        ("hmm=%s dict=%s %s=%s backend=%s", config.model_dir.c_str (),
            config.dictionary.c_str (), gs::to_string (config.grammar_kind),
            config.grammar.c_str (), config.scoring_backend.c_str ()));
    return FALSE;
  }
  /* lattice-lw auto: the lattice pass where the decoder adapts, if the LM
   * is rescored at word ends (a large LM pruned for the graph, as the
   * default en-us one; a small one compiled whole leaves the pass no full
   * LM), as gpuspeech-transcribe's default. The stream is made again on
   * the same resources. */
  if (settings.lattice_lw < 0.0 && adapts (settings, config)
      && self->recognizer->resources ()->rescores ()) {
    config.search.lattice.language_weight = gs::kDictationLatticeWeight;
    try {
      gs::Recognizer *again =
          new gs::Recognizer (self->recognizer->resources (), config, &log);
      delete self->recognizer;
      self->recognizer = again;
    } catch (const std::exception & e) {
      free_model (self);
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("cannot load the recognition model: %s", e.what ()), (NULL));
      return FALSE;
    }
  }
  const double seconds = (g_get_monotonic_time () - t0) / 1e6;
  GST_INFO_OBJECT (self, "loaded in %.2f s:\n%s", seconds, log.c_str ());
  self->sample_rate = (gint) self->model_features->frame.sample_rate;
  self->frame_shift_samples =
      self->model_features->frame.frame_shift_samples ();
  self->num_senones = self->recognizer->acoustic_model ().mdef ().num_senones ();
  self->sends_alignments = settings.send_alignments;
  self->adapts = adapts (settings, config);
  if (!self->adapts && !settings.adapt_prior.empty ())
    GST_WARNING_OBJECT (self, "adapt-prior %s not used: the decoder does not "
        "adapt (adapt=false, or a grammar or keyphrases)",
        settings.adapt_prior.c_str ());
  if (self->adapts && !settings.adapt_prior.empty ()) {
    try {
      require_path (settings.adapt_prior, "adapt-prior", false);
      bool shared = false;
      self->adapt_prior = new std::shared_ptr < const gs::FmllrStats >
          (gs::acquire_prior_stats (settings.adapt_prior,
              self->recognizer->feature_dim (), &shared));
      GST_INFO_OBJECT (self, "adapt-prior from %s%s",
          settings.adapt_prior.c_str (),
          shared ? " (shared with the decoders already using it)" : "");
      if (!((*self->adapt_prior)->beta > 0.0))
        throw gs::FmllrFormatError (settings.adapt_prior +
            ": statistics with no frames");
    } catch (const ConfigError & e) {
      free_model (self);
      if (e.not_found)
        GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", e.what ()),
            (NULL));
      else
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", e.what ()),
            (NULL));
      return FALSE;
    } catch (const std::exception & e) {
      free_model (self);
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("adapt-prior: %s", e.what ()), (NULL));
      return FALSE;
    }
  }
  /* "none" turns the library off as "" does (a shell eats the quotes of
   * adapt-channels="" on a gst-launch line). */
  const std::string channels_dir =
      settings.adapt_channels == "none" ? std::string () : settings.adapt_channels;
  /* The default library is for the default model: with another model,
   * or with adapt-prior, it steps aside; one the user names must load. */
  const bool default_channels = !channels_dir.empty () &&
      channels_dir == default_channel_priors ();
  if (!self->adapts && !channels_dir.empty () && !default_channels)
    GST_WARNING_OBJECT (self, "adapt-channels %s not used: the decoder does "
        "not adapt (adapt=false, or a grammar or keyphrases)",
        channels_dir.c_str ());
  if (self->adapts && !channels_dir.empty () && self->adapt_prior) {
    if (!default_channels) {
      free_model (self);
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("adapt-prior and adapt-channels are both set: give the channel's "
              "prior, or a library to choose one from, not both"), (NULL));
      return FALSE;
    }
    GST_INFO_OBJECT (self, "adapt-prior given: the default channel priors "
        "are not used");
  } else if (self->adapts && !channels_dir.empty ()) {
    try {
      /* One copy per process, as the model is: a decoder per stream
       * shares the library its neighbours loaded. */
      bool shared = false;
      self->adapt_channels = new std::shared_ptr < const gs::ChannelPriorSet >
          (gs::acquire_channel_priors (channels_dir,
              self->recognizer->feature_dim (),
              config.model_dir + "/means", &shared));
      std::string names;
      for (const gs::ChannelPrior & c:(*self->adapt_channels)->channels)
        names += (names.empty ()? "" : ", ") + c.name;
      GST_INFO_OBJECT (self, "channel priors from %s: %s%s",
          channels_dir.c_str (), names.c_str (),
          shared ? " (shared with the decoders already using them)" : "");
    } catch (const gs::ChannelPriorModelMismatch & e) {
      if (!default_channels) {
        free_model (self);
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
            ("adapt-channels: %s", e.what ()), (NULL));
        return FALSE;
      }
      /* Another model than the one the default library was made for. */
      GST_INFO_OBJECT (self, "default channel priors not used: %s", e.what ());
    } catch (const std::exception & e) {
      if (!default_channels) {
        free_model (self);
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
            ("adapt-channels: %s", e.what ()), (NULL));
        return FALSE;
      }
      /* A damaged installation, or a model whose means cannot be read:
       * recognition goes on without the default library. */
      GST_WARNING_OBJECT (self, "default channel priors not used: %s",
          e.what ());
    }
  }
  gs::Backend & b = self->recognizer->scoring_backend ();
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self),
          gst_structure_new ("gpudecoder-model",
              "hmm", G_TYPE_STRING, config.model_dir.c_str (),
              "dict", G_TYPE_STRING, config.dictionary.c_str (),
              "grammar", G_TYPE_STRING, config.grammar.c_str (),
              "grammar-kind", G_TYPE_STRING,
              gs::to_string (config.grammar_kind),
              "graph-states", G_TYPE_UINT64,
              (guint64) self->recognizer->graph ().num_states (),
              "graph-arcs", G_TYPE_UINT64,
              (guint64) self->recognizer->graph ().num_arcs (),
              "backend", G_TYPE_STRING, b.name (),
              "device", G_TYPE_STRING, b.device_name ().c_str (),
              "search", G_TYPE_STRING, self->recognizer->search_backend (),
              "device-id", G_TYPE_INT, self->recognizer->config ().device_id,
              "batched-search", G_TYPE_BOOLEAN,
              (gboolean) (self->recognizer->config ().batched_search &&
                  std::string (self->recognizer->search_backend ()) == "cuda"),
              "shared", G_TYPE_BOOLEAN,
              (gboolean) self->recognizer->resources_were_shared (),
              "load-seconds", G_TYPE_DOUBLE, seconds, NULL)));
  return TRUE;
}

static gboolean
start_stream (GstGpuDecoder * self)
{
  GST_OBJECT_LOCK (self);
  const Settings s = *self->settings;
  GST_OBJECT_UNLOCK (self);

  std::unique_ptr < StreamState > st (new StreamState ());
  const guint interval_ms = s.partial_interval > 0 ? s.partial_interval :
      DEFAULT_PARTIAL_INTERVAL;
  const double frame_ms = 1000.0 * self->frame_shift_samples /
      self->sample_rate;
  st->tick_frames = std::max < gint64 > (1,
      (gint64) std::llround (interval_ms / frame_ms));
  st->endpoint_frames = s.endpoint_silence == 0 ? 0 :
      std::max < gint64 > (1,
      (gint64) std::llround (s.endpoint_silence / frame_ms));
  st->post_partials = s.partial_interval > 0;
  st->vad_endpointing = s.vad_endpointing;
  st->nbest = s.nbest;
  /* As loaded: features are kept only if the property was set then. */
  st->send_alignments = self->sends_alignments;
  try {
    gs::AdaptiveRedecoderOptions adaptation;
    adaptation.min_redecode_gain = s.redecode_min_gain;
    adaptation.own_utterance_cmn = s.utterance_cmn;
    adaptation.young_below_frames = s.adapt_young_frames;
    adaptation.young_update = s.adapt_young_update;
    adaptation.young_vtln = s.adapt_young_vtln;
    adaptation.estimation.update = s.adapt_update;
    adaptation.prior_fade_frames = s.adapt_prior_fade_frames;
    if (self->adapt_prior) {
      adaptation.prior = *self->adapt_prior;
      adaptation.prior_frames = s.adapt_prior_frames;
    }
    if (self->adapt_channels) {
      adaptation.channel_priors = *self->adapt_channels;
      adaptation.channel_min_gain = s.adapt_channel_min_gain;
      adaptation.prior_frames = s.adapt_prior_frames;
    }
    st->decoder.reset (new gs::UtteranceDecoder (*self->recognizer,
            self->adapts, adaptation));
  } catch (const std::exception & e) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("cannot set up speaker adaptation: %s", e.what ()), (NULL));
    return FALSE;
  }
  st->requested_format = s.output_format;
  st->cue_options.max_chars = s.cue_max_chars;
  st->cue_options.max_duration_ns = (int64_t) s.cue_max_duration * GST_MSECOND;
  /* A second pass decides the final words when the decoder adapts or runs
   * the lattice pass (lattice-lw, set or auto, as loaded). */
  const gboolean second_pass = self->adapts
      || self->recognizer->config ().search.lattice.language_weight > 0.0;
  st->cues_at_end = s.cue_timing == CueTiming::kFinal
      || (s.cue_timing == CueTiming::kAuto && second_pass);
  clear_utterance (st.get ());
  self->latency_ns = (gint64) interval_ms *GST_MSECOND;
  self->recognizer->reset ();
  self->stream = st.release ();
  return TRUE;
}

static GstStateChangeReturn
gst_gpu_decoder_change_state (GstElement * element, GstStateChange transition)
{
  GstGpuDecoder *self = GST_GPU_DECODER (element);
  switch (transition) {
    case GST_STATE_CHANGE_NULL_TO_READY:
      if (!load_model (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!start_stream (self))
        return GST_STATE_CHANGE_FAILURE;
      break;
    default:
      break;
  }
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
      delete self->stream;
      self->stream = NULL;
    } else if (transition == GST_STATE_CHANGE_NULL_TO_READY) {
      free_model (self);
    }
    return ret;
  }
  switch (transition) {
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      delete self->stream;
      self->stream = NULL;
      break;
    case GST_STATE_CHANGE_READY_TO_NULL:
      free_model (self);
      break;
    default:
      break;
  }
  return ret;
}
