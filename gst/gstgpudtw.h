/* gpudtw: isolated-word (command) recognition by DTW template matching as
 * a GStreamer element: audio in, one bus message per utterance the
 * endpointer finds, and the recognised label as timed text out. See
 * gstgpudtw.cpp for the element documentation and docs/dtw.md. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_DTW (gst_gpu_dtw_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuDtw, gst_gpu_dtw, GST, GPU_DTW, GstElement)

/* Structure name of the per-utterance messages on the bus. */
#define GPUSPEECH_DTW_MESSAGE "gpudtw"

GST_ELEMENT_REGISTER_DECLARE (gpudtw);

G_END_DECLS
