// What a built-in kernel's self-timing costs, variant by variant (issue 20 point 4), on two
// of the pipeline's kernels (blur_h, rgb_to_gray; 1280x800, 16x16 blocks). "current" is what
// src/kernels/cuda.rs builds; the others were tried (BENCHMARKS.md, session 20).
// Each variant launched 2000 times back to back on one stream, timed by events: the mean
// per launch, against the plain kernel's, interleaved in 5 rounds.
//   nvcc -O3 -arch=sm_90 -o timedcost timedcost.cu && ./timedcost
#include <cstdio>
#include <cstdint>
typedef unsigned char u8; typedef unsigned int u32; typedef unsigned long long u64;
__device__ __forceinline__ u64 gt() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ u32 blk() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
__device__ __forceinline__ bool t0() { return (threadIdx.x | threadIdx.y | threadIdx.z) == 0; }
__device__ __forceinline__ u64 clampu(long long v, u64 last) { return v < 0 ? 0 : ((u64)v > last ? last : (u64)v); }
__device__ __forceinline__ u8 b5(u32 a, u32 b, u32 c, u32 d, u32 e) { return (u8)((a + e + 4u * (b + d) + 6u * c + 8u) >> 4); }
__device__ __forceinline__ void blur_h(const u8* input, u8* out, u32 width, u32 height) {
    if (width == 0) return;
    const u64 last = width - 1;
    for (u64 y = (u64)blockIdx.y * blockDim.y + threadIdx.y; y < height; y += (u64)gridDim.y * blockDim.y) {
        const u8* row = input + y * width;
        for (u64 x = (u64)blockIdx.x * blockDim.x + threadIdx.x; x < width; x += (u64)gridDim.x * blockDim.x) {
            const long long c = (long long)x;
            out[y * width + x] = b5(row[clampu(c - 2, last)], row[clampu(c - 1, last)], row[x], row[clampu(c + 1, last)], row[clampu(c + 2, last)]);
        }
    }
}
__device__ __forceinline__ void rgb(const u8* in, u8* gray, u32 width, u32 height) {
    for (u64 y = (u64)blockIdx.y * blockDim.y + threadIdx.y; y < height; y += (u64)gridDim.y * blockDim.y)
        for (u64 x = (u64)blockIdx.x * blockDim.x + threadIdx.x; x < width; x += (u64)gridDim.x * blockDim.x) {
            const u64 i = y * width + x;
            const u32 r = in[3 * i], g = in[3 * i + 1], b = in[3 * i + 2];
            gray[i] = (u8)((77u * r + 150u * g + 29u * b + 128u) >> 8);
        }
}
#define BEGIN32 { const u32 b = blk(); if (b < 32 && t0()) atomicMax(times + b * 16, ~gt()); }
#define END_BAR { __syncthreads(); if (t0()) atomicMax(times + (blk() % 32) * 16 + 1, gt()); }
#define END_T0 { if (t0()) atomicMax(times + (blk() % 32) * 16 + 1, gt()); }
#define END_WARP { if ((threadIdx.x + blockDim.x * threadIdx.y) % 32 == 0) atomicMax(times + (blk() % 32) * 16 + 1, gt()); }
#define DEFER_BEGIN u64 start = 0; { const u32 b = blk(); if (b < 32 && t0()) start = gt(); }
#define DEFER_END_BAR { __syncthreads(); if (t0()) { const u32 b = blk(); if (b < 32) atomicMax(times + b * 16, ~start); atomicMax(times + (b % 32) * 16 + 1, gt()); } }
#define DEFER_END_LAST { const u32 b = blk(), n = gridDim.x * gridDim.y * gridDim.z; if (b < 32 || b + n / 4 >= n) { __syncthreads(); if (t0()) { if (b < 32) atomicMax(times + b * 16, ~start); if (b + n / 4 >= n) atomicMax(times + (b % 32) * 16 + 1, gt()); } } }
#define B0_BEGIN { if (blk() == 0 && t0()) atomicMax(times, ~gt()); }
#define COUNT_END { __syncthreads(); if (t0()) { __threadfence(); const u32 n = gridDim.x * gridDim.y * gridDim.z; if (atomicAdd((unsigned int*)(times + 2), 1u) == n - 1) { times[1] = gt(); times[2] = 0; } } }
#define B0_ATOMIC_ONLY { if (blk() == 0 && t0()) atomicMax(times, 1ull); }
#define B0_TIMER_ONLY { if (blk() == 0 && t0()) { u64 t = gt(); if (t == 0) o[0] = 1; } }
#define B0_STORE_ONLY { if (blk() == 0 && t0()) times[0] = 5; }
#define LEAN_BEGIN { if (threadIdx.x == 0) { if ((threadIdx.y | threadIdx.z) == 0) { const u32 b = blk(); if (b < 32) atomicMax(times + b * 16, ~gt()); } } }
#define LEAN_END { __syncthreads(); if (threadIdx.x == 0) { if ((threadIdx.y | threadIdx.z) == 0) atomicMax(times + (blk() % 32) * 16 + 1, gt()); } }
#define LEAN_END_NOBAR { if (threadIdx.x == 0) { if ((threadIdx.y | threadIdx.z) == 0) atomicMax(times + (blk() % 32) * 16 + 1, gt()); } }
#define KERNELS(NAME, BODY, IN) \
__global__ void NAME##_lean(const u8* a, u8* o, u32 w, u32 h, u64* times) { LEAN_BEGIN BODY(a, o, w, h); LEAN_END } \
__global__ void NAME##_leannobar(const u8* a, u8* o, u32 w, u32 h, u64* times) { LEAN_BEGIN BODY(a, o, w, h); LEAN_END_NOBAR } \
__global__ void NAME##_leanstart(const u8* a, u8* o, u32 w, u32 h, u64* times) { LEAN_BEGIN BODY(a, o, w, h); } \
__global__ void NAME##_b0atomic(const u8* a, u8* o, u32 w, u32 h, u64* times) { B0_ATOMIC_ONLY BODY(a, o, w, h); } \
__global__ void NAME##_b0timer(const u8* a, u8* o, u32 w, u32 h, u64* times) { B0_TIMER_ONLY BODY(a, o, w, h); } \
__global__ void NAME##_b0store(const u8* a, u8* o, u32 w, u32 h, u64* times) { B0_STORE_ONLY BODY(a, o, w, h); } \
__global__ void NAME##_b0only(const u8* a, u8* o, u32 w, u32 h, u64* times) { B0_BEGIN BODY(a, o, w, h); } \
__global__ void NAME##_b0count(const u8* a, u8* o, u32 w, u32 h, u64* times) { B0_BEGIN BODY(a, o, w, h); COUNT_END } \
__global__ void NAME##_defer(const u8* a, u8* o, u32 w, u32 h, u64* times) { DEFER_BEGIN BODY(a, o, w, h); DEFER_END_BAR } \
__global__ void NAME##_deferlast(const u8* a, u8* o, u32 w, u32 h, u64* times) { DEFER_BEGIN BODY(a, o, w, h); DEFER_END_LAST } \
__global__ void NAME##_plain(const u8* a, u8* o, u32 w, u32 h, u64* times) { BODY(a, o, w, h); } \
__global__ void NAME##_current(const u8* a, u8* o, u32 w, u32 h, u64* times) { BEGIN32 BODY(a, o, w, h); END_BAR } \
__global__ void NAME##_nobarrier(const u8* a, u8* o, u32 w, u32 h, u64* times) { BEGIN32 BODY(a, o, w, h); END_T0 } \
__global__ void NAME##_warps(const u8* a, u8* o, u32 w, u32 h, u64* times) { BEGIN32 BODY(a, o, w, h); END_WARP } \
__global__ void NAME##_startonly(const u8* a, u8* o, u32 w, u32 h, u64* times) { BEGIN32 BODY(a, o, w, h); } \
__global__ void NAME##_endonly(const u8* a, u8* o, u32 w, u32 h, u64* times) { BODY(a, o, w, h); END_BAR }
KERNELS(blur, blur_h, 1)
KERNELS(gray, rgb, 3)
typedef void (*K)(const u8*, u8*, u32, u32, u64*);
int main() {
    const u32 w = 1280, h = 800;
    u8 *in, *out; u64* times;
    cudaMalloc(&in, w * h * 3); cudaMalloc(&out, w * h); cudaMalloc(&times, 32 * 16 * 8);
    cudaMemset(in, 7, w * h * 3); cudaMemset(times, 0, 32 * 16 * 8);
    cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    dim3 grid(80, 50), block(16, 16);
    const char* names[] = {"plain", "current", "nobarrier", "warps", "startonly", "endonly", "defer",
                           "deferlast", "b0only", "b0count", "b0atomic", "b0timer", "b0store", "lean",
                           "leannobar", "leanstart"};
    const int V = 16;
    K blur[] = {blur_plain, blur_current, blur_nobarrier, blur_warps, blur_startonly, blur_endonly,
                blur_defer, blur_deferlast, blur_b0only, blur_b0count, blur_b0atomic, blur_b0timer,
                blur_b0store, blur_lean, blur_leannobar, blur_leanstart};
    K gray[] = {gray_plain, gray_current, gray_nobarrier, gray_warps, gray_startonly, gray_endonly,
                gray_defer, gray_deferlast, gray_b0only, gray_b0count, gray_b0atomic, gray_b0timer,
                gray_b0store, gray_lean, gray_leannobar, gray_leanstart};
    K* sets[] = {blur, gray}; const char* set_names[] = {"blur_h", "rgb_to_gray"};
    for (int k = 0; k < 2; ++k) {
        double sum[16] = {0}; double best[16]; for (int v = 0; v < V; ++v) best[v] = 1e9;
        for (int round = 0; round < 5; ++round)
            for (int v = 0; v < V; ++v) {
                for (int i = 0; i < 50; ++i) sets[k][v]<<<grid, block, 0, s>>>(in, out, w, h, times);
                cudaEventRecord(e0, s);
                for (int i = 0; i < 2000; ++i) sets[k][v]<<<grid, block, 0, s>>>(in, out, w, h, times);
                cudaEventRecord(e1, s); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1);
                double us = ms * 1e3 / 2000; sum[v] += us; if (us < best[v]) best[v] = us;
            }
        for (int v = 0; v < V; ++v)
            printf("%-12s %-10s mean %.3f us, best %.3f us, %+.3f us vs plain (best)\n", set_names[k], names[v], sum[v] / 5, best[v], best[v] - best[0]);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
