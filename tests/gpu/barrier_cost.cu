// Micro-benchmark for docs/search-lanes-plan.md (question 5): the cost of
// one grid.sync() in a cooperative launch of 1 or 2 blocks/SM x 256
// threads, against cluster.sync() for cluster sizes 1..16 (one cluster, and
// as many as fit), __syncthreads(), and a back-to-back launch. Before each
// barrier thread 0 of every block makes one uncontended global atomic, so
// the barriers that order memory (grid and cluster) wait for it as the
// search's phases wait for their writes. Not built by meson; on a GPU
// machine:
//   nvcc -O2 -arch=sm_90 -std=c++17 tests/gpu/barrier_cost.cu -o /tmp/bc && /tmp/bc
#include <cooperative_groups.h>
#include <cstdio>
#include <vector>
namespace cg = cooperative_groups;

__global__ void grid_sync_kernel(int iters, unsigned* sink) {
  cg::grid_group g = cg::this_grid();
  for (int i = 0; i < iters; ++i) {
    if (threadIdx.x == 0) atomicAdd(&sink[(blockIdx.x & 2047) * 32], 1u);
    g.sync();
  }
}

__global__ void cluster_sync_kernel(int iters, unsigned* sink) {
  cg::cluster_group c = cg::this_cluster();
  for (int i = 0; i < iters; ++i) {
    if (threadIdx.x == 0) atomicAdd(&sink[(blockIdx.x & 2047) * 32], 1u);
    c.sync();
  }
}

__global__ void block_sync_kernel(int iters, unsigned* sink) {
  for (int i = 0; i < iters; ++i) {
    if (threadIdx.x == 0) atomicAdd(&sink[(blockIdx.x & 2047) * 32], 1u);
    __syncthreads();
  }
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

// Runs `launch` once to warm up, then times a second run with events.
// Returns the milliseconds, or a negative value after printing an error.
template <class Launch>
float warm_then_time(cudaEvent_t a, cudaEvent_t b, Launch launch) {
  cudaError_t e = launch();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaEventRecord(a);
  if (e == cudaSuccess) e = launch();
  if (e == cudaSuccess) e = cudaEventRecord(b);
  if (e == cudaSuccess) e = cudaEventSynchronize(b);
  float ms = -1.0f;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
  if (e != cudaSuccess) {
    std::printf("timed launch: %s\n", cudaGetErrorString(e));
    return -1.0f;
  }
  return ms;
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  unsigned* sink;
  CK(cudaMalloc(&sink, 2048 * 32 * sizeof(unsigned)));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  const int threads = 256;
  for (int per_sm : {1, 2}) {
    const int blocks = per_sm * p.multiProcessorCount;
    for (int iters : {100, 2000}) {
      void* args[] = {&iters, &sink};
      const float ms = warm_then_time(a, b, [&] {
        return cudaLaunchCooperativeKernel((void*)grid_sync_kernel, blocks, threads, args, 0, 0);
      });
      if (ms < 0) return 1;
      std::printf("grid.sync    %3d blocks            iters %5d: %8.3f ms, %6.2f us per barrier\n",
                  blocks, iters, ms, 1000.0 * ms / iters);
    }
  }
  CK(cudaFuncSetAttribute(cluster_sync_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (int C : {1, 2, 4, 8, 16}) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = C;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(threads);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cfg.gridDim = dim3(C);
    int max_clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&max_clusters, (void*)cluster_sync_kernel, &cfg));
    for (int clusters : {1, max_clusters}) {
      cfg.gridDim = dim3(C * clusters);
      for (int iters : {2000}) {
        const float ms = warm_then_time(
            a, b, [&] { return cudaLaunchKernelEx(&cfg, cluster_sync_kernel, iters, sink); });
        if (ms < 0) return 1;
        std::printf("cluster.sync C=%2d clusters %4d (max %4d) iters %5d: %8.3f ms, %6.2f us per barrier\n",
                    C, clusters, max_clusters, iters, ms, 1000.0 * ms / iters);
      }
    }
  }
  {
    int iters = 2000;
    const int blocks = 2 * p.multiProcessorCount;
    const float ms = warm_then_time(a, b, [&] {
      block_sync_kernel<<<blocks, threads>>>(iters, sink);
      return cudaGetLastError();
    });
    if (ms < 0) return 1;
    std::printf("__syncthreads %3d blocks            iters %5d: %8.3f ms, %6.2f us per barrier\n",
                blocks, iters, ms, 1000.0 * ms / iters);
  }
  // Launch overhead: an empty-ish kernel, back to back.
  {
    int iters = 1;
    const int n = 1000;
    cudaEventRecord(a);
    for (int k = 0; k < n; ++k) block_sync_kernel<<<264, threads>>>(iters, sink);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    std::printf("back-to-back launches of 264 blocks: %6.2f us per launch\n", 1000.0 * ms / n);
  }
  return 0;
}
