/* The "gpuspeech-alignment" upstream event; the field rules are in
 * gpuspeech_alignment_event.h. */
#include "gpuspeech_alignment_event.h"

#include <cstring>

/* The frames' times: a frame duration a speech front end can have, and
 * the end of the last frame, timestamp + num_frames x frame_duration,
 * within GstClockTimeDiff's range (so also a valid GstClockTime): consumers
 * compute frame times in signed 64 bits. Written as a division so that the
 * check itself cannot overflow. */
static gboolean
times_in_range (guint64 timestamp, guint64 frame_duration, gsize num_frames)
{
  if (frame_duration == 0
      || frame_duration > GPUSPEECH_ALIGNMENT_MAX_FRAME_DURATION)
    return FALSE;
  if (timestamp > (guint64) G_MAXINT64)
    return FALSE;
  return (guint64) num_frames <=
      ((guint64) G_MAXINT64 - timestamp) / frame_duration;
}

/* Every value in [-1, num_senones): a consumer indexes its model with them. */
static gboolean
senones_in_range (const gint32 * senones, gsize num_frames, gint num_senones)
{
  for (gsize i = 0; i < num_frames; ++i)
    if (senones[i] < -1 || senones[i] >= num_senones)
      return FALSE;
  return TRUE;
}

GstEvent *
gpuspeech_alignment_event_new (GstClockTime timestamp, guint64 frame_duration,
    const gint32 * senones, gsize num_frames, gint num_senones,
    const gchar * model, guint utterance, guint32 segment_seqnum)
{
  g_return_val_if_fail (senones != NULL && num_frames > 0, NULL);
  g_return_val_if_fail (times_in_range (timestamp, frame_duration,
          num_frames), NULL);
  g_return_val_if_fail (num_senones > 0, NULL);
  g_return_val_if_fail (model != NULL, NULL);
  g_return_val_if_fail (senones_in_range (senones, num_frames, num_senones),
      NULL);

  GBytes *bytes = g_bytes_new (senones, num_frames * sizeof (gint32));
  GstStructure *s = gst_structure_new (GPUSPEECH_ALIGNMENT_EVENT,
      "timestamp", G_TYPE_UINT64, (guint64) timestamp,
      "frame-duration", G_TYPE_UINT64, frame_duration,
      "senones", G_TYPE_BYTES, bytes,
      "num-senones", G_TYPE_INT, num_senones,
      "model", G_TYPE_STRING, model,
      "utterance", G_TYPE_UINT, utterance, NULL);
  g_bytes_unref (bytes);        /* the structure holds its own reference */
  /* Unknown is said by leaving the field out, as older senders did. */
  if (segment_seqnum != GST_SEQNUM_INVALID)
    gst_structure_set (s, "segment-seqnum", G_TYPE_UINT, (guint)
        segment_seqnum, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM, s);
}

/* The field `name` if it exists and holds `type`, else NULL. */
static const GValue *
typed_field (const GstStructure * s, const char *name, GType type)
{
  const GValue *v = gst_structure_get_value (s, name);
  return v && G_VALUE_HOLDS (v, type) ? v : NULL;
}

gboolean
gpuspeech_alignment_event_parse (GstEvent * event, GstClockTime * timestamp,
    guint64 * frame_duration, GBytes ** senones, gint * num_senones,
    const gchar ** model, guint * utterance, guint32 * segment_seqnum)
{
  if (!event || GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM)
    return FALSE;
  const GstStructure *s = gst_event_get_structure (event);
  if (!s || !gst_structure_has_name (s, GPUSPEECH_ALIGNMENT_EVENT))
    return FALSE;

  const GValue *v_ts = typed_field (s, "timestamp", G_TYPE_UINT64);
  const GValue *v_dur = typed_field (s, "frame-duration", G_TYPE_UINT64);
  const GValue *v_sen = typed_field (s, "senones", G_TYPE_BYTES);
  const GValue *v_num = typed_field (s, "num-senones", G_TYPE_INT);
  const GValue *v_model = typed_field (s, "model", G_TYPE_STRING);
  const GValue *v_utt = typed_field (s, "utterance", G_TYPE_UINT);
  if (!v_ts || !v_dur || !v_sen || !v_num || !v_model || !v_utt)
    return FALSE;
  /* Optional (older senders lack it), but of its type when present. */
  guint32 seqnum = GST_SEQNUM_INVALID;
  if (gst_structure_has_field (s, "segment-seqnum")) {
    const GValue *v_seq = typed_field (s, "segment-seqnum", G_TYPE_UINT);
    if (!v_seq)
      return FALSE;
    seqnum = g_value_get_uint (v_seq);
  }

  const guint64 ts = g_value_get_uint64 (v_ts);
  const guint64 dur = g_value_get_uint64 (v_dur);
  GBytes *bytes = (GBytes *) g_value_get_boxed (v_sen);
  const gint num = g_value_get_int (v_num);
  const gchar *m = g_value_get_string (v_model);
  if (!bytes || num <= 0 || !m)
    return FALSE;
  gsize size = 0;
  const void *data = g_bytes_get_data (bytes, &size);
  if (size == 0 || size % sizeof (gint32) != 0)
    return FALSE;
  const gsize n = size / sizeof (gint32);
  if (!times_in_range (ts, dur, n))
    return FALSE;
  /* The data of a GBytes need not be aligned for gint32: check a copy. */
  for (gsize i = 0; i < n; ++i) {
    gint32 value;
    memcpy (&value, (const guint8 *) data + i * sizeof (gint32),
        sizeof value);
    if (value < -1 || value >= num)
      return FALSE;
  }

  if (timestamp)
    *timestamp = ts;
  if (frame_duration)
    *frame_duration = dur;
  if (senones)
    *senones = g_bytes_ref (bytes);
  if (num_senones)
    *num_senones = num;
  if (model)
    *model = m;
  if (utterance)
    *utterance = g_value_get_uint (v_utt);
  if (segment_seqnum)
    *segment_seqnum = seqnum;
  return TRUE;
}
