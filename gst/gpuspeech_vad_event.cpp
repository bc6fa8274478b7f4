/* See gpuspeech_vad_event.h. */
#include "gpuspeech_vad_event.h"

GstEvent *
gpuspeech_vad_event_new (gboolean speech, GstClockTime silence_start)
{
  GstStructure *s = gst_structure_new (GPUSPEECH_VAD_EVENT,
      "speech", G_TYPE_BOOLEAN, speech, NULL);
  if (!speech)
    gst_structure_set (s, "silence-start", G_TYPE_UINT64,
        (guint64) silence_start, NULL);
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM, s);
}

gboolean
gpuspeech_vad_event_parse (GstEvent * event, gboolean * speech,
    GstClockTime * silence_start)
{
  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM)
    return FALSE;
  const GstStructure *s = gst_event_get_structure (event);
  if (!s || !gst_structure_has_name (s, GPUSPEECH_VAD_EVENT))
    return FALSE;
  gboolean sp = TRUE;
  if (!gst_structure_get_boolean (s, "speech", &sp))
    return FALSE;
  guint64 start = GST_CLOCK_TIME_NONE;
  if (!sp && !gst_structure_get_uint64 (s, "silence-start", &start))
    start = GST_CLOCK_TIME_NONE;
  *speech = sp;
  *silence_start = sp ? GST_CLOCK_TIME_NONE : (GstClockTime) start;
  return TRUE;
}
