// The translation unit of treeline_sm90a.cubin (sm_90a only: wgmma): the Hopper GEMM.
#include "gemm_sm90.cuh"
