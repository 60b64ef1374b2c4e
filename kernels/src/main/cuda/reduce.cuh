// Treeline's N-input reducers: dst[i] = src0[i] op src1[i] op ... op src{n-1}[i], for every data
// type x op, n = 1..MAX_INPUTS. Half types accumulate in f32 and round once; inputs combine in
// the order given, so ranks that reduce the same inputs in the same order get the same bits (as
// on the host). n = 1 with finish is a copy that divides (AVG over one input).
//
// Memory-level parallelism is what makes this kernel fast: every thread first issues the 16-byte
// loads (uint4, __ldg) of all n inputs for VPT vectors (up to 16 loads in flight: the predicates
// k < n are uniform, so the compiler unrolls and issues them together), then reduces, then stores
// 16 bytes per vector. Consecutive threads take consecutive vectors, so every load instruction of
// a warp reads 512 contiguous bytes. VPT = 2-4 gives 8-32 elements per thread per step; the register
// budget (16 vectors, no spills: checked with nvcc --resource-usage) is what seed 004's "more
// spills registers" limits. With vec = 1 (every pointer 16-byte aligned: the launcher checks) the
// vectors cover count / PER elements and a scalar loop takes the remaining few; with vec = 0 the
// scalar loop takes everything.
#pragma once
#include "common.cuh"

// VPT vectors per thread per step over at most MAXN inputs: the loads in flight per thread are
// VPT x n, so few inputs take more vectors each (n <= 2: 4 x 2, n <= 4: 3 x 4, else 2 x 8; every
// variant holds at most 16 vectors in registers)
template <typename T, typename Op, int VPT, int MAXN>
__device__ __forceinline__ void reduceKernel(T* __restrict__ dst, const Ptrs& in, int n,
    long long count, int vec, int finish, int divisor) {
  typedef typename Acc<T>::type A;
  constexpr int PER = 16 / sizeof(T); // elements per 16-byte vector
  const long long tid = blockIdx.x * (long long) blockDim.x + threadIdx.x;
  const long long threads = (long long) gridDim.x * blockDim.x;
  const long long vectors = vec ? count / PER : 0;
  for (long long base = tid; base < vectors; base += threads * VPT) {
    uint4 x[VPT][MAXN];
#pragma unroll
    for (int u = 0; u < VPT; u++) {
      const long long v = base + u * threads;
#pragma unroll
      for (int k = 0; k < MAXN; k++) {
        if (k < n && v < vectors) {
          x[u][k] = __ldg(reinterpret_cast<const uint4*>(in.p[k]) + v);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < VPT; u++) {
      const long long v = base + u * threads;
      if (v < vectors) {
        A acc[PER];
        const T* xs = reinterpret_cast<const T*>(&x[u][0]);
#pragma unroll
        for (int e = 0; e < PER; e++) {
          acc[e] = load<T>(xs[e]);
        }
#pragma unroll
        for (int k = 1; k < MAXN; k++) {
          if (k < n) {
            const T* ys = reinterpret_cast<const T*>(&x[u][k]);
#pragma unroll
            for (int e = 0; e < PER; e++) {
              acc[e] = Op::f(acc[e], load<T>(ys[e]));
            }
          }
        }
        uint4 o;
        T* os = reinterpret_cast<T*>(&o);
#pragma unroll
        for (int e = 0; e < PER; e++) {
          os[e] = store<T>(finish ? finishValue<T>(acc[e], divisor) : acc[e]);
        }
        reinterpret_cast<uint4*>(dst)[v] = o;
      }
    }
  }
  for (long long i = vectors * PER + tid; i < count; i += threads) {
    A acc = load<T>(static_cast<const T*>(in.p[0])[i]);
#pragma unroll
    for (int k = 1; k < MAX_INPUTS; k++) {
      if (k < n) {
        acc = Op::f(acc, load<T>(static_cast<const T*>(in.p[k])[i]));
      }
    }
    dst[i] = store<T>(finish ? finishValue<T>(acc, divisor) : acc);
  }
}

// two blocks of 256 per SM at most 128 registers a thread; f64 min/max would spill there
#define KERNEL(NAME, T, OP) \
  extern "C" __global__ void __launch_bounds__(256, sizeof(T) == 8 ? 1 : 2) reduce_##NAME( \
      T* dst, const Ptrs in, \
      int n, long long count, int vec, int finish, int divisor) { \
    if (n <= 2) { \
      reduceKernel<T, OP, 8, 2>(dst, in, n, count, vec, finish, divisor); \
    } else if (n <= 4) { \
      reduceKernel<T, OP, 3, 4>(dst, in, n, count, vec, finish, divisor); \
    } else { \
      reduceKernel<T, OP, 2, 8>(dst, in, n, count, vec, finish, divisor); \
    } \
  }
#define ALL_OPS(TNAME, T) \
  KERNEL(TNAME##_sum, T, Sum) KERNEL(TNAME##_prod, T, Prod) \
  KERNEL(TNAME##_min, T, Min) KERNEL(TNAME##_max, T, Max)

ALL_OPS(f32, float)
ALL_OPS(f64, double)
ALL_OPS(f16, __half)
ALL_OPS(bf16, __nv_bfloat16)
ALL_OPS(i32, int32_t)
ALL_OPS(i64, long long)
ALL_OPS(u8, uint8_t)
