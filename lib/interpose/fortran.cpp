// Fortran's way in (Open MPI). Open MPI's Fortran bindings call PMPI_*
// directly, so a Fortran program's MPI_ALLREDUCE never reaches the C
// definitions of entry.cpp. MPICH's and Intel MPI's need nothing here:
// their libmpifort (mpi_allreduce_ and its spellings, and the mpi_f08
// module's mpi_allreduce_f08ts_) converts handles and MPI_IN_PLACE itself
// and calls the C MPI_Allreduce through the dynamic linker (nm -D: `U
// MPI_Allreduce`), which entry.cpp's definition takes; defining their
// Fortran symbols here would replace that conversion. These replace the bindings' own entry points
// for the five blocking collectives the interposer serves:
//   - mpif.h and `use mpi`: mpi_allreduce_ and the compilers' other
//     spellings of it (mpi_allreduce, mpi_allreduce__, MPI_ALLREDUCE);
//   - `use mpi_f08`: its module procedures call ompi_allreduce_f in
//     libmpi_mpifh, which is replaced too.
// Each converts Fortran's handles (MPI_Fint) to C's, maps Fortran's
// MPI_IN_PLACE and MPI_BOTTOM (the addresses of Open MPI's common blocks)
// to C's, and runs the same routed call as its C form (collectives.hpp):
// same decisions, log lines and error handling, the C call's return code in
// `ierr`. Non-blocking Fortran collectives are not replaced: they return
// MPI's own requests, which Fortran's MPI_WAIT (PMPI_Wait, never this
// library) completes.
#include <dlfcn.h>
#include <mpi.h>

#include "collectives.hpp"
#include "guard.hpp"

#if defined(OPEN_MPI)

