// Treeline's device reducers: dst[i] = src0[i] op src1[i] op ... op src{n-1}[i], for every data
// type x op. Half types accumulate in f32 and round once; inputs combine in the order given, so
// ranks that reduce the same inputs in the same order get the same bits (as on the host).
//
// Each thread loads 16 bytes (uint4, __ldg) of every input and stores 16 bytes, VPT vectors per
// grid-stride step, i.e. 8-16 elements (seed 004: more spills registers); the input pointers
// are read from their device table once per thread; a scalar loop takes the tail. Pointers and
// the element count must be 16-byte aligned for the vector path; the launcher checks and passes
// vec = 0 otherwise.
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// the inputs: a device array of n pointers (copied there by the launcher)
typedef const void* const* Inputs;

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

template <typename T, typename Op>
__device__ __forceinline__ T combine(Inputs in, int n, long long i, int finish,
    int divisor) {
  typedef typename Acc<T>::type A;
  A acc = load<T>(static_cast<const T*>(in[0])[i]);
  for (int k = 1; k < n; k++) {
    acc = Op::f(acc, load<T>(static_cast<const T*>(in[k])[i]));
  }
  if (finish) {
    acc = finishValue<T>(acc, divisor);
  }
  return store<T>(acc);
}

#define VPT 2 // 16-byte vectors per thread per step: 8 f32, 16 bf16, 4 f64

template <typename T, typename Op>
__device__ void reduceKernel(T* __restrict__ dst, Inputs in, int n, long long count, int vec,
    int finish, int divisor) {
  typedef typename Acc<T>::type A;
  constexpr int PER = 16 / sizeof(T); // elements per 16-byte vector
  const T* src[8];
#pragma unroll
  for (int k = 0; k < 8; k++) {
    src[k] = k < n ? static_cast<const T*>(in[k]) : nullptr; // the table, once per thread
  }
  long long tid = blockIdx.x * (long long) blockDim.x + threadIdx.x;
  long long threads = (long long) gridDim.x * blockDim.x;
  long long vectors = vec ? count / PER : 0;
  for (long long v0 = tid * VPT; v0 < vectors; v0 += threads * VPT) {
#pragma unroll
    for (int u = 0; u < VPT; u++) {
      long long v = v0 + u;
      if (v < vectors) {
        A acc[PER];
        uint4 x = __ldg(reinterpret_cast<const uint4*>(src[0]) + v);
        const T* xs = reinterpret_cast<const T*>(&x);
#pragma unroll
        for (int e = 0; e < PER; e++) {
          acc[e] = load<T>(xs[e]);
        }
        for (int k = 1; k < n; k++) {
          uint4 y = __ldg(reinterpret_cast<const uint4*>(src[k]) + v);
          const T* ys = reinterpret_cast<const T*>(&y);
#pragma unroll
          for (int e = 0; e < PER; e++) {
            acc[e] = Op::f(acc[e], load<T>(ys[e]));
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
    dst[i] = combine<T, Op>(in, n, i, finish, divisor);
  }
}

#define KERNEL(NAME, T, OP) \
  extern "C" __global__ void reduce_##NAME(T* dst, Inputs in, int n, long long count, \
      int vec, int finish, int divisor) { \
    reduceKernel<T, OP>(dst, in, n, count, vec, finish, divisor); \
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
