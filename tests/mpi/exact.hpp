// One collective checked the way the MPI correctness tests check it: the
// result bit for bit against the exact reference, the input left alone
// (out of place), outputs that must not be written left alone, and the
// result logged for the same-bits-on-every-rank check where every rank has
// it.
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

// One reduce to `root` on a copy of `input`, in place or into a fresh
// output; out of place, a non-root passes a null output when
// `null_out_off_root`, else a garbage-filled one that must stay as it was.
// The root's result is checked against `expected`. Collective.
void check_exact_reduce(Communicator& comm, const std::string& label, const Buffer& input, const Buffer& expected,
                        ReduceOp op, int root, bool in_place, bool null_out_off_root,
                        const CommunicationOptions& options = {});

// One broadcast from `root` of `sent` (the root's data, which differs per
// root so that a broadcast from the wrong rank cannot pass), checked on
// every rank and logged. Collective.
void check_exact_broadcast(Communicator& comm, const std::string& label, const Buffer& sent, int root,
                           const CommunicationOptions& options, SameBitsLog& log);

}  // namespace strata::test
