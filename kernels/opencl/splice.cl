// splice: dst row t of each utterance is [x[t-left] .. x[t+right]], frame
// indices clamped to the utterance. One work-item per output float.
__kernel void splice(__global const float* src, long rows_per_utt, int cols,
                     int left, int right, __global float* dst, ulong total) {
  const size_t i = get_global_id(0);
  if (i >= total) return;
  const long width = (long)(left + right + 1) * cols;
  const long row = i / width;
  const long within = i - row * width;
  const long j = within / cols;  // 0..left+right
  const long col = within - j * cols;
  const long u = row / rows_per_utt;
  const long t = row - u * rows_per_utt;
  long s = t - left + j;
  s = s < 0 ? 0 : (s >= rows_per_utt ? rows_per_utt - 1 : s);
  dst[i] = src[(u * rows_per_utt + s) * cols + col];
}
