/* The gpuspeech GStreamer plugin: registers every element of the project.
 * Elements live in their own files (gstgpufeatures.cpp,
 * gstgpudecoder.cpp, gstgpudtw.cpp, gstgpufmllr.cpp); this file only
 * lists them. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstgpudecoder.h"
#include "gstgpudtw.h"
#include "gstgpufeatures.h"
#include "gstgpufmllr.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "0.0.0"
#endif
/* GST_PLUGIN_DEFINE refers to PACKAGE (the gettext domain / package). */
#ifndef PACKAGE
#define PACKAGE "gpuspeech"
#endif

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ok = FALSE;
  ok |= GST_ELEMENT_REGISTER (gpufeatures, plugin);
  ok |= GST_ELEMENT_REGISTER (gpudecoder, plugin);
  ok |= GST_ELEMENT_REGISTER (gpudtw, plugin);
  ok |= GST_ELEMENT_REGISTER (gpufmllr, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gpuspeech,
    "Speech features, recognition and template matching on the GPU (CUDA, OpenCL) or the CPU",
    plugin_init, GPUSPEECH_VERSION, "LGPL", "gpuspeech", "gpuspeech")
