// Backend::senone_scores (see common/backend.h for the definition): each
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
