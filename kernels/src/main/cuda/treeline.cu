// The one translation unit nvcc compiles into treeline.fatbin: every kernel Treeline launches.
#include "common.cuh"
#include "reduce.cuh"
#include "peer.cuh"
#include "training.cuh"
