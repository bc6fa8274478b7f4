/* gpufeatures: speech feature extraction (MFCC, fbank, PLP, TRAPS) on the
 * GPU or CPU, as a GStreamer element. See gstgpufeatures.cpp for the
 * element documentation and docs/feature-caps.md for the output caps. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_FEATURES (gst_gpu_features_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuFeatures, gst_gpu_features, GST, GPU_FEATURES,
    GstElement)

/* The media type of the feature stream on the src pad. */
#define GPUSPEECH_FEATURES_MEDIA_TYPE "audio/x-gpuspeech-features"

GST_ELEMENT_REGISTER_DECLARE (gpufeatures);

G_END_DECLS
