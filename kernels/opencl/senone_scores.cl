// Backend::senone_scores (see common/backends/backend.h for the definition): each
// senone's log-likelihood as a sum over streams of log-sum-exps of weighted
// Gaussian log densities, over a CSR list of mixture components.
//
// One work-item per (frame, senone), frames fastest: when a block has many
// frames, the items of a sub-group share a senone, so they read the same
// CSR entries (one broadcast load) and neighbouring densities of a
// gaussian-major row (contiguous loads).

// Float-stored index v, clamped into [lo, hi] before the conversion (NaN
// becomes lo), so a corrupt CSR cannot read outside the buffers.
inline long clamped_index(float v, long lo, long hi) {
  const float c = fmin(fmax(v, (float)lo), (float)hi);
  const long i = (long)c;
  return i < lo ? lo : (i > hi ? hi : i);
}

__kernel void senone_scores(__global const float* densities, int num_gaussians,
                            long frames, __global const float* offsets,
                            __global const float* gaussian, __global const float* logw,
                            long entries, int senones, int streams,
                            __global float* out, ulong out_offset) {
  const ulong i = get_global_id(0);
  if (i >= (ulong)frames * (ulong)senones) return;
  const long f = (long)(i % (ulong)frames);
  const int s = (int)(i / (ulong)frames);
  float total = 0.0f;
  for (int t = 0; t < streams; ++t) {
    const long r = (long)s * streams + t;
    const long j0 = clamped_index(offsets[r], 0, entries);
    const long j1 = clamped_index(offsets[r + 1], j0, entries);
    // Two passes, as the CPU reference: the maximum, then the sum of exps.
    float top = -INFINITY;
    for (long j = j0; j < j1; ++j) {
      const long g = clamped_index(gaussian[j], 0, num_gaussians - 1);
      const float v = logw[j] + densities[g * frames + f];
      top = (v > top || isnan(v)) ? v : top;  // a NaN term stays
    }
    if (top == -INFINITY) {
      total += -INFINITY;
      continue;
    }
    float sum = 0.0f;
    for (long j = j0; j < j1; ++j) {
      const long g = clamped_index(gaussian[j], 0, num_gaussians - 1);
      sum += exp(logw[j] + densities[g * frames + f] - top);
    }
    total += top + log(sum);
  }
  out[out_offset + (ulong)f * (ulong)senones + (ulong)s] = total;
}

// Backend::senone_scores_top_n (common/backends/backend.h): each senone's mixture
// over the top_n Gaussians of its codebook with the highest densities, as
// d_1 + ln sum_i w(k_i) exp(d_i - d_1). One work-item per (frame, senone),
// frames fastest, as above; each item ranks its codebook's Gaussians itself
// (the same reads as a full mixture, far fewer exps) by the insertion rule
// of the definition, so every backend selects the same Gaussians in the same
// order. Products and sums stay separate roundings (no contraction), as on
// the CPU.
#pragma OPENCL FP_CONTRACT OFF
#define GPUSPEECH_MAX_TOP_N 16
#define GPUSPEECH_TOP_N_UNDERFLOW 8.67361738e-19f

// The top-n selection of Backend::senone_scores: the n largest of a
// codebook's `density` values (rows[k * stride]) into val/idx, largest
// first, by insertion in Gaussian order (ties keep the lower Gaussian), so
// every backend selects the same ones in the same order. NaNs are left
// out; returns whether there was one (the score is then NaN).
inline bool rank_top_n(__global const float* rows, long stride, int density, int n,
                       float* val, int* idx, int* count_out) {
  int count = 0;
  bool has_nan = false;
  for (int k = 0; k < density; ++k) {
    const float v = rows[(long)k * stride];
    if (isnan(v)) {
      has_nan = true;
      continue;
    }
    int p = count;
    if (p == n) {
      if (!(v > val[n - 1])) continue;
      --p;
    } else {
      ++count;
    }
    for (; p > 0 && val[p - 1] < v; --p) {
      val[p] = val[p - 1];
      idx[p] = idx[p - 1];
    }
    val[p] = v;
    idx[p] = k;
  }
  *count_out = count;
  return has_nan;
}

