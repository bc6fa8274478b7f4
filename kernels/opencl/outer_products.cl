// Backend::extended_outer_products: the products xi_p * xi_q (p <= q) of
// each row's extended vector xi = [x; 1], pair-major (out[pair * rows + r])
// so that consecutive work-items write consecutive floats. One work-item a
// row; the row's values are re-read from global memory (cached), as dim is
// only known at run time.
__kernel void extended_outer_products(__global const float* x, long rows, int dim,
                                      __global float* out) {
  const long r = (long)get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + r * (long)dim;
  long pair = 0;
  for (int p = 0; p <= dim; ++p) {
    const float xp = p < dim ? xr[p] : 1.0f;
    for (int q = p; q <= dim; ++q, ++pair) out[pair * rows + r] = xp * (q < dim ? xr[q] : 1.0f);
  }
}
