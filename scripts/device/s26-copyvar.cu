// Device experiment (session 26, BENCHMARKS.md "Copies and the CPU's caches"): the device time of a
// 3,072,000-byte upload from pinned memory (cudaHostAlloc, mapped and portable, as hrx allocates
// host-visible buffers) just written by the host, by how it was written and what another core
// does with the bytes meanwhile; 300 copies after 20 discarded, median [p10, p90].
// Build and run on the device: nvcc -O2 -Xcompiler -mclflushopt -o copyvar s26-copyvar.cu -lpthread
//   ./copyvar NT HASH GAP_US [DOWN]
// NT 1: non-temporal stores (movntdq), 0: memcpy. HASH 0: none; 1: another thread reads (hashes)
// the uploaded buffer, started GAP_US before the copy; 2: as 1, evicting each 4 KiB read
// (clflushopt); 3: as 1 on another, freshly written buffer. DOWN 1: also a 3 MB download into a
// second pinned buffer after each upload; 2: then read (hashed) by another thread; 3: read and
// evicted.
// 3,072,000-byte H2D copy from pinned memory just written by the host: how the write and a
// concurrent reader (the trace writer's hash) move its device time.
#include <cuda_runtime.h>
#include <emmintrin.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <atomic>
#include <algorithm>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static const size_t LEN = 3072000;
static char *host; static char *out; static char *other; static char *volatile target; static std::atomic<int> go{0}; static std::atomic<unsigned long> sink{0};
static double now_us() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void *hasher(void *) {
  for (;;) { int g; while ((g = go.load()) == 0) {} if (g < 0) return nullptr;
    unsigned long s = 0; const unsigned long *p = (const unsigned long *)target;
    for (size_t c = 0; c < LEN / 8; c += 512) {
      for (size_t i = c; i < c + 512 && i < LEN / 8; i++) s += p[i] * 0x9E3779B97F4A7C15ull;
      if (g == 2) for (size_t i = c; i < c + 512 && i < LEN / 8; i += 8) _mm_clflushopt((void *)(p + i));
    }
    if (g == 2) _mm_sfence();
    sink += s; go.store(0); }
}
static void nt_copy(char *dst, const char *src, size_t len) {
  size_t i = 0;
  for (; i + 64 <= len; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(src + i)), b = _mm_loadu_si128((const __m128i *)(src + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32)), d = _mm_loadu_si128((const __m128i *)(src + i + 48));
    _mm_stream_si128((__m128i *)(dst + i), a); _mm_stream_si128((__m128i *)(dst + i + 16), b);
    _mm_stream_si128((__m128i *)(dst + i + 32), c); _mm_stream_si128((__m128i *)(dst + i + 48), d);
  }
  memcpy(dst + i, src + i, len - i); _mm_sfence();
}
int main(int argc, char **argv) {
  int nt = atoi(argv[1]); int hash = atoi(argv[2]); int gap_us = atoi(argv[3]); int down = argc > 4 ? atoi(argv[4]) : 0; std::vector<float> dn; int n = 300;
  CK(cudaFree(0));
  CK(cudaHostAlloc((void **)&host, LEN + 4096, cudaHostAllocMapped | cudaHostAllocPortable));
  char *src = (char *)malloc(LEN); for (size_t i = 0; i < LEN; i++) src[i] = (char)(i * 31);
  memset(host, 2, LEN); CK(cudaHostAlloc((void **)&out, LEN + 4096, cudaHostAllocMapped | cudaHostAllocPortable)); memset(out, 3, LEN); CK(cudaHostAlloc((void **)&other, LEN + 4096, cudaHostAllocMapped | cudaHostAllocPortable)); memset(other, 4, LEN);
  pthread_t t; pthread_create(&t, nullptr, hasher, nullptr);
  void *dev; CK(cudaMalloc(&dev, LEN));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<float> up; std::vector<double> w;
  for (int i = 0; i < n + 20; i++) {
    double t0 = now_us();
    if (nt) nt_copy(host, src, LEN); else memcpy(host, src, LEN);
    double t1 = now_us();
    if (hash == 3) nt_copy(other, src, LEN);
    if (hash) { target = hash == 3 ? other : host; go.store(hash == 3 ? 1 : hash); }
    if (gap_us) { double until = now_us() + gap_us; while (now_us() < until) {} }
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dev, host, LEN, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(b, s));
    CK(cudaStreamSynchronize(s));
    while (go.load() != 0) {}
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    if (down) {
      CK(cudaEventRecord(a, s));
      CK(cudaMemcpyAsync(out, dev, LEN, cudaMemcpyDeviceToHost, s));
      CK(cudaEventRecord(b, s));
      CK(cudaStreamSynchronize(s));
      float dm; CK(cudaEventElapsedTime(&dm, a, b)); if (i >= 20) dn.push_back(dm * 1000);
      if (down > 1) { target = out; go.store(down - 1); while (go.load() != 0) {} }
    }
    if (i >= 20) { up.push_back(ms * 1000); w.push_back(t1 - t0); }
  }
  go.store(-1); pthread_join(t, nullptr);
  std::sort(up.begin(), up.end()); std::sort(w.begin(), w.end());
  printf("nt %d hash %d gap %3d down %d: up med %.1f p10 %.1f p90 %.1f | host write med %.1f us", nt, hash, gap_us, down,
         up[n/2], up[n/10], up[9*n/10], w[n/2]);
  if (down) { std::sort(dn.begin(), dn.end()); printf(" | down med %.1f p10 %.1f p90 %.1f", dn[n/2], dn[n/10], dn[9*n/10]); }
  printf("\n");
  return 0;
}
