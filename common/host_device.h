// GPUSPEECH_HOST_DEVICE: a function that the host code and the CUDA
// kernels share (the same source, so the same floats and hashes on both).
#pragma once

#ifndef GPUSPEECH_HOST_DEVICE
#ifdef __CUDACC__
#define GPUSPEECH_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GPUSPEECH_HOST_DEVICE inline
#endif
#endif