namespace {

// The address of one of Open MPI's Fortran sentinels (a common block,
// `common /mpi_fortran_in_place/ MPI_IN_PLACE`), under whichever of its
// spellings libmpi exports; nullptr when none is found (then no Fortran
// buffer is taken for the sentinel).
const void* fortran_sentinel(const char* const (&names)[4]) {
  for (const char* name : names)
    if (const void* found = dlsym(RTLD_DEFAULT, name)) return found;
  return nullptr;
}

const void* fortran_in_place() {
  static const void* const address = fortran_sentinel(
      {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"});
  return address;
}

const void* fortran_bottom() {
  static const void* const address =
      fortran_sentinel({"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"});
  return address;
}

// A Fortran buffer argument as C sees it: MPI_IN_PLACE where it may stand
// (`in_place_allowed`), MPI_BOTTOM, or the buffer itself.
void* c_buffer(void* buffer, bool in_place_allowed) {
  if (buffer == nullptr) return buffer;
  if (in_place_allowed && buffer == fortran_in_place()) return MPI_IN_PLACE;
  if (buffer == fortran_bottom()) return MPI_BOTTOM;
  return buffer;
}

void set_ierr(MPI_Fint* ierr, int rc) {
  if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
}

// The caller's address: a call from libstrata itself goes straight to MPI.
#define STRATA_FORTRAN_CALLER __builtin_extract_return_addr(__builtin_return_address(0))

// A Fortran reduction's arguments as C's: buffers (MPI_IN_PLACE allowed
// for the input), datatype, op and communicator.
struct Reduction {
  void* in;
  void* out;
  MPI_Datatype type;
  MPI_Op op;
  MPI_Comm comm;
};

Reduction c_reduction(void* sendbuf, void* recvbuf, const MPI_Fint* datatype, const MPI_Fint* op,
                      const MPI_Fint* comm) {
  return {c_buffer(sendbuf, true), c_buffer(recvbuf, false), PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op),
          PMPI_Comm_f2c(*comm)};
}

void all_reduce_f(const void* caller, void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                  const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  const Reduction r = c_reduction(sendbuf, recvbuf, datatype, op, comm);
  set_ierr(ierr, strata::interpose::called_by_strata(caller)
                     ? PMPI_Allreduce(r.in, r.out, *count, r.type, r.op, r.comm)
                     : strata::interpose::all_reduce(r.in, r.out, *count, r.type, r.op, r.comm));
}

void reduce_f(const void* caller, void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
              const MPI_Fint* op, const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  const Reduction r = c_reduction(sendbuf, recvbuf, datatype, op, comm);
  set_ierr(ierr, strata::interpose::called_by_strata(caller)
                     ? PMPI_Reduce(r.in, r.out, *count, r.type, r.op, *root, r.comm)
                     : strata::interpose::reduce(r.in, r.out, *count, r.type, r.op, *root, r.comm));
}

void reduce_scatter_block_f(const void* caller, void* sendbuf, void* recvbuf, const MPI_Fint* recvcount,
                            const MPI_Fint* datatype, const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  const Reduction r = c_reduction(sendbuf, recvbuf, datatype, op, comm);
  set_ierr(ierr, strata::interpose::called_by_strata(caller)
                     ? PMPI_Reduce_scatter_block(r.in, r.out, *recvcount, r.type, r.op, r.comm)
                     : strata::interpose::reduce_scatter_block(r.in, r.out, *recvcount, r.type, r.op, r.comm));
}

void bcast_f(const void* caller, void* buffer, const MPI_Fint* count, const MPI_Fint* datatype, const MPI_Fint* root,
             const MPI_Fint* comm, MPI_Fint* ierr) {
  void* data = c_buffer(buffer, false);
  const MPI_Datatype type = PMPI_Type_f2c(*datatype);
  const MPI_Comm c_comm = PMPI_Comm_f2c(*comm);
  set_ierr(ierr, strata::interpose::called_by_strata(caller)
                     ? PMPI_Bcast(data, *count, type, *root, c_comm)
                     : strata::interpose::broadcast(data, *count, type, *root, c_comm));
}

void allgather_f(const void* caller, void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                 void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype, const MPI_Fint* comm,
                 MPI_Fint* ierr) {
  void* in = c_buffer(sendbuf, true);
  void* out = c_buffer(recvbuf, false);
  const MPI_Datatype send_type = PMPI_Type_f2c(*sendtype), recv_type = PMPI_Type_f2c(*recvtype);
  const MPI_Comm c_comm = PMPI_Comm_f2c(*comm);
  set_ierr(ierr, strata::interpose::called_by_strata(caller)
                     ? PMPI_Allgather(in, *sendcount, send_type, out, *recvcount, recv_type, c_comm)
                     : strata::interpose::all_gather(in, *sendcount, send_type, out, *recvcount, recv_type, c_comm));
}

}  // namespace

#define STRATA_MPI_EXPORT extern "C" __attribute__((visibility("default")))

// One definition per spelling: mpif.h's and `use mpi`'s four, and the
// ompi_*_f that `use mpi_f08` calls.
#define STRATA_FORTRAN_ENTRY(lower, upper, impl, params, args) \
  STRATA_MPI_EXPORT void ompi_##lower##_f params { impl(STRATA_FORTRAN_CALLER, args); } \
  STRATA_MPI_EXPORT void mpi_##lower params { impl(STRATA_FORTRAN_CALLER, args); }     \
  STRATA_MPI_EXPORT void mpi_##lower##_ params { impl(STRATA_FORTRAN_CALLER, args); }  \
  STRATA_MPI_EXPORT void mpi_##lower##__ params { impl(STRATA_FORTRAN_CALLER, args); } \
  STRATA_MPI_EXPORT void MPI_##upper params { impl(STRATA_FORTRAN_CALLER, args); }

#define STRATA_ARGS(...) __VA_ARGS__

STRATA_FORTRAN_ENTRY(allreduce, ALLREDUCE, all_reduce_f,
                     (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
                      MPI_Fint* ierr),
                     STRATA_ARGS(sendbuf, recvbuf, count, datatype, op, comm, ierr))

STRATA_FORTRAN_ENTRY(reduce, REDUCE, reduce_f,
                     (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* root,
                      MPI_Fint* comm, MPI_Fint* ierr),
                     STRATA_ARGS(sendbuf, recvbuf, count, datatype, op, root, comm, ierr))

STRATA_FORTRAN_ENTRY(bcast, BCAST, bcast_f,
                     (void* buffer, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* comm,
                      MPI_Fint* ierr),
                     STRATA_ARGS(buffer, count, datatype, root, comm, ierr))

STRATA_FORTRAN_ENTRY(reduce_scatter_block, REDUCE_SCATTER_BLOCK, reduce_scatter_block_f,
                     (void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* datatype, MPI_Fint* op,
                      MPI_Fint* comm, MPI_Fint* ierr),
                     STRATA_ARGS(sendbuf, recvbuf, recvcount, datatype, op, comm, ierr))

STRATA_FORTRAN_ENTRY(allgather, ALLGATHER, allgather_f,
                     (void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
                      MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr),
                     STRATA_ARGS(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr))

#endif  // OPEN_MPI
