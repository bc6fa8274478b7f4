// Definitions shared by every kernel file. The host builds all .cl files as
// one program with these macros set:
//   GPUSPEECH_FP64  1 when the device has cl_khr_fp64 (reductions and the
//                   LPC recursion then run in double, like the CPU backend)
//   GEMM_TILE       edge of the square GEMM work-group tile
//   FRAME_WG        work-group size of frame_signal (a power of two)
#if GPUSPEECH_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif
