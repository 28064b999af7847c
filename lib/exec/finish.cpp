#include "exec/finish.hpp"

#include "host/reduce_kernel.hpp"

namespace strata::exec {

void finish_host(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors) {
  if (divides(op, has_result)) host::divide_by(job.out, job.count, job.dtype, contributors);
}

void finish_gpu(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors, gpu::Backend& backend,
                std::size_t replica) {
  if (divides(op, has_result)) backend.divide(job.out, job.count, job.dtype, contributors, replica);
}

}  // namespace strata::exec