// ln sum_r exp(terms[r]) in two passes, the maximum first (a NaN term
// stays): the top-n sum's fallback when its linear-domain sum underflows.
inline float log_sum_exp(const float* terms, int count) {
  float top = -INFINITY;
  for (int r = 0; r < count; ++r) top = (terms[r] > top || isnan(terms[r])) ? terms[r] : top;
  if (top == -INFINITY) return -INFINITY;
  float sum = 0.0f;
  for (int r = 0; r < count; ++r) sum += exp(terms[r] - top);
  return top + log(sum);
}

__kernel void senone_scores_top_n(__global const float* densities, int codebooks,
                                  int density, long frames, int top_n,
                                  __global const float* codebook,
                                  __global const float* weights, int senones, int streams,
                                  __global float* out, ulong out_offset) {
  const ulong i = get_global_id(0);
  if (i >= (ulong)frames * (ulong)senones) return;
  const long f = (long)(i % (ulong)frames);
  const int s = (int)(i / (ulong)frames);
  const int n = min(top_n, density);
  const long c = clamped_index(codebook[s], 0, codebooks - 1);
  float val[GPUSPEECH_MAX_TOP_N];
  int idx[GPUSPEECH_MAX_TOP_N];
  float total = 0.0f;
  for (int t = 0; t < streams; ++t) {
    __global const float* rows = densities + ((long)t * codebooks + c) * density * frames + f;
    int count = 0;
    if (rank_top_n(rows, frames, density, n, val, idx, &count)) {
      total += NAN;
      continue;
    }
    const float d1 = val[0];
    if (d1 == -INFINITY) {
      total += -INFINITY;
      continue;
    }
    __global const float* w = weights + ((long)s * streams + t) * density;
    float sum = 0.0f;
    for (int r = 0; r < count; ++r) {
      const float term = w[idx[r]] * exp(val[r] - d1);
      sum += term;
    }
    if (!(sum < GPUSPEECH_TOP_N_UNDERFLOW)) {
      total += d1 + log(sum);
      continue;
    }
    // Underflow guard: the same sum in the log domain.
    for (int r = 0; r < count; ++r) val[r] = log(w[idx[r]]) + val[r];
    total += log_sum_exp(val, count);
  }
  out[out_offset + (ulong)f * (ulong)senones + (ulong)s] = total;
}

// The same definition in two kernels where senones share codebooks
// (Backend::top_n_ranked_chunk): ranking a codebook per senone repeats one
// selection for each of its senones (122 times for en-us). The first
// kernel ranks each (stream, codebook, frame) once and keeps, per rank,
// e_i = exp(d_i - d_1) and the Gaussian, and d_1 (NaN where the codebook
// has a NaN); the second sums each senone's weights over them. The same
// operations as above, so the two paths agree. `chunk` frames from f0;
// scratch: e[(g * n + r) * chunk + f], then the Gaussians' indices (as
// float bits) at the same places from n_groups * n * chunk, then
// d_1[g * chunk + f] from 2 * n_groups * n * chunk; g = t * codebooks + c.
__kernel void rank_codebooks(__global const float* densities, int groups, int density,
                             long frames, long f0, long chunk, int n,
                             __global float* scratch) {
  const ulong i = get_global_id(0);
  if (i >= (ulong)groups * (ulong)chunk) return;
  const long f = (long)(i % (ulong)chunk);
  const long g = (long)(i / (ulong)chunk);
  __global const float* rows = densities + g * density * frames + f0 + f;
  __global float* e_out = scratch;
  __global float* idx_out = scratch + (long)groups * n * chunk;
  __global float* top_out = scratch + 2 * (long)groups * n * chunk;
  float val[GPUSPEECH_MAX_TOP_N];
  int idx[GPUSPEECH_MAX_TOP_N];
  int count = 0;
  const bool has_nan = rank_top_n(rows, frames, density, n, val, idx, &count);
  const float d1 = has_nan ? NAN : val[0];
  top_out[g * chunk + f] = d1;
  if (has_nan || d1 == -INFINITY) return;
  for (int r = 0; r < count; ++r) {
    e_out[(g * n + r) * chunk + f] = exp(val[r] - d1);
    idx_out[(g * n + r) * chunk + f] = as_float(idx[r]);
  }
}

