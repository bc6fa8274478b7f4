// Element-wise operations: Backend::apply and Backend::log_into_column.

// Operation codes; the host maps gpuspeech::UnaryOp onto these explicitly.
#define UNARY_LOG_FLOOR 0
#define UNARY_LOG_OFFSET 1
#define UNARY_LOG_CLAMP 2
#define UNARY_POW 3
#define UNARY_SQRT 4

__kernel void apply_unary(__global float* x, ulong n, int op, float param) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  float r;
  switch (op) {
    case UNARY_LOG_FLOOR: r = v > 0.0f ? log(v) : param; break;
    case UNARY_LOG_OFFSET: r = log(v + param); break;
    case UNARY_LOG_CLAMP: r = log(fmax(v, param)); break;
    case UNARY_POW: r = v >= 0.0f ? pow(v, param) : 0.0f; break;
    default: r = sqrt(fmax(v, 0.0f)); break;
  }
  x[i] = r;
}

__kernel void log_into_column(__global const float* src, long rows,
                              float param, __global float* dst, int dst_cols,
                              int dst_col) {
  const size_t r = get_global_id(0);
  if ((long)r >= rows) return;
  dst[r * (long)dst_cols + dst_col] = log(fmax(src[r], param));
}
