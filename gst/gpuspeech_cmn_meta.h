/* GpuspeechCmnMeta: live CMN's trace on a buffer of feature frames, what
 * gpufeatures' live CMN subtracted from each frame (in every dim: the mean
 * in the static dims, the deltas of the means in the delta dims) and
 * whether it learnt from the frame (common/features/cmn_trace.h). With it
 * gpudecoder normalises an utterance again at its end with the mean of the
 * stream's speech so far, the utterance's included (adapt's second
 * decoding, the `utterance-cmn` property): for a stream's first utterance
 * its own mean, as the batch path normalises a file, so that its first
 * words, which live CMN normalised with the model's average rather than
 * the channel's mean, come out right.
 *
 * gpufeatures attaches it to every buffer when its CMN is live. It
 * describes the buffer's frames as gpufeatures made them: an element that
 * changes the values (gpufmllr) removes it; copies of the buffer keep it
 * (only whole-buffer copies). Its API is tagged
 * GPUSPEECH_CMN_META_TAG, so GstBaseTransform subclasses that copy into a
 * new buffer drop it by default. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GPUSPEECH_CMN_META_TAG "gpuspeech-feature-values"

typedef struct {
  GstMeta meta;
  guint frames;
  guint dim;
  gfloat *offsets;              /* frames x dim */
  guint8 *learned;              /* frames: 1 where live CMN learnt */
} GpuspeechCmnMeta;

GType gpuspeech_cmn_meta_api_get_type (void);
const GstMetaInfo *gpuspeech_cmn_meta_get_info (void);

#define GPUSPEECH_CMN_META_API_TYPE (gpuspeech_cmn_meta_api_get_type ())

/* Attaches a copy of `offsets` (frames x dim) and `learned` (frames);
 * NULL for frames or dim 0 or NULL data. */
GpuspeechCmnMeta *gpuspeech_buffer_add_cmn_meta (GstBuffer * buffer,
    guint frames, guint dim, const gfloat * offsets, const guint8 * learned);

/* The buffer's meta, or NULL. */
#define gpuspeech_buffer_get_cmn_meta(b) \
  ((GpuspeechCmnMeta *) gst_buffer_get_meta ((b), GPUSPEECH_CMN_META_API_TYPE))

G_END_DECLS
