/* The "gpuspeech-alignment" upstream event: which acoustic-model senone
 * each feature frame was aligned to, for frames whose words are final.
 *
 * gpudecoder (property `send-alignments`, default TRUE) pushes it up its
 * sink pad, through every element in between (they forward unknown
 * upstream events), so that an element upstream that transforms the
 * features (gpufmllr: speaker adaptation, docs/fmllr.md) can learn from the
 * decoder's own result. Applications may catch it with a pad probe
 * (GST_PAD_PROBE_TYPE_EVENT_UPSTREAM) on any pad between gpufeatures and
 * gpudecoder, or send one of their own (e.g. from a reference transcript).
 *
 * The event is a GST_EVENT_CUSTOM_UPSTREAM whose structure is named
 * GPUSPEECH_ALIGNMENT_EVENT ("gpuspeech-alignment") with these fields, all
 * required but the last:
 *
 * - "timestamp" (guint64, a GstClockTime): the time of the first aligned
 *   frame, on the clock of the feature buffers' PTS as gpudecoder received
 *   them (buffer time, not converted to stream or running time). Frame i of
 *   the event is at timestamp + i x frame-duration, so it is the frame
 *   whose buffer PTS plus its index in that buffer x frame-duration equals
 *   that time. The end of the last frame, timestamp + n x frame-duration
 *   for n frames, is at most G_MAXINT64 (GstClockTimeDiff's range), so a
 *   consumer may compute frame times in signed 64 bits without overflow.
 * - "frame-duration" (guint64): nanoseconds from one frame to the next (10
 *   ms for Sphinx models: 160 samples at 16 kHz); in (0,
 *   GPUSPEECH_ALIGNMENT_MAX_FRAME_DURATION], one second: no speech front
 *   end has frames further apart, and a larger value is a broken sender.
 * - "senones" (GBytes): one gint32 per frame in host byte order: the
 *   senone (tied HMM state, numbered as in the model's mdef) the frame was
 *   aligned to, or -1 where the frame is not aligned (silence, fillers and
 *   gaps between words, or a word the aligner could not fit). Its size is a
 *   whole, non-zero number of gint32; every value is in [-1, num-senones).
 *   The data need not be aligned for gint32: copy it out (memcpy) rather
 *   than cast the pointer.
 * - "num-senones" (gint): the acoustic model's senone count (> 0), so that
 *   a consumer can check it scores with the same model.
 * - "model" (gchararray): the acoustic model's directory as gpudecoder
 *   loaded it (its `hmm` property, or the default model), for the same
 *   check and for messages.
 * - "utterance" (guint): gpudecoder's utterance counter, the `utterance`
 *   field of its bus messages. Frames of one utterance come in order, in
 *   events that do not overlap; the events of a later utterance start
 *   after them.
 * - "segment-seqnum" (guint, optional): the sequence number
 *   (gst_event_get_seqnum()) of the SEGMENT event that preceded the
 *   aligned frames on the sender's sink pad: which segment the timestamps
 *   belong to. Buffer times start again after a flushing seek or a new
 *   segment, so the same timestamp may name two different frames; an
 *   element that keeps frames by time (gpufmllr) compares it with the
 *   seqnum of the SEGMENT its own frames came in and ignores an alignment
 *   of another segment. Elements forward SEGMENT events keeping their
 *   seqnum, so both sides see the same number. Absent, or
 *   GST_SEQNUM_INVALID (0), it is unknown and the consumer matches by time
 *   alone, as events from senders older than this field are: it is
 *   optional so that they stay valid. gpudecoder always sets it once a
 *   SEGMENT has arrived.
 *
 * One event carries the frames of words that became final (a partial
 * result's stable words, or the rest of the words when the utterance ends),
 * so it arrives some hundreds of milliseconds after the frames themselves
 * passed: a consumer keeps what it needs of recent frames by PTS.
 *
 * gpuspeech_alignment_event_parse() is the one place that checks these
 * rules: a consumer may use what it returns without checking again.
 */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* The structure name of the event. */
#define GPUSPEECH_ALIGNMENT_EVENT "gpuspeech-alignment"

/* The largest "frame-duration" accepted: one second. */
#define GPUSPEECH_ALIGNMENT_MAX_FRAME_DURATION GST_SECOND

/**
 * gpuspeech_alignment_event_new:
 * @timestamp: time of senones[0] (buffer time of the feature frames)
 * @frame_duration: ns between frames, in (0,
 *   GPUSPEECH_ALIGNMENT_MAX_FRAME_DURATION]
 * @senones: (array length=num_frames): senone per frame, -1 = not aligned
 * @num_frames: number of frames, > 0; @timestamp + @num_frames x
 *   @frame_duration at most G_MAXINT64
 * @num_senones: the model's senone count, > 0; every senone < this
 * @model: the acoustic model directory (not NULL)
 * @utterance: the decoder's utterance counter
 * @segment_seqnum: seqnum of the SEGMENT event of the frames, or
 *   GST_SEQNUM_INVALID for unknown (the field is then left out)
 *
 * Returns: (transfer full): a new GST_EVENT_CUSTOM_UPSTREAM event, or NULL
 * (with a g_critical) for arguments that break the rules above.
 */
GstEvent *gpuspeech_alignment_event_new (GstClockTime timestamp,
    guint64 frame_duration, const gint32 * senones, gsize num_frames,
    gint num_senones, const gchar * model, guint utterance,
    guint32 segment_seqnum);

/**
 * gpuspeech_alignment_event_parse:
 * @event: any event
 * @timestamp: (out) (optional)
 * @frame_duration: (out) (optional)
 * @senones: (out) (optional) (transfer full): the frames' senones as
 *   gint32 in host byte order; g_bytes_unref() it
 * @num_senones: (out) (optional)
 * @model: (out) (optional) (transfer none): valid while @event is
 * @utterance: (out) (optional)
 * @segment_seqnum: (out) (optional): GST_SEQNUM_INVALID when the event
 *   does not say
 *
 * Returns: TRUE, filling the outputs given, if @event is a
 * gpuspeech-alignment event with every field present, of its type and
 * within the rules above; FALSE (outputs untouched) for any other event or
 * a malformed one.
 */
gboolean gpuspeech_alignment_event_parse (GstEvent * event,
    GstClockTime * timestamp, guint64 * frame_duration, GBytes ** senones,
    gint * num_senones, const gchar ** model, guint * utterance,
    guint32 * segment_seqnum);

G_END_DECLS
