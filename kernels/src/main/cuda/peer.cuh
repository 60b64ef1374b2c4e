// Kernels of the intra-node allreduce over peer memory (CUDA IPC mappings) besides the reducers.
#pragma once
#include "common.cuh"

// Up to MAX_INPUTS copies in one launch: blockIdx.y picks the segment. The all-gather phase of
// the two-shot allreduce (every rank reads the reduced slices of all its peers) and the copies
// into and out of the registered buffers are one launch each, never cudaMemcpyPeer.
struct Segs {
  const void* src[MAX_INPUTS];
  void* dst[MAX_INPUTS];
  long long bytes[MAX_INPUTS];
};

extern "C" __global__ void __launch_bounds__(256) copy_segments(const __grid_constant__ Segs s) {
  const int k = blockIdx.y;
  const char* src = static_cast<const char*>(s.src[k]);
  char* dst = static_cast<char*>(s.dst[k]);
  const long long bytes = s.bytes[k];
  const long long tid = blockIdx.x * (long long) blockDim.x + threadIdx.x;
  const long long threads = (long long) gridDim.x * blockDim.x;
  const bool aligned = ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst))
      & 15) == 0;
  const long long vectors = aligned ? bytes / 16 : 0;
  constexpr int U = 4;
  for (long long base = tid; base < vectors; base += threads * U) {
    uint4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const long long v = base + u * threads;
      if (v < vectors) {
        x[u] = __ldg(reinterpret_cast<const uint4*>(src) + v);
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      const long long v = base + u * threads;
      if (v < vectors) {
        reinterpret_cast<uint4*>(dst)[v] = x[u];
      }
    }
  }
  for (long long i = vectors * 16 + tid; i < bytes; i += threads) {
    dst[i] = src[i];
  }
}

__device__ __forceinline__ void storeRelease(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long loadAcquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long globalNanos() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Flag barrier between the ranks of a node on distinct GPUs, as vLLM's and TensorRT-LLM's custom
// allreduce do it: flags.p[r] is rank r's flag array (its own, or an IPC mapping of a peer's),
// slot [k] of it written only by rank k. Thread k stores `value` into slot [me] of peer k's array
// with release semantics at system scope (after a system fence, so the writes of the kernels
// before this one in the stream are visible first), then waits with acquire semantics until
// peer k's store reached slot [k] of our array. Values only grow (sequence * phases + phase), so
// slots are never reset. A wait past timeoutNs records (peer + 1, value) in status and gives up,
// so the host can name the peer and the phase instead of hanging the GPU forever.
//
// The call check: `call` is (sequence << 32) | the call descriptor's 32-bit hash. Before its
// flag, thread k stores it into word [FLAG_CALLS + parity * MAX_INPUTS + me] of peer k's array
// (parity: the sequence's lowest bit, so that a peer one call ahead writes the other word), and
// after the wait it reads peer k's word of our parity: same sequence, other hash means the peer
// makes a different call (count, type, op or algorithm), recorded as (peer + 1, value,
// FLAG_MISMATCH, the peer's word) in status. A peer two calls ahead (possible only past a call
// without barriers) overwrote the word with another sequence; that barrier is not checked.
#define FLAG_STATUS MAX_INPUTS
#define FLAG_CALLS (2 * MAX_INPUTS)
#define FLAG_MISMATCH 1ULL
extern "C" __global__ void barrier_flags(const __grid_constant__ Ptrs flags, int n, int me,
    unsigned long long value, unsigned long long call, long long timeoutNs,
    unsigned long long* status) {
  const int k = threadIdx.x;
  if (k >= n || k == me) {
    return;
  }
  const int parity = (int) ((call >> 32) & 1ULL);
  unsigned long long* peer = static_cast<unsigned long long*>(const_cast<void*>(flags.p[k]));
  __threadfence_system();
  reinterpret_cast<volatile unsigned long long*>(peer)[FLAG_CALLS + parity * MAX_INPUTS + me] =
      call;
  storeRelease(peer + me, value); // orders the call word before the flag
  const unsigned long long* own = static_cast<const unsigned long long*>(flags.p[me]);
  const unsigned long long start = globalNanos();
  while (loadAcquire(own + k) < value) {
    if ((long long) (globalNanos() - start) > timeoutNs) {
      if (atomicCAS(status, 0ULL, (unsigned long long) (k + 1)) == 0ULL) {
        status[1] = value;
      }
      return;
    }
    __nanosleep(64);
  }
  const unsigned long long theirs = loadAcquire(own + FLAG_CALLS + parity * MAX_INPUTS + k);
  if ((theirs >> 32) == (call >> 32) && theirs != call) {
    if (atomicCAS(status, 0ULL, (unsigned long long) (k + 1)) == 0ULL) {
      status[1] = value;
      status[2] = FLAG_MISMATCH;
      status[3] = theirs;
    }
  }
}
