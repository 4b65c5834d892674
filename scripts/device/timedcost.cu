// What a built-in kernel's self-timing costs, variant by variant (issue 20 point 4), on the
// kernels of the pipeline with the most (blur_h) and least (rgb_to_gray) work per byte.
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
#define KERNELS(NAME, BODY, IN) \
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
    const char* names[] = {"plain", "current", "nobarrier", "warps", "startonly", "endonly"};
    K blur[] = {blur_plain, blur_current, blur_nobarrier, blur_warps, blur_startonly, blur_endonly};
    K gray[] = {gray_plain, gray_current, gray_nobarrier, gray_warps, gray_startonly, gray_endonly};
    K* sets[] = {blur, gray}; const char* set_names[] = {"blur_h", "rgb_to_gray"};
    for (int k = 0; k < 2; ++k) {
        double sum[6] = {0}; double best[6]; for (int v = 0; v < 6; ++v) best[v] = 1e9;
        for (int round = 0; round < 5; ++round)
            for (int v = 0; v < 6; ++v) {
                for (int i = 0; i < 50; ++i) sets[k][v]<<<grid, block, 0, s>>>(in, out, w, h, times);
                cudaEventRecord(e0, s);
                for (int i = 0; i < 2000; ++i) sets[k][v]<<<grid, block, 0, s>>>(in, out, w, h, times);
                cudaEventRecord(e1, s); cudaEventSynchronize(e1);
                float ms; cudaEventElapsedTime(&ms, e0, e1);
                double us = ms * 1e3 / 2000; sum[v] += us; if (us < best[v]) best[v] = us;
            }
        for (int v = 0; v < 6; ++v)
            printf("%-12s %-10s mean %.3f us, best %.3f us, %+.3f us vs plain (best)\n", set_names[k], names[v], sum[v] / 5, best[v], best[v] - best[0]);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
