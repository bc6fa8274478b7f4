// gemm_nt: C[rows x m] = A[rows x k] * B[m x k]^T, A and C starting at float
// offsets a_off and c_off (row blocks of larger buffers).
//
// Each GEMM_TILE x GEMM_TILE work-group computes one tile of C, walking k in
// steps of GEMM_TILE with the matching tiles of A and B staged in local
// memory. Both tiles are loaded along k, so both global reads are contiguous
// (B is stored m x k). Out-of-range elements load as 0, so any sizes work.
__kernel __attribute__((reqd_work_group_size(GEMM_TILE, GEMM_TILE, 1)))
void gemm_nt(__global const float* a, ulong a_off, long rows, int k,
             __global const float* b, int m, __global float* c, ulong c_off) {
  // +1 column of padding keeps the transposed reads of b_tile free of local
  // memory bank conflicts.
  __local float a_tile[GEMM_TILE][GEMM_TILE + 1];
  __local float b_tile[GEMM_TILE][GEMM_TILE + 1];
  // Row tiles run along dimension 0, which every driver lets grow largest
  // (rows can number millions); the fast local index tx runs along k for
  // the loads and along C's columns for the store, so both are contiguous.
  const int tx = get_local_id(0);  // column of C within the tile
  const int ty = get_local_id(1);  // row of C within the tile
  const long row0 = (long)get_group_id(0) * GEMM_TILE;
  const int col0 = get_group_id(1) * GEMM_TILE;
  const long row = row0 + ty;
  const int col = col0 + tx;
  const long b_row = col0 + ty;  // row of B that this item stages
  a += a_off;
  c += c_off;

  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += GEMM_TILE) {
    const int kk = k0 + tx;
    a_tile[ty][tx] = (row < rows && kk < k) ? a[row * k + kk] : 0.0f;
    b_tile[ty][tx] = (b_row < m && kk < k) ? b[b_row * k + kk] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    // Summing each tile's products before adding them to the total keeps
    // the rounding error growing with k / GEMM_TILE rather than with k.
    float tile_sum = 0.0f;
    for (int j = 0; j < GEMM_TILE; ++j) tile_sum += a_tile[ty][j] * b_tile[tx][j];
    acc += tile_sum;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < rows && col < m) c[row * m + col] = acc;
}
