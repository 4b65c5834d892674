// The resolution of %globaltimer on this GPU (issue 20 point 4: can a kernel time itself?):
// one thread reads it in a loop and records the steps it sees; printed as the smallest and
// median step in ns, with and without a CUPTI-free run. nvcc -o globaltimer globaltimer.cu
#include <cstdio>
#include <algorithm>
#include <vector>
__global__ void steps(unsigned long long* out, int n) {
  unsigned long long last, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
  int i = 0;
  while (i < n) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now != last) { out[i++] = now - last; last = now; }
  }
}
int main() {
  const int n = 1000;
  unsigned long long* d; cudaMalloc(&d, n * 8);
  steps<<<1, 1>>>(d, n); cudaDeviceSynchronize();
  std::vector<unsigned long long> h(n);
  cudaMemcpy(h.data(), d, n * 8, cudaMemcpyDeviceToHost);
  std::sort(h.begin(), h.end());
  printf("globaltimer steps: min %llu ns, median %llu ns, max %llu ns (n=%d)\n", h[0], h[n / 2], h[n - 1], n);
  return 0;
}
