// frame_signal: cuts, cleans and windows frames (Backend::frame_signal and
// FramingSpec in common/backends/backend.h give the exact definition).
//
// One work-group per output row: the group first reduces the frame's sum (for
// DC removal) and then its energy in local memory, then every work-item
// writes a strided share of the fft_size outputs.

// Sample p of utterance u, zero outside [0, valid_length).
inline float framing_sample(__global const float* utt, long p, long valid_length) {
  return (p >= 0 && p < valid_length) ? utt[p] : 0.0f;
}

// Sums `v` over the work-group; every item gets the total.
inline acc_t framing_group_sum(acc_t v, __local acc_t* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = FRAME_WG / 2; step > 0; step >>= 1) {
    if (lid < step) scratch[lid] += scratch[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const acc_t total = scratch[0];
  // Everyone must have read scratch[0] before it is reused.
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

__kernel __attribute__((reqd_work_group_size(FRAME_WG, 1, 1)))
void frame_signal(__global const float* signal, long utt_stride,
                  long valid_length, long frames_per_utt,
                  long first_frame_offset, int frame_shift, int frame_length,
                  int fft_size, float preemphasis, int preemphasis_per_frame,
                  int remove_dc, __global const float* window,
                  __global float* frames, __global float* energy,
                  int want_energy) {
  __local acc_t scratch[FRAME_WG];
  const long row = get_group_id(0);
  const int lid = get_local_id(0);
  const long u = row / frames_per_utt;
  const long t = row - u * frames_per_utt;
  __global const float* utt = signal + u * utt_stride;
  const long start = first_frame_offset + t * (long)frame_shift;
  const float a = preemphasis;

  // Mean of the raw samples: per-frame mode removes it before pre-emphasis,
  // and the energy is always taken after it.
  float mean = 0.0f;
  if (remove_dc && (preemphasis_per_frame || want_energy)) {
    acc_t s = 0;
    for (int i = lid; i < frame_length; i += FRAME_WG)
      s += framing_sample(utt, start + i, valid_length);
    mean = (float)(framing_group_sum(s, scratch) / frame_length);
  }
  if (want_energy) {
    acc_t e = 0;
    for (int i = lid; i < frame_length; i += FRAME_WG) {
      const acc_t v = framing_sample(utt, start + i, valid_length) - mean;
      e += v * v;
    }
    e = framing_group_sum(e, scratch);
    if (lid == 0) energy[row] = (float)e;
  }

  // Continuous mode removes the mean of the pre-emphasised frame instead.
  float offset = 0.0f;
  if (remove_dc && !preemphasis_per_frame) {
    acc_t s = 0;
    for (int i = lid; i < frame_length; i += FRAME_WG) {
      const long p = start + i;
      if (p < valid_length)
        s += framing_sample(utt, p, valid_length) -
             a * framing_sample(utt, p - 1, valid_length);
    }
    offset = (float)(framing_group_sum(s, scratch) / frame_length);
  }

  __global float* out = frames + row * (long)fft_size;
  for (int i = lid; i < fft_size; i += FRAME_WG) {
    float y = 0.0f;
    if (i < frame_length) {
      const long p = start + i;
      if (preemphasis_per_frame) {
        const float x = framing_sample(utt, p, valid_length) - mean;
        const float prev =
            i == 0 ? x : framing_sample(utt, p - 1, valid_length) - mean;
        y = x - a * prev;
      } else {
        // The previous sample may lie before the frame; samples past the
        // end of the signal stay 0 (Sphinx pads after pre-emphasis).
        y = p < valid_length ? framing_sample(utt, p, valid_length) -
                                   a * framing_sample(utt, p - 1, valid_length)
                             : 0.0f;
        y -= offset;
      }
      y *= window[i];
    }
    out[i] = y;
  }
}
