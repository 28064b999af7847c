#include "exec/finish.hpp"

#include "host/reduce_kernel.hpp"

namespace strata::exec {

void finish_host(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors) {
  if (op == ReduceOp::mean && has_result) host::divide_by(job.out, job.count, job.dtype, contributors);
}

}  // namespace strata::exec
