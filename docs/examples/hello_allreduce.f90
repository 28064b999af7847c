! docs/C_API.md's Fortran example: a mean all-reduce of one small array per rank.
program hello
  use, intrinsic :: iso_c_binding
  use mpi
  use strata
  implicit none
  type(c_ptr) :: comm
  type(strata_options) :: options
  real(c_float), target :: grad(4)
  integer(c_int) :: status, rank
  integer :: ierr

  call MPI_Init(ierr)
  status = strata_comm_create_f(MPI_COMM_WORLD, handle=comm)  ! collective
  if (status == STRATA_OK) status = strata_comm_rank(comm, rank)
  grad = real(rank, c_float)
  options%timeout_seconds = 30
  if (status == STRATA_OK) status = strata_all_reduce(comm, c_loc(grad), c_loc(grad), 4_c_size_t, &
                                                      STRATA_F32, STRATA_MEAN, options)
  if (status /= STRATA_OK) then
    print '(a,": ",a)', strata_status_name_f(status), strata_last_error_f()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (rank == 0) print '(a,f0.1)', 'mean of ranks = ', grad(1)
  status = strata_comm_free(comm)  ! before MPI_Finalize
  call MPI_Finalize(ierr)
end program hello
