/* The `backend` property shared by the elements that run on a backend
 * (gpufeatures, gpudecoder, gpufmllr): one GEnum type, so that an
 * application sets every element the same way and gst-inspect lists the
 * same choices. Each element's property blurb says what runs where. */
#pragma once

#include <gst/gst.h>

namespace gpuspeech {

enum class BackendChoice { kAuto = 0, kCuda = 1, kOpenCL = 2, kCpu = 3 };

/* "GstGpuSpeechBackend": auto, cuda, opencl, cpu. */
GType backend_choice_get_type (void);
#define GPUSPEECH_TYPE_BACKEND_CHOICE (gpuspeech::backend_choice_get_type ())

/* The name common/backends/backend_registry.h opens: "auto", "cuda", "opencl",
 * "cpu". */
const char *backend_choice_name (BackendChoice choice);

}  // namespace gpuspeech
