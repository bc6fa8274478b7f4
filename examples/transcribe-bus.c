/* Speech to text from C: builds gpufeatures ! gpudecoder for an audio file
 * and reads the hypotheses from the bus (the `gpudecoder` element messages
 * documented in gst/gstgpudecoder.cpp).
 *
 *   cc -o transcribe-bus examples/transcribe-bus.c \
 *       $(pkg-config --cflags --libs gstreamer-1.0)
 *   GST_PLUGIN_PATH=build/gst ./transcribe-bus speech.wav [GRAMMAR.gram]
 *
 * With a JSGF grammar it decodes that; without, the installed en-us model
 * and language model (the first run compiles the graph: minutes, then
 * cached). Exit status 0 when at least one final result came. */
#include <gst/gst.h>
#include <stdio.h>

static void
print_result (const GstStructure * s)
{
  const gchar *hyp = gst_structure_get_string (s, "hypothesis");
  gboolean final = FALSE;
  guint stable = 0;
  gst_structure_get_boolean (s, "final", &final);
  gst_structure_get_uint (s, "stable-words", &stable);
  if (!final) {
    if (hyp && *hyp)
      printf ("partial (%u stable): %s\n", stable, hyp);
    return;
  }
  gdouble confidence = 0;
  gst_structure_get_double (s, "confidence", &confidence);
  printf ("final: %s  (confidence %.2f, %s)\n", hyp, confidence,
      gst_structure_get_string (s, "reason"));
  /* words: an array of "word" structures with stream times in ns. */
  const GValue *words = gst_structure_get_value (s, "words");
  for (guint i = 0; words && i < gst_value_array_get_size (words); ++i) {
    const GstStructure *w =
        gst_value_get_structure (gst_value_array_get_value (words, i));
    guint64 start = 0, end = 0;
    gst_structure_get_uint64 (w, "start", &start);
    gst_structure_get_uint64 (w, "end", &end);
    printf ("  %" GST_TIME_FORMAT " - %" GST_TIME_FORMAT "  %s\n",
        GST_TIME_ARGS (start), GST_TIME_ARGS (end),
        gst_structure_get_string (w, "word"));
  }
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  if (argc < 2 || argc > 3) {
    fprintf (stderr, "usage: %s AUDIO_FILE [JSGF_GRAMMAR]\n", argv[0]);
    return 2;
  }
  gchar *grammar = argc == 3 ? g_strdup_printf ("jsgf=\"%s\"", argv[2]) :
      g_strdup ("");
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! decodebin ! "
      "audioconvert ! audioresample ! gpufeatures ! gpudecoder %s ! fakesink",
      argv[1], grammar);
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  g_free (grammar);
  if (!pipeline) {
    fprintf (stderr, "cannot build the pipeline: %s\n", err->message);
    g_clear_error (&err);
    return 1;
  }

  GstBus *bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  int finals = 0, failed = 0;
  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_ELEMENT | GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT) {
      const GstStructure *s = gst_message_get_structure (m);
      if (gst_structure_has_name (s, "gpudecoder")) {
        gboolean final = FALSE;
        gst_structure_get_boolean (s, "final", &final);
        finals += final;
        print_result (s);
      }
      gst_message_unref (m);
      continue;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      gchar *debug = NULL;
      gst_message_parse_error (m, &err, &debug);
      fprintf (stderr, "error: %s\n  %s\n", err->message, debug ? debug : "");
      g_clear_error (&err);
      g_free (debug);
      failed = 1;
    }
    gst_message_unref (m);
    break;                      /* EOS or error */
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return failed || finals == 0;
}
