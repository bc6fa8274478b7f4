// power_spectrum's second half: clFFT leaves each row's bins 0..fft_size/2 as
// interleaved (re, im) pairs; this turns them into |X|^2 or |X|.
// The host transforms large batches in chunks; out_off places a chunk's
// rows in the full spectrum.
__kernel void hermitian_to_power(__global const float2* bins, ulong n,
                                 int magnitude, __global float* out,
                                 ulong out_off) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float2 z = bins[i];
  const float p = z.x * z.x + z.y * z.y;
  out[out_off + i] = magnitude ? sqrt(p) : p;
}
