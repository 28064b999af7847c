// What a call on CUDA tensors costs the host, counted on the CUDA/NCCL test
// double (tests/gpu/double), which names every CUDA runtime and NCCL call it
// receives when STRATA_FAKE_TRACE=1: ten stream-ordered and ten blocking
// 8-byte all-reduces after a warm-up, each block between two markers on
// stderr. scripts/gpu/host_calls.sh builds and runs it and counts per call;
// times need a GPU (strata-bench --stream-ordered, docs/BENCHMARKING.md).
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

#include "strata/strata.hpp"

using namespace strata;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "nccl"});
    const int gpu = comm.topology().ranks[std::size_t(rank)].gpu.cuda_device;
    cudaSetDevice(gpu);
    float* data = nullptr;
    cudaMalloc(&data, 8);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    const Tensor t{data, 2, DataType::f32, Memory::cuda, gpu};
    CommunicationOptions ordered;
    ordered.stream = stream;
    for (int i = 0; i < 3; ++i) comm.all_reduce(t, t, ReduceOp::sum, ordered);  // the warm-up
    cudaStreamSynchronize(stream);
    MPI_Barrier(MPI_COMM_WORLD);
    std::fprintf(stderr, "MARK ordered begin\n");
    for (int i = 0; i < 10; ++i) comm.all_reduce(t, t, ReduceOp::sum, ordered);
    std::fprintf(stderr, "MARK ordered end\n");
    cudaStreamSynchronize(stream);
    MPI_Barrier(MPI_COMM_WORLD);
    std::fprintf(stderr, "MARK blocking begin\n");
    for (int i = 0; i < 10; ++i) comm.all_reduce(t, t, ReduceOp::sum, {});
    std::fprintf(stderr, "MARK blocking end\n");
    cudaStreamDestroy(stream);
    cudaFree(data);
  }
  MPI_Finalize();
  return 0;
}
