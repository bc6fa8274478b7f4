/* The "gpuspeech-vad" downstream event: where gpufeatures' voice activity
 * detector says speech ended and began, so that gpudecoder can end an
 * utterance at a pause that its own search fills with words heard in the
 * noise (steady white noise at 20 dB SNR did that for the first hundred
 * seconds of a stream: docs/benchmarks.md, "Endpoints from the voice
 * activity detector").
 *
 * gpufeatures sends it when its detector runs (the front end gpudecoder
 * configures: live CMN learning from speech, with noise removal), each
 * time the detector's state changes, before the buffer of frames whose
 * computation saw the change (the detector runs on the spectral frames,
 * a few frames ahead of the frames with deltas; so a decoder learns that
 * speech began before it decodes the speech's first frames, whatever the
 * buffer size). The detector is Sphinx's (-vad_threshold,
 * -vad_prespeech, -vad_postspeech, -vad_startspeech): speech ends after
 * vad_postspeech non-speech frames in a row, so a "speech ended" event
 * comes that long after the silence it reports began.
 *
 * A GST_EVENT_CUSTOM_DOWNSTREAM (serialized with the buffers) whose
 * structure is named GPUSPEECH_VAD_EVENT ("gpuspeech-vad"), fields:
 * - "speech" (gboolean): TRUE when speech began, FALSE when it ended.
 * - "silence-start" (guint64, a GstClockTime; when "speech" is FALSE): the
 *   time of the first frame of the silence, on the clock of the feature
 *   buffers' PTS. Also sent, with the utterance's first frame, when
 *   gpufeatures starts an utterance (the detector starts in silence).
 * Elements in between forward unknown serialized events, so the event
 * reaches gpudecoder through gpufmllr and queues. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GPUSPEECH_VAD_EVENT "gpuspeech-vad"

/* A new event; `silence_start` is ignored when `speech` is TRUE. */
GstEvent *gpuspeech_vad_event_new (gboolean speech, GstClockTime silence_start);

/* TRUE when `event` is a gpuspeech-vad event; then sets `speech` and, when
 * it is FALSE, `silence_start` (GST_CLOCK_TIME_NONE when speech is TRUE or
 * the field is missing). */
gboolean gpuspeech_vad_event_parse (GstEvent * event, gboolean * speech,
    GstClockTime * silence_start);

G_END_DECLS
