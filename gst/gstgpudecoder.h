/* gpudecoder: speech recognition (the gpuspeech Recognizer) as a GStreamer
 * element: feature frames in, hypotheses on the bus and timed text or
 * subtitles out. See gstgpudecoder.cpp for the element documentation and
 * docs/gpudecoder.md for a user's guide. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_DECODER (gst_gpu_decoder_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuDecoder, gst_gpu_decoder, GST, GPU_DECODER,
    GstElement)

/* Structure name of the hypothesis messages on the bus. */
#define GPUSPEECH_DECODER_MESSAGE "gpudecoder"

GST_ELEMENT_REGISTER_DECLARE (gpudecoder);

G_END_DECLS
