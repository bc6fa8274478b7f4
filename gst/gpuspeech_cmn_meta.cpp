#include "gpuspeech_cmn_meta.h"

#include <string.h>

GType
gpuspeech_cmn_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { GPUSPEECH_CMN_META_TAG, NULL };
  if (g_once_init_enter (&type)) {
    /* Another copy of this file (a test's, beside the plugin's) may have
     * registered it: the name is the identity. */
    GType t = g_type_from_name ("GpuspeechCmnMetaAPI");
    if (t == 0)
      t = gst_meta_api_type_register ("GpuspeechCmnMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
cmn_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  (void) params;
  (void) buffer;
  GpuspeechCmnMeta *m = (GpuspeechCmnMeta *) meta;
  m->frames = 0;
  m->dim = 0;
  m->offsets = NULL;
  m->learned = NULL;
  return TRUE;
}

static void
cmn_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  (void) buffer;
  GpuspeechCmnMeta *m = (GpuspeechCmnMeta *) meta;
  g_free (m->offsets);
  g_free (m->learned);
  m->offsets = NULL;
  m->learned = NULL;
}

static gboolean
cmn_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  (void) buffer;
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  /* A part of the buffer would need to know where its frames begin. */
  const GstMetaTransformCopy *copy = (const GstMetaTransformCopy *) data;
  if (copy->region)
    return FALSE;
  const GpuspeechCmnMeta *m = (const GpuspeechCmnMeta *) meta;
  return gpuspeech_buffer_add_cmn_meta (dest, m->frames, m->dim, m->offsets,
      m->learned) != NULL;
}

const GstMetaInfo *
gpuspeech_cmn_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter (&info)) {
    const GstMetaInfo *i = gst_meta_get_info ("GpuspeechCmnMeta");
    if (!i)
      i = gst_meta_register (GPUSPEECH_CMN_META_API_TYPE,
          "GpuspeechCmnMeta", sizeof (GpuspeechCmnMeta), cmn_meta_init,
          cmn_meta_free, cmn_meta_transform);
    g_once_init_leave (&info, i);
  }
  return info;
}

GpuspeechCmnMeta *
gpuspeech_buffer_add_cmn_meta (GstBuffer * buffer, guint frames, guint dim,
    const gfloat * offsets, const guint8 * learned)
{
  if (frames == 0 || dim == 0 || !offsets || !learned)
    return NULL;
  GpuspeechCmnMeta *m = (GpuspeechCmnMeta *) gst_buffer_add_meta (buffer,
      gpuspeech_cmn_meta_get_info (), NULL);
  if (!m)
    return NULL;
  m->frames = frames;
  m->dim = dim;
  m->offsets = (gfloat *) g_memdup2 (offsets,
      (gsize) frames * dim * sizeof (gfloat));
  m->learned = (guint8 *) g_memdup2 (learned, frames);
  return m;
}
