// One all_reduce checked the way every MPI correctness test checks it: the
// result bit for bit against the exact reference, the input left alone
// (out of place), and the output logged for the same-bits-on-every-rank
// check.
#pragma once

#include <string>

#include "buffers.hpp"
#include "harness.hpp"
#include "strata/strata.hpp"

namespace strata::test {

// Runs comm.all_reduce on a copy of `input` (in place or into a fresh
// output) with `op` and `options`; a thrown strata::Error fails the check
// with `label`. Collective.
void check_exact_all_reduce(Communicator& comm, const std::string& label, const Buffer& input,
                            const Buffer& expected, ReduceOp op, bool in_place, const CommunicationOptions& options,
                            SameBitsLog& log);

}  // namespace strata::test
