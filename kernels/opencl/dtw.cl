// DTW of one utterance against many templates, one work-group per template
// (see common/dtw/dtw_engine.h for the plan, dtw_options.h for the
// recursions, kernels/cuda/dtw.cu for the CUDA twin). The code below keeps
// the host's rounding: no mad/fma, a sum in ascending coefficient order.
// The DtwEngine builds this file as a program of its own, with
// -cl-fp32-correctly-rounded-divide-sqrt when the device offers it.

#define DTW_INF INFINITY

// Line-for-line copy of common/dtw/dtw_region.h's column_range.
long dtw_floor_div(long a, long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

int dtw_column_range(int itakura, int band, long n, long m, long i, long* lo, long* hi) {
  long a = 0, b = m - 1;
  if (itakura) {
    const long rest = n - 1 - i;
    const long a2 = (m - 1) - 2 * rest, b2 = (m - 1) - rest / 2;
    a = i / 2 > a2 ? i / 2 : a2;
    b = 2 * i < b2 ? 2 * i : b2;
  }
  if (band >= 0 && n > 1) {
    const long c = i * (m - 1), w = (long)band * (n - 1);
    const long a3 = -dtw_floor_div(w - c, n - 1);
    const long b3 = dtw_floor_div(c + w, n - 1);
    if (a3 > a) a = a3;
    if (b3 < b) b = b3;
  }
  if (a < 0) a = 0;
  if (b > m - 1) b = m - 1;
  *lo = a;
  *hi = b;
  return a <= b;
}

float dtw_frame_distance_lg(__local const float* x, __global const float* y, int dim, int first) {
#pragma OPENCL FP_CONTRACT OFF
  float s = 0.0f;
  for (int k = first; k < dim; ++k) {
    const float t = x[k] - y[k];
    const float sq = t * t;
    s = s + sq;
  }
  return sqrt(s);
}

float dtw_frame_distance_gg(__global const float* x, __global const float* y, int dim, int first) {
#pragma OPENCL FP_CONTRACT OFF
  float s = 0.0f;
  for (int k = first; k < dim; ++k) {
    const float t = x[k] - y[k];
    const float sq = t * t;
    s = s + sq;
  }
  return sqrt(s);
}

// kItakura: column sweep, two columns of (flat, sloped) costs in local
// memory (4 * cap floats) plus the utterance frame (dim floats).
__kernel void dtw_itakura(__global const float* utt, long n, __global const float* templates,
                          __global const long* offsets, int dim, long cap, int band, int first,
                          int normalize, __global float* out, __local float* sh) {
#pragma OPENCL FP_CONTRACT OFF
  __local float* flat0 = sh;
  __local float* sloped0 = sh + cap;
  __local float* flat1 = sh + 2 * cap;
  __local float* sloped1 = sh + 3 * cap;
  __local float* x = sh + 4 * cap;
  const long t = get_group_id(0);
  const long tid = get_local_id(0), nt = get_local_size(0);
  const long m = offsets[t + 1] - offsets[t];
  __global const float* y = templates + offsets[t] * dim;

  for (long j = tid; j < m; j += nt) flat0[j] = sloped0[j] = flat1[j] = sloped1[j] = DTW_INF;
  long lo = 0, hi = 0;
  if (!dtw_column_range(1, band, n, m, 0, &lo, &hi) || lo != 0) {
    if (tid == 0) out[t] = DTW_INF;
    return;
  }
  for (long k = tid; k < dim; k += nt) x[k] = utt[k];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (tid == 0) sloped0[0] = dtw_frame_distance_lg(x, y, dim, first);
  barrier(CLK_LOCAL_MEM_FENCE);
  long lo_prev2 = 0, lo_prev = 0;
  for (long i = 1; i < n; ++i) {
    for (long k = tid; k < dim; k += nt) x[k] = utt[i * dim + k];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!dtw_column_range(1, band, n, m, i, &lo, &hi)) {
      if (tid == 0) out[t] = DTW_INF;
      return;
    }
    const int odd = (int)(i & 1);
    __local const float* pf = odd ? flat0 : flat1;
    __local const float* ps = odd ? sloped0 : sloped1;
    __local float* cf = odd ? flat1 : flat0;
    __local float* cs = odd ? sloped1 : sloped0;
    for (long j = lo + tid; j <= hi; j += nt) {
      const float d = dtw_frame_distance_lg(x, y + j * dim, dim, first);
      float best = DTW_INF;
      if (j >= 1) best = fmin(best, fmin(pf[j - 1], ps[j - 1]));
      if (j >= 2) best = fmin(best, fmin(pf[j - 2], ps[j - 2]));
      cf[j] = ps[j] + d;
      cs[j] = best + d;
    }
    for (long j = lo_prev2 + tid; j < lo; j += nt) cf[j] = cs[j] = DTW_INF;
    lo_prev2 = lo_prev;
    lo_prev = lo;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (tid == 0) {
    const int odd = (int)((n - 1) & 1);
    const float total = odd ? fmin(flat1[m - 1], sloped1[m - 1]) : fmin(flat0[m - 1], sloped0[m - 1]);
    out[t] = (normalize && total < DTW_INF) ? total / (float)n : total;
  }
}

// kSymmetric: anti-diagonal sweep, three diagonals indexed by j in local
// memory (3 * cap floats).
__kernel void dtw_symmetric(__global const float* utt, long n, __global const float* templates,
                            __global const long* offsets, int dim, long cap, int band, int first,
                            int normalize, __global float* out, __local float* sh) {
#pragma OPENCL FP_CONTRACT OFF
  const long t = get_group_id(0);
  const long tid = get_local_id(0), nt = get_local_size(0);
  const long m = offsets[t + 1] - offsets[t];
  __global const float* y = templates + offsets[t] * dim;
  for (long k = 0; k < n + m - 1; ++k) {
    __local float* cur = sh + (k % 3) * cap;
    __local const float* d1 = sh + ((k + 2) % 3) * cap;
    __local const float* d2 = sh + ((k + 1) % 3) * cap;
    for (long j = tid; j < m; j += nt) {
      const long i = k - j;
      long lo = 0, hi = -1;
      float g = DTW_INF;
      if (i >= 0 && i < n && dtw_column_range(0, band, n, m, i, &lo, &hi) && j >= lo && j <= hi) {
        const float d = dtw_frame_distance_gg(utt + i * dim, y + j * dim, dim, first);
        if (k == 0) {
          g = 2.0f * d;
        } else {
          const float left = d1[j] + d;
          const float diag = (k >= 2 && j >= 1) ? d2[j - 1] + 2.0f * d : DTW_INF;
          const float below = j >= 1 ? d1[j - 1] + d : DTW_INF;
          g = fmin(fmin(left, diag), below);
        }
      }
      cur[j] = g;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (tid == 0) {
    const float total = sh[((n + m - 2) % 3) * cap + (m - 1)];
    out[t] = (normalize && total < DTW_INF) ? total / (float)(n + m) : total;
  }
}
