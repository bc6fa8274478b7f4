/* gpufmllr: online speaker adaptation (feature-space MLLR) of a feature
 * stream, between gpufeatures and gpudecoder. See gstgpufmllr.cpp for the
 * element documentation and docs/fmllr.md for the scheme. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_GPU_FMLLR (gst_gpu_fmllr_get_type ())
G_DECLARE_FINAL_TYPE (GstGpuFmllr, gst_gpu_fmllr, GST, GPU_FMLLR,
    GstBaseTransform)

/* Structure name of the element message posted at every estimation. */
#define GPUSPEECH_FMLLR_MESSAGE "gpufmllr"

GST_ELEMENT_REGISTER_DECLARE (gpufmllr);

G_END_DECLS
