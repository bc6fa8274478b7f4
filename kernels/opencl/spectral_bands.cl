// spectral_bands: the fused front end (Backend::spectral_bands and BandsSpec
// in common/backends/backend.h), the design of kernels/cuda/spectral_bands.cu in
// OpenCL C: framing, real FFT, |X|^2 (or |X|), the sparse filterbank, the
// optional unary op and the optional projection (MFCC's DCT), with only the
// bands or their projection (and the energy) written to global memory.
//
// Layout of the work: T = max(R1, R2) items a frame, FRAMES frames a
// work-group. The real N-point FFT is a complex FFT of M = N / 2 points of
// z[j] = x[2j] + i x[2j+1], M = R1 * R2: each item (n2 < R2) takes R1
// samples pairs straight from the staged samples, does an R1-point DFT in
// private registers, a twiddle, then through local memory each item
// (k1 < R1) an R2-point DFT; then the real split and |X|^2 into local
// memory. One kernel per FFT size (spectral_bands_N below) instantiates the
// body with constant sizes, so that the compiler unrolls the DFTs and keeps
// them in registers.
//
// filterbank_layout (one work-group a call) lays out what every work-group
// copies: the concatenated weights of every band's support with their
// codes, each band's finishing details, the padded projection and the
// window padded with zeros to N. The layout buffer's offsets are those of
// the CUDA kernel (LAYOUT_* below).

#define SB_MAX_BANDS 80
#define SB_MAX_PROJECTION 2048
#define SB_MAX_PROJECTION_LOCAL 1024 /* floats of the padded matrix a work-group holds */
#define LAYOUT_MAX_SUPPORT 1028
#define LAYOUT_START 1
#define LAYOUT_FIRST (LAYOUT_START + SB_MAX_BANDS + 1)
#define LAYOUT_BAND 164 /* round4(LAYOUT_FIRST + SB_MAX_BANDS) */
#define LAYOUT_CODE (LAYOUT_BAND + SB_MAX_BANDS)
#define LAYOUT_WEIGHT (LAYOUT_CODE + LAYOUT_MAX_SUPPORT)
#define LAYOUT_MATRIX (LAYOUT_WEIGHT + LAYOUT_MAX_SUPPORT)
#define LAYOUT_WINDOW (LAYOUT_MATRIX + SB_MAX_PROJECTION)
#define LAYOUT_FLOATS (LAYOUT_WINDOW + 2048)
#define LAYOUT_WG 256

inline float bands_unary(int op, float param, float v) {
  switch (op) {
    case UNARY_LOG_FLOOR: return v > 0.0f ? log(v) : param;
    case UNARY_LOG_OFFSET: return log(v + param);
    case UNARY_LOG_CLAMP: return log(fmax(v, param));
    case UNARY_POW: return v >= 0.0f ? pow(v, param) : 0.0f;
    default: return sqrt(fmax(v, 0.0f));
  }
}

