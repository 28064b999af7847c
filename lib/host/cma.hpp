// Cross-memory attach (CMA): reading another process's memory with one
// copy, Linux's process_vm_readv. The shared-memory collectives' direct
// path (shm_direct.hpp) reads its peers' user buffers with it instead of
// passing every byte through a shared set (two copies).
//
// Only reads, never writes (process_vm_writev is not used anywhere): a rank
// only ever writes its own memory, so a slow peer can never write into the
// buffers of a rank that already gave up on a call and returned.
//
// Whether it works is decided once per node communicator (detect): the
// kernel may forbid it (Yama's ptrace_scope = 2 or 3; a container's seccomp
// profile or missing capability: EPERM or ENOSYS), and STRATA_CMA=0 turns
// it off on purpose. Where a node's ranks outnumber the CPUs they may run
// on (ShmSegment::crowded) the direct path is left off too unless
// STRATA_CMA=1 asks for it: ranks that take turns on the cores wait less
// in the shared-memory rounds (OSU, 4 ranks on 2 cores: docs/ALGORITHMS.md,
// "Where the direct path starts").
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <cstddef>

namespace strata::host::cma {

// What STRATA_CMA asks for (read once per process): "0" off; "1" wherever
// the kernel allows it; unset or anything else, wherever the kernel allows
// it on a node that is not crowded (more local ranks than the CPUs they
// may run on).
enum class Mode { off, automatic, forced };
Mode mode_from_environment();

// Lets peers read this process: under Yama's ptrace_scope = 1 only a
// process's ancestors may attach to it, so the process declares any
// process of the same user a permitted tracer (PR_SET_PTRACER_ANY, what
// Open MPI's CMA transport does). Does nothing where Yama is absent or
// stricter (there no declaration helps). Once per process.
void allow_peers();

// One read of `bytes` from `remote` in process `pid` into `local`, for
// detection: 0 on success, else the errno (EIO for a short read).
int try_read(pid_t pid, const void* remote, void* local, std::size_t bytes);

// Collective over `node_comm`: every rank says whether it could read every
// peer (`error`: 0, an errno from try_read, or kWrongBytes / kTurnedOff;
// `peer`: the local rank it could not read) and all agree, so that every
// rank takes the same path. When the answer is no, logs once per process
// at INFO which rank could not read which and why. Returns whether every
// rank could.
constexpr int kWrongBytes = -1;  // a read came back with other bytes than the peer published
constexpr int kTurnedOff = -2;   // STRATA_CMA=0 on this rank
constexpr int kCrowded = -3;     // more local ranks than their CPUs, and STRATA_CMA is not 1 on this rank
bool agree(MPI_Comm node_comm, int error, int peer);

// Reads `bytes` from `remote` in process `pid` (local rank `peer` of the
// node communicator) into `local`, looping over short reads. Throws
// BackendError (backend "cma", code = errno) naming the peer, its pid, the
// address and the errno, when the kernel refuses (the peer exited: ESRCH;
// an address the peer never mapped: EFAULT; permission: EPERM).
void read(pid_t pid, const void* remote, void* local, std::size_t bytes, int peer);

}  // namespace strata::host::cma
