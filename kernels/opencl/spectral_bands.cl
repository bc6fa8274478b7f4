// spectral_bands: the fused front end (Backend::spectral_bands and BandsSpec
// in common/backend.h): framing, real FFT, |X|^2 (or |X|), the sparse
// filterbank over each band's support and the optional unary op, one frame
// per work-group, everything between the signal and the bands in local
// memory. Only the bands (and the energy) are written to global memory;
// the composition writes and reads back every frame and spectrum.
//
// The framing is frame_signal's (framing.cl) step by step: the same sums,
// strided over FRAME_WG items and reduced by framing_group_sum in acc_t
// (double where the device has it), so the means, the energy and the
// windowed samples are bit for bit those of frame_signal. Only the staging
// differs: the frame's samples (and the one before it) are read from global
// memory once into local memory, and all the passes read them from there.
//
// The FFT of N real points is a complex FFT of M = N / 2 points of
// z[j] = x[2j] + i x[2j+1] (radix 2, decimation in time, in place in local
// memory after a bit-reversed load), then the usual split into the real
// transform's bins 0..M. The twiddles come from a host-made table,
// tw[k] = exp(-2 pi i k / N) for k = 0..M, computed in double on the host:
// more accurate than sin/cos in float here, and one load instead of a call.
//
// Local memory (set by the host, sized for N):
//   stage: N + 1 floats, the staged samples, later the power spectrum
//   z:     M float2, the complex FFT
// A reduction scratch of FRAME_WG acc_t is static.

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

__kernel __attribute__((reqd_work_group_size(FRAME_WG, 1, 1)))
void spectral_bands(__global const float* signal, long utt_stride,
                    long valid_length, long frames_per_utt,
                    long first_frame_offset, int frame_shift, int frame_length,
                    int fft_size, int log2_m, float preemphasis,
                    int preemphasis_per_frame, int remove_dc,
                    __global const float* window, __global const float2* tw,
                    int magnitude, int num_bands, __global const float* fb,
                    __global const float* ranges, int apply_op, int op,
                    float op_param, __global float* bands,
                    __global float* energy, int want_energy,
                    __local float* stage, __local float2* z) {
  __local acc_t scratch[FRAME_WG];
  const long row = get_group_id(0);
  const int lid = get_local_id(0);
  const long u = row / frames_per_utt;
  const long t = row - u * frames_per_utt;
  __global const float* utt = signal + u * utt_stride;
  const long start = first_frame_offset + t * (long)frame_shift;
  const float a = preemphasis;
  const int len = frame_length;

  // stage[1 + i] = x(start + i) for -1 <= i < len, 0 outside the signal
  // (framing_sample's rule), so xs[i] below is framing_sample(utt, start + i).
  for (int i = lid; i <= len; i += FRAME_WG)
    stage[i] = framing_sample(utt, start - 1 + i, valid_length);
  barrier(CLK_LOCAL_MEM_FENCE);
  __local const float* xs = stage + 1;

  // The sums of frame_signal, in its order and with its conditions.
  float mean = 0.0f;
  if (remove_dc && (preemphasis_per_frame || want_energy)) {
    acc_t s = 0;
    for (int i = lid; i < len; i += FRAME_WG) s += xs[i];
    mean = (float)(framing_group_sum(s, scratch) / len);
  }
  if (want_energy) {
    acc_t e = 0;
    for (int i = lid; i < len; i += FRAME_WG) {
      const acc_t v = xs[i] - mean;
      e += v * v;
    }
    e = framing_group_sum(e, scratch);
    if (lid == 0) energy[row] = (float)e;
  }
  float offset = 0.0f;
  if (remove_dc && !preemphasis_per_frame) {
    acc_t s = 0;
    for (int i = lid; i < len; i += FRAME_WG) {
      if (start + i < valid_length) s += xs[i] - a * xs[i - 1];
    }
    offset = (float)(framing_group_sum(s, scratch) / len);
  }

  // Windowed samples, paired into z and stored at bit-reversed positions
  // for the in-place radix-2 passes.
  const int m = fft_size >> 1;
  for (int j = lid; j < m; j += FRAME_WG) {
    float y2[2];
    for (int h = 0; h < 2; ++h) {
      const int i = 2 * j + h;
      float y = 0.0f;
      if (i < len) {
        if (preemphasis_per_frame) {
          const float x = xs[i] - mean;
          const float prev = i == 0 ? x : xs[i - 1] - mean;
          y = x - a * prev;
        } else {
          y = start + i < valid_length ? xs[i] - a * xs[i - 1] : 0.0f;
          y -= offset;
        }
        y *= window[i];
      }
      y2[h] = y;
    }
    int r = 0;
    for (int b = 0, jj = j; b < log2_m; ++b, jj >>= 1) r = (r << 1) | (jj & 1);
    z[r] = (float2)(y2[0], y2[1]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // Radix-2 passes: span h = 1, 2, ..., M / 2; butterfly (group, j) joins
  // z[i0] and z[i0 + h] with W_{2h}^j = W_N^(j M / h) = tw[j M / h].
  for (int h = 1; h < m; h <<= 1) {
    const int stride = m / h;
    for (int q = lid; q < (m >> 1); q += FRAME_WG) {
      const int j = q & (h - 1);
      const int i0 = ((q - j) << 1) + j;
      const float2 w = tw[j * stride];
      const float2 lo = z[i0];
      const float2 hi = bands_cmul(w, z[i0 + h]);
      z[i0] = lo + hi;
      z[i0 + h] = lo - hi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // The real split, X[k] = E[k] + W_N^k O[k] for bins k = 0..M, then |X|^2
  // (or |X|) into stage: the samples are no longer needed, and N + 1 floats
  // hold the M + 1 bins.
  __local float* power = stage;
  for (int k = lid; k <= m; k += FRAME_WG) {
    const float2 zk = z[k & (m - 1)];
    const float2 zm = z[(m - k) & (m - 1)];
    const float ex = 0.5f * (zk.x + zm.x), ey = 0.5f * (zk.y - zm.y);
    const float ox = 0.5f * (zk.y + zm.y), oy = -0.5f * (zk.x - zm.x);
    const float2 w = tw[k];
    const float xr = ex + (w.x * ox - w.y * oy);
    const float xi = ey + (w.x * oy + w.y * ox);
    const float p = xr * xr + xi * xi;
    power[k] = magnitude ? sqrt(p) : p;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  // The filterbank over each band's support, clamped into 0..bins (the
  // support is the caller's contract; a wrong one must not read out of
  // bounds), then the op.
  const int bins = m + 1;
  __global float* out = bands + row * (long)num_bands;
  for (int j = lid; j < num_bands; j += FRAME_WG) {
    int first = (int)ranges[2 * j];
    int count = (int)ranges[2 * j + 1];
    first = first < 0 ? 0 : (first > bins ? bins : first);
    count = count < 0 ? 0 : (count > bins - first ? bins - first : count);
    __global const float* w = fb + (long)j * bins + first;
    __local const float* x = power + first;
    float acc = 0.0f;
    for (int k = 0; k < count; ++k) acc += x[k] * w[k];
    out[j] = apply_op ? bands_unary(op, op_param, acc) : acc;
  }
}
