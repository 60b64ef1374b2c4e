// Types, accumulators and operators shared by Treeline's kernels.
#pragma once
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define MAX_INPUTS 8

// Up to MAX_INPUTS device pointers passed by value as one kernel parameter (no table in device
// memory to copy before each launch, and no local-memory array indexed at run time).
struct Ptrs {
  const void* p[MAX_INPUTS];
};

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <> struct Acc<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ __forceinline__ typename Acc<T>::type load(T v) { return v; }
template <> __device__ __forceinline__ float load<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float load<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T store(typename Acc<T>::type v) { return v; }
template <> __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

struct Sum { template <typename A> __device__ static A f(A a, A b) { return a + b; } };
struct Prod { template <typename A> __device__ static A f(A a, A b) { return a * b; } };
struct Min { template <typename A> __device__ static A f(A a, A b) { return b < a ? b : a; } };
struct Max { template <typename A> __device__ static A f(A a, A b) { return b > a ? b : a; } };

// finish divides by the divisor (AVG); integers divide the value wrapped in their width
template <typename T> __device__ __forceinline__ typename Acc<T>::type
finishValue(typename Acc<T>::type a, int divisor) {
  return a / (typename Acc<T>::type) divisor;
}
template <> __device__ __forceinline__ uint8_t finishValue<uint8_t>(uint8_t a, int divisor) {
  return (uint8_t) (a / divisor);
}
