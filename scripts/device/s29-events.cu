// Device experiment (session 29, BENCHMARKS.md "Operation times"): what a timed native graph's
// event-record nodes cost, and where a graph's first kernel starts against them (issue 20
// point 5's root kernel; issue 17's traced pipeline). Two rgb_to_gray-sized kernels (1280x800
// pixels, 3 bytes in, 1 out, 256 threads a block) in a chain, shaped as:
//   0 K1 -> K2                                  (an untimed graph)
//   1 Es -> K1 -> K2 -> Ee                      (hrx's timed graph: a start event-record node
//                                                before every root, an end one after the leaves)
//   2 Es, K1 -> K2 -> Ee (Ee after Es and K2)   (the start event beside the root, not before it)
//   3 stream Es; K1 -> K2; stream Ee            (events recorded on the stream around the launch)
//   4 M -> K1 -> K2 -> Ee, Es -> M              (a one-thread marker kernel before the root)
//   5 Es -> K1 -> K2                            (the start event-record node alone)
//   6 K1 -> K2 -> Ee                            (the end event-record node alone)
//   9 Ms -> K1 -> K2 -> Me                      (marker kernels instead of events: the region
//                                                runs from Ms's reading to Me's)
//  10 Ms, K1 -> K2 -> Me (Me after Ms and K2)   (the start marker beside the root)
//  11 K1 -> K2 -> Me                            (the end marker alone)
// Each kernel's blocks write %globaltimer (first block's start, last block's end) into device
// memory; M writes its own reading. Per shape: 200 launches to warm up, then N launches, each
// launch + synchronize timed on the host; the spans read back after each.
// Build and run on the device: nvcc -O2 -arch=sm_90 -o events s29-events.cu && ./events SHAPE [N]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <algorithm>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static const int W = 1280, H = 800, PIX = W * H;
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
// t[0] min start, t[1] max end.
__global__ void gray(const unsigned char *rgb, unsigned char *out, unsigned long long *t) {
  if (threadIdx.x == 0) atomicMin(&t[0], gt());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < PIX) out[i] = (unsigned char)((rgb[3 * i] * 77 + rgb[3 * i + 1] * 150 + rgb[3 * i + 2] * 29) >> 8);
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&t[1], gt());
}
__global__ void marker(unsigned long long *t) { t[0] = gt(); }
static double now_us() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[v.size() / 2]; }
static double pct(std::vector<double> v, double p) { std::sort(v.begin(), v.end()); return v.empty() ? 0 : v[(size_t)(p * (v.size() - 1))]; }
int main(int argc, char **argv) {
  int shape = atoi(argv[1]); int n = argc > 2 ? atoi(argv[2]) : 2000;
  CK(cudaFree(0));
  unsigned char *rgb, *g1, *g2; unsigned long long *t; // t: K1 [0,1], K2 [2,3], M [4]
  CK(cudaMalloc(&rgb, 3 * PIX)); CK(cudaMalloc(&g1, PIX)); CK(cudaMalloc(&g2, 3 * PIX)); CK(cudaMalloc(&t, 64));
  CK(cudaMemset(rgb, 7, 3 * PIX));
  unsigned long long reset[8] = {~0ull, 0, ~0ull, 0, 0, 0, 0, 0};
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t es, ee; CK(cudaEventCreate(&es)); CK(cudaEventCreate(&ee));
  cudaGraph_t graph; CK(cudaGraphCreate(&graph, 0));
  int blocks = (PIX + 255) / 256;
  unsigned long long *t1 = t, *t2 = t + 2, *tm = t + 4, *te = t + 5;
  unsigned char *in2 = g2; // K2 reads 3*PIX bytes of g2 (written by nothing: same traffic as K1)
  void *a1[] = {&rgb, &g1, &t1}; void *a2[] = {&in2, &g1, &t2}; void *am[] = {&tm}; void *ae[] = {&te};
  cudaKernelNodeParams p1 = {}; p1.func = (void *)gray; p1.gridDim = dim3(blocks); p1.blockDim = dim3(256); p1.kernelParams = a1;
  cudaKernelNodeParams p2 = p1; p2.kernelParams = a2;
  cudaKernelNodeParams pm = {}; pm.func = (void *)marker; pm.gridDim = dim3(1); pm.blockDim = dim3(1); pm.kernelParams = am;
  cudaKernelNodeParams pe = pm; pe.kernelParams = ae;
  cudaGraphNode_t nes = nullptr, nee, k1, k2, m, me;
  std::vector<cudaGraphNode_t> deps;
  if (shape == 1 || shape == 2 || shape == 4 || shape == 5) CK(cudaGraphAddEventRecordNode(&nes, graph, nullptr, 0, es));
  if (shape == 4) { CK(cudaGraphAddKernelNode(&m, graph, &nes, 1, &pm)); deps = {m}; }
  else if (shape == 9 || shape == 10) { CK(cudaGraphAddKernelNode(&m, graph, nullptr, 0, &pm)); if (shape == 9) deps = {m}; }
  else if (shape == 1 || shape == 5) deps = {nes};
  CK(cudaGraphAddKernelNode(&k1, graph, deps.data(), deps.size(), &p1));
  CK(cudaGraphAddKernelNode(&k2, graph, &k1, 1, &p2));
  if (shape == 1 || shape == 4 || shape == 6) CK(cudaGraphAddEventRecordNode(&nee, graph, &k2, 1, ee));
  if (shape == 2) { cudaGraphNode_t d[2] = {nes, k2}; CK(cudaGraphAddEventRecordNode(&nee, graph, d, 2, ee)); }
  if (shape == 9 || shape == 11) CK(cudaGraphAddKernelNode(&me, graph, &k2, 1, &pe));
  if (shape == 10) { cudaGraphNode_t d[2] = {m, k2}; CK(cudaGraphAddKernelNode(&me, graph, d, 2, &pe)); }
  cudaGraphExec_t exec; CK(cudaGraphInstantiate(&exec, graph, 0));
  bool events = shape >= 1 && shape <= 4, markers = shape == 9 || shape == 10;
  std::vector<double> wall, region, s1, gap, s2, lead, tail, mk;
  for (int i = 0; i < n + 200; i++) {
    CK(cudaMemcpyAsync(t, reset, sizeof reset, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s));
    double w0 = now_us();
    if (shape == 3) CK(cudaEventRecord(es, s));
    CK(cudaGraphLaunch(exec, s));
    if (shape == 3) CK(cudaEventRecord(ee, s));
    CK(cudaStreamSynchronize(s));
    double w1 = now_us();
    if (i < 200) continue;
    unsigned long long h[8]; CK(cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost));
    wall.push_back(w1 - w0);
    s1.push_back((h[1] - h[0]) / 1e3); gap.push_back(((double)h[2] - (double)h[1]) / 1e3); s2.push_back((h[3] - h[2]) / 1e3);
    if (shape == 4 || shape == 9) mk.push_back(((double)h[0] - (double)h[4]) / 1e3);
    if (markers) { double r = ((double)h[5] - (double)h[4]) / 1e3; region.push_back(r); lead.push_back(r - (h[3] - h[0]) / 1e3); }
    if (shape == 11) tail.push_back(((double)h[5] - (double)h[3]) / 1e3);
    if (events) { float ms; CK(cudaEventElapsedTime(&ms, es, ee)); region.push_back(ms * 1e3);
      double chain = (h[3] - h[0]) / 1e3; lead.push_back(ms * 1e3 - chain); }
  }
  printf("shape %d n %d: wall %.2f [p10 %.2f p90 %.2f] us; K1 %.3f gap %.3f K2 %.3f us", shape, n, med(wall), pct(wall, .1), pct(wall, .9), med(s1), med(gap), med(s2));
  if (events || markers) printf("; region %.2f us, region - (K1 start..K2 end) %.2f us", med(region), med(lead));
  if (shape == 4 || shape == 9) printf("; marker -> K1 start %.3f us", med(mk));
  if (shape == 11) printf("; K2 end -> end marker %.3f us", med(tail));
  printf("\n");
  return 0;
}