__kernel void sum_ranked(__global const float* densities, int codebooks, int density,
                         long frames, long f0, long chunk, int n,
                         __global const float* codebook, __global const float* weights,
                         int senones, int streams, __global const float* scratch,
                         __global float* out, ulong out_offset) {
  const ulong i = get_global_id(0);
  if (i >= (ulong)chunk * (ulong)senones) return;
  const long f = (long)(i % (ulong)chunk);
  const int s = (int)(i / (ulong)chunk);
  const long groups = (long)streams * codebooks;
  const long c = clamped_index(codebook[s], 0, codebooks - 1);
  float total = 0.0f;
  for (int t = 0; t < streams; ++t) {
    const long g = (long)t * codebooks + c;
    const float d1 = scratch[2 * groups * n * chunk + g * chunk + f];
    if (isnan(d1)) {
      total += NAN;
      continue;
    }
    if (d1 == -INFINITY) {
      total += -INFINITY;
      continue;
    }
    __global const float* w = weights + ((long)s * streams + t) * density;
    __global const float* e = scratch + g * n * chunk + f;
    __global const float* idx = scratch + groups * n * chunk + g * n * chunk + f;
    float sum = 0.0f;
    for (int r = 0; r < n; ++r) {
      const float term = w[as_int(idx[r * chunk])] * e[r * chunk];
      sum += term;
    }
    if (!(sum < GPUSPEECH_TOP_N_UNDERFLOW)) {
      total += d1 + log(sum);
      continue;
    }
    // Underflow guard, as above, the densities read again.
    __global const float* rows = densities + g * density * frames + f0 + f;
    float terms[GPUSPEECH_MAX_TOP_N];
    for (int r = 0; r < n; ++r) {
      const int k = as_int(idx[r * chunk]);
      terms[r] = log(w[k]) + rows[(long)k * frames];
    }
    total += log_sum_exp(terms, n);
  }
  out[out_offset + (ulong)(f0 + f) * (ulong)senones + (ulong)s] = total;
}

// Backend::floor_densities (common/backends/backend.h), in place: one work-item per
// (stream, frame), frames fastest, so neighbouring items read neighbouring
// floats of each row. The maximum is exact in any order (a NaN never wins,
// as on the CPU); the floor is the definition's three rounded operations,
// uncontracted (FP_CONTRACT is off above). `slope` is
// Backend::kDensityFloorSlope, passed so that it is written once.
__kernel void floor_densities(__global float* densities, long frames, int rows_per_stream,
                              int streams, float floor, float slope) {
  const ulong i = get_global_id(0);
  if (i >= (ulong)frames * (ulong)streams) return;
  const ulong f = i % (ulong)frames;
  const ulong t = i / (ulong)frames;
  __global float* block = densities + t * (ulong)rows_per_stream * (ulong)frames;
  float m = -INFINITY;
  for (int r = 0; r < rows_per_stream; ++r) {
    const float d = block[(ulong)r * (ulong)frames + f];
    if (d > m) m = d;
  }
  const float lo = m - floor;
  for (int r = 0; r < rows_per_stream; ++r) {
    __global float* p = block + (ulong)r * (ulong)frames + f;
    const float d = *p;
    if (d < lo) *p = lo + slope * (d - lo);
  }
}