inline float2 bands_cmul(float2 a, float2 b) {
  return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

inline int sb_group_stride(int group) { return (group + 3) & ~3; }
inline int sb_matrix_stride(int group) {
  const int g = sb_group_stride(group);
  return (g / 4) % 2 == 1 ? g : g + 4;
}
// The elements a work-group holds in local memory at n points.
inline int sb_support_capacity(int n) { return min(2 * (n / 2 + 1), 1026); }

__kernel __attribute__((reqd_work_group_size(LAYOUT_WG, 1, 1)))
void filterbank_layout(__global const float* fb, __global const float* ranges,
                       __global const float* projection, __global const float* window,
                       int frame_length, int n, int nb, int threads, int group,
                       int outputs, __global float* layout) {
  __local int start[SB_MAX_BANDS + 1];
  __local int first[SB_MAX_BANDS];
  __global int* li = (__global int*)layout;
  const int lid = get_local_id(0);
  const int bins = n / 2 + 1;
  for (int i = lid; i < n; i += LAYOUT_WG)
    layout[LAYOUT_WINDOW + i] = i < frame_length ? window[i] : 0.0f;
  if (lid == 0) {  // at most 80 bands: one item scans them
    int run = 0;
    for (int j = 0; j < nb; ++j) {
      int f = (int)ranges[2 * j];
      int c = (int)ranges[2 * j + 1];
      f = f < 0 ? 0 : (f > bins ? bins : f);
      c = c < 0 ? 0 : (c > bins - f ? bins - f : c);
      first[j] = f;
      start[j] = run;
      run += c;
    }
    start[nb] = run;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int total = start[nb];
  if (lid == 0) li[0] = total;
  for (int j = lid; j <= nb; j += LAYOUT_WG) {
    li[LAYOUT_START + j] = start[j];
    if (j < nb) li[LAYOUT_FIRST + j] = first[j];
  }
  const int fits = total <= sb_support_capacity(n);
  const int slice = (total + threads - 1) / threads;
  for (int j = lid; j < nb; j += LAYOUT_WG) {
    const int a = start[j], e = start[j + 1];
    const int carries = fits && e > a;
    const int g = outputs > 0 ? j / group : 0;
    const int pos = outputs > 0 ? g * sb_group_stride(group) + (j - g * group) : 0;
    const int last_of_group = outputs > 0 && j - g * group == group - 1;
    li[LAYOUT_BAND + j] = (carries ? a / slice : 0) | ((carries ? (e - 1) / slice : 0) << 8) |
                          (pos << 16) | (last_of_group ? 1 << 24 : 0) | (e == a ? 1 << 25 : 0);
  }
  if (outputs > 0) {
    const int stride = sb_matrix_stride(group);
    for (int i = lid; i < outputs * stride; i += LAYOUT_WG) {
      const int o = i / stride, j = i - o * stride;
      layout[LAYOUT_MATRIX + i] = j < group ? projection[o * group + j] : 0.0f;
    }
  }
  if (!fits) return;
  for (int l = lid; l < total; l += LAYOUT_WG) {
    int lo = 0, hi = nb;  // start[lo] <= l < start[hi]: the band of element l
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (start[mid] <= l) lo = mid; else hi = mid;
    }
    const int bin = first[lo] + (l - start[lo]);
    const int last = l == start[lo + 1] - 1;
    li[LAYOUT_CODE + l] = bin | (lo << 16) | (last ? (int)0x80000000u : 0);
    layout[LAYOUT_WEIGHT + l] = fb[(long)lo * bins + bin];
  }
}

// In-place R-point DFT of v[0..R) in private memory (radix 2, decimation in
// time), R = 2^LOG2R; tw[k] = exp(-2 pi i k / n). Every loop has a trip
// count the compiler can count, a literal one (the largest R) with the
// real bound a test inside, so that every loop over v unrolls fully
// before the compiler decides where v lives: a loop it cannot count
// leaves v in (slow) private memory.
inline void sb_dft(float2* v, const int R, const int LOG2R, __global const float2* tw,
                   const int n) {
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    int j = 0;
#pragma unroll
    for (int b = 0; b < 5; ++b)
      if (b < LOG2R) j |= ((i >> b) & 1) << (LOG2R - 1 - b);
    if (i < R && j > i) {
      const float2 tmp = v[i];
      v[i] = v[j];
      v[j] = tmp;
    }
  }
#pragma unroll
  for (int st = 0; st < 5; ++st) {
    if (st >= LOG2R) break;
    const int hs = 1 << st;  // butterflies join v[i + q] and v[i + q + hs]
#pragma unroll
    for (int i = 0; i < 32; i += 2 * hs) {
      if (i >= R) break;
#pragma unroll
      for (int q = 0; q < 16; ++q) {
        if (q >= hs) break;
        const float2 a = v[i + q];
        const float2 b = q == 0 ? v[i + q + hs]
                                : bands_cmul(tw[q * (n / (2 * hs))], v[i + q + hs]);
        v[i + q] = a + b;
        v[i + q + hs] = a - b;
      }
    }
  }
}

// Sums v over the T items of each frame (scratch: one acc_t an item);
// every item of the frame gets its total. Every item of the work-group
// must call it.
inline acc_t sb_frame_sum(acc_t v, __local acc_t* scratch, const int T) {
  const int lid = get_local_id(0);
  const int t = lid % T;
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = T / 2; off > 0; off >>= 1) {
    if (t < off) scratch[lid] += scratch[lid + off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const acc_t total = scratch[lid - t];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// The body, for N points, M = R1 * R2 = N / 2, FRAMES frames of T items.
// buf: FRAMES * KBUF float2 (see the wrappers); codes / weights:
// sb_support_capacity(N) each; finish: SB_MAX_BANDS; proj:
// SB_MAX_PROJECTION_LOCAL floats; scratch: FRAMES * T acc_t.
inline void sb_body(__global const float* signal, long utt_stride, long valid_length,
                    long frames_per_utt, long first_frame_offset, int frame_shift,
                    int frame_length, float preemphasis, int preemphasis_per_frame,
                    int remove_dc, __global const float2* tw, int magnitude, int nb,
                    __global const float* fb, __global const float* layout, int apply_op,
                    int op, float op_param, int group, int outputs, long rows,
                    __global float* bands, __global float* energy, int want_energy,
                    __local float2* buf, __local int* codes, __local float* weights,
                    __local int* finish, __local float* proj, __local acc_t* scratch,
                    const int N, const int R1, const int R2, const int FRAMES, const int KBUF) {
  const int M = N / 2;
  const int T = R1 > R2 ? R1 : R2;
  const int KLD = R1 + 1;
  const int bins = M + 1;
  const int lid = get_local_id(0);
  const int WG = FRAMES * T;
  const int f = lid / T;
  const int t = lid - f * T;
  const long row0 = (long)get_group_id(0) * FRAMES;
  const long row = row0 + f;
  const int live = row < rows;
  __local float2* b = buf + f * KBUF;
  __local float* s = (__local float*)b;
  __local float* block_floats = (__local float*)buf;
  const int block_floats_n = 2 * KBUF * FRAMES;
  const int len = frame_length;
  __global const int* layout_i = (__global const int*)layout;

  // The layout: band finishing details, codes and weights, the matrix.
  const int support = layout_i[0];
  const int capacity = sb_support_capacity(N);
  const int fits = support <= capacity;
  for (int i = lid; i < nb; i += WG) finish[i] = layout_i[LAYOUT_BAND + i];
  if (fits)
    for (int i = lid; i < support; i += WG) {
      codes[i] = layout_i[LAYOUT_CODE + i];
      weights[i] = layout[LAYOUT_WEIGHT + i];
    }
  const int pstride = outputs > 0 ? sb_matrix_stride(group) : 0;
  for (int i = lid; i < outputs * pstride; i += WG) proj[i] = layout[LAYOUT_MATRIX + i];

  // Staging: xs[i] = x(start + i) for -1 <= i < N, zero outside the signal.
  // Consecutive frames of one utterance share one span of samples.
  long start = 0;
  if (live) {
    const long u = row / frames_per_utt;
    start = first_frame_offset + (row - u * frames_per_utt) * frame_shift;
  }
  const long last = (rows < row0 + FRAMES ? rows : row0 + FRAMES) - 1;
  const long u0 = row0 / frames_per_utt;
  const long span_floats = (last - row0) * frame_shift + N + 1;
  const int one_span = last / frames_per_utt == u0 && span_floats <= block_floats_n;
  __local const float* xs;
  if (one_span) {
    const long span_start = first_frame_offset + (row0 - u0 * frames_per_utt) * frame_shift - 1;
    __global const float* seg = signal + u0 * utt_stride + span_start;
    const long lo = -span_start, hi = valid_length - span_start;
    const int n = (int)span_floats;
    for (int i = lid; i < n; i += WG) block_floats[i] = (i >= lo && i < hi) ? seg[i] : 0.0f;
    xs = block_floats + 1 + (live ? f * frame_shift : 0);
  } else {
    if (live) {
      __global const float* seg = signal + (row / frames_per_utt) * utt_stride;
      for (int i = t; i <= N; i += T) {
        const long pos = start - 1 + i;
        s[1 + i] = (pos >= 0 && pos < valid_length) ? seg[pos] : 0.0f;
      }
    }
    xs = s + 2;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // The frame's sums, as frame_signal (work-group-uniform conditions).
  float mean = 0.0f;
  if (remove_dc) {
    acc_t acc = 0;
    for (int i = t; i < len; i += T) acc += xs[i];
    mean = (float)(sb_frame_sum(acc, scratch, T) / len);
  }
  if (want_energy) {
    acc_t acc = 0;
    for (int i = t; i < len; i += T) {
      const float v = xs[i] - mean;
      acc += (acc_t)v * v;
    }
    acc = sb_frame_sum(acc, scratch, T);
    if (live && t == 0) energy[row] = (float)acc;
  }
  const float a = preemphasis;
  const long room = valid_length - start;
  const int lim = room < 0 ? 0 : (room > len ? len : (int)room);
  float ymean = 0.0f;
  if (!preemphasis_per_frame && remove_dc) {
    acc_t acc = 0;
    for (int i = t; i < len; i += T) acc += i < lim ? xs[i] - a * xs[i - 1] : 0.0f;
    ymean = (float)(sb_frame_sum(acc, scratch, T) / len);
  }

  // FFT step 1 input: item n2 = t takes z[j] = (x[2j], x[2j+1]) for
  // j = R2 n1 + t, windowed on the way (the layout's window is zero past
  // frame_length, and the staged samples there are finite).
  __global const float2* wpad = (__global const float2*)(layout + LAYOUT_WINDOW);
  float2 v[32];
  if (t < R2) {
#pragma unroll
    for (int n1 = 0; n1 < 32; ++n1) {
      if (n1 >= R1) break;
      const int j = R2 * n1 + t;
      const int i = 2 * j;
      const float2 w = wpad[j];
      const float x0 = xs[i], x1 = xs[i + 1];
      float v0, v1;
      if (preemphasis_per_frame) {
        const float xm = xs[i > 0 ? i - 1 : 0];
        v0 = (x0 - mean) - a * (xm - mean);
        v1 = (x1 - mean) - a * (x0 - mean);
      } else {
        const float xm = xs[i - 1];
        v0 = (i < lim ? x0 - a * xm : 0.0f) - ymean;
        v1 = (i + 1 < lim ? x1 - a * x0 : 0.0f) - ymean;
      }
      v[n1] = (float2)(v0 * w.x, v1 * w.y);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);  // the staged samples are read; the buffer is reused

  if (t < R2) {  // steps 1 and 2
    sb_dft(v, R1, R1 == 8 ? 3 : R1 == 16 ? 4 : 5, tw, N);
#pragma unroll
    for (int k1 = 0; k1 < 32; ++k1)
      if (k1 < R1) b[t * KLD + k1] = k1 == 0 ? v[k1] : bands_cmul(tw[(2 * t * k1) & (N - 1)], v[k1]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < R1) {  // step 3: item k1 = t
#pragma unroll
    for (int n2 = 0; n2 < 32; ++n2)
      if (n2 < R2) v[n2] = b[n2 * KLD + t];
    sb_dft(v, R2, R2 == 8 ? 3 : R2 == 16 ? 4 : 5, tw, N);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < R1) {
#pragma unroll
    for (int k2 = 0; k2 < 32; ++k2)
      if (k2 < R2) b[t + R1 * k2] = v[k2];
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // The real split and |X|^2 of bins k = t, t + T, ..., kept in registers
  // until every item has read Z, then written over it as floats.
  float pw[33];
#pragma unroll
  for (int q = 0; q < 33; ++q) {
    const int k = t + T * q;
    if (q <= M / T && k <= M) {
      const float2 zk = b[k & (M - 1)];
      const float2 zm = b[(M - k) & (M - 1)];
      const float ex = 0.5f * (zk.x + zm.x), ey = 0.5f * (zk.y - zm.y);
      const float ox = 0.5f * (zk.y + zm.y), oy = -0.5f * (zk.x - zm.x);
      const float2 w = tw[k];
      const float xr = ex + (w.x * ox - w.y * oy);
      const float xi = ey + (w.x * oy + w.y * ox);
      const float pk = xr * xr + xi * xi;
      pw[q] = magnitude ? sqrt(pk) : pk;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int q = 0; q < 33; ++q) {
    const int k = t + T * q;
    if (q <= M / T && k <= M) s[k] = pw[q];
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // The filterbank: the frame's T items split the concatenated weights
  // evenly; a band's last element stores the running sum, a slice ending
  // inside a band leaves a carry, and a band is the sum of its parts in
  // slice order (kernels/cuda/spectral_bands.cu says why).
  const int project = outputs > 0;
  __local float* band_s = s + bins;
  __local float* carry = s + bins + SB_MAX_BANDS;
  const int slice = (support + T - 1) / T;
  if (fits) {
    if (live) {
      const int l0 = t * slice;
      const int l1 = min(support, l0 + slice);
      float acc = 0.0f;
      for (int l = l0; l < l1; ++l) {
        const int code = codes[l];
        acc += weights[l] * s[code & 0xffff];
        if (code < 0) {
          band_s[(code >> 16) & 0x7fff] = acc;
          acc = 0.0f;
        }
      }
      if (l1 > l0 && codes[l1 - 1] >= 0) carry[t] = acc;
    }
  } else if (live) {  // a band an item, from the dense matrix
    for (int j = t; j < nb; j += T) {
      const int first = layout_i[LAYOUT_FIRST + j];
      const int count = layout_i[LAYOUT_START + j + 1] - layout_i[LAYOUT_START + j];
      __global const float* w = fb + (long)j * bins + first;
      float acc = 0.0f;
      for (int k = 0; k < count; ++k) acc += s[first + k] * w[k];
      band_s[j] = acc;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int gstride = project ? sb_group_stride(group) : 0;
  if (live) {
    __global float* out = bands + row * (long)nb;
    for (int j = t; j < nb; j += T) {
      const int fin = finish[j];
      float val = 0.0f;  // an empty band: the product with no weights
      if ((fin & (1 << 25)) == 0) {
        for (int u = fin & 0xff; u < ((fin >> 8) & 0xff); ++u) val += carry[u];
        val += band_s[j];
      }
      val = apply_op ? bands_unary(op, op_param, val) : val;
      if (project) {
        const int pos = (fin >> 16) & 0xff;
        s[pos] = val;
        if (fin & (1 << 24))
          for (int k = pos + 1; k < pos + 1 + gstride - group; ++k) s[k] = 0.0f;
      } else {
        out[j] = val;
      }
    }
  }
  // One barrier whatever the kind (no return before it: pocl's work-group
  // loops want a single exit), then the projection.
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!project || !live) return;
  const int columns = nb / group * outputs;
  __global float* mapped = bands + row * (long)columns;
  int g = 0, o = t;
  while (o >= outputs) {
    o -= outputs;
    ++g;
  }
  for (int q = t; q < columns; q += T) {
    __local const float4* x = (__local const float4*)(s + g * gstride);
    __local const float4* w = (__local const float4*)(proj + o * pstride);
    float acc = 0.0f;
    for (int i = 0; i < gstride / 4; ++i) {
      const float4 p = x[i], c = w[i];
      acc += p.x * c.x;
      acc += p.y * c.y;
      acc += p.z * c.z;
      acc += p.w * c.w;
    }
    mapped[q] = acc;
    for (o += T; o >= outputs; o -= outputs) ++g;
  }
}

// One kernel per FFT size: N, R1, R2, frames a work-group (256 items, or
// fewer frames where the local memory would pass 48 KB), KBUF float2 a
// frame (at least R2 (R1 + 1) for the FFT's transposition, N + 2 floats
// for the staged samples and M + 1 + SB_MAX_BANDS + T floats for the
// spectrum, the bands and the carries), CAP = sb_support_capacity(N).
#define SB_KERNEL(NAME, N, R1, R2, FRAMES, KBUF, CAP)                                      \
  __kernel __attribute__((reqd_work_group_size(FRAMES * (R1 > R2 ? R1 : R2), 1, 1)))     \
  void NAME(__global const float* signal, long utt_stride, long valid_length,           \
            long frames_per_utt, long first_frame_offset, int frame_shift,              \
            int frame_length, float preemphasis, int preemphasis_per_frame,             \
            int remove_dc, __global const float2* tw, int magnitude, int nb,            \
            __global const float* fb, __global const float* layout, int apply_op,       \
            int op, float op_param, int group, int outputs, long rows,                  \
            __global float* bands, __global float* energy, int want_energy) {           \
    __local float4 buf4[FRAMES * KBUF / 2];                                              \
    __local int codes[CAP];                                                              \
    __local float weights[CAP];                                                          \
    __local int finish[SB_MAX_BANDS];                                                    \
    __local float4 proj4[SB_MAX_PROJECTION_LOCAL / 4];                                   \
    __local acc_t scratch[FRAMES * (R1 > R2 ? R1 : R2)];                                 \
    sb_body(signal, utt_stride, valid_length, frames_per_utt, first_frame_offset,        \
            frame_shift, frame_length, preemphasis, preemphasis_per_frame, remove_dc,    \
            tw, magnitude, nb, fb, layout, apply_op, op, op_param, group, outputs, rows, \
            bands, energy, want_energy, (__local float2*)buf4, codes, weights, finish,   \
            (__local float*)proj4, scratch, N, R1, R2, FRAMES, KBUF);                    \
  }

SB_KERNEL(spectral_bands_128, 128, 8, 8, 32, 80, 130)
SB_KERNEL(spectral_bands_256, 256, 16, 8, 16, 136, 258)
SB_KERNEL(spectral_bands_512, 512, 16, 16, 16, 272, 514)
SB_KERNEL(spectral_bands_1024, 1024, 32, 16, 4, 528, 1026)
SB_KERNEL(spectral_bands_2048, 2048, 32, 32, 2, 1056, 1026)
