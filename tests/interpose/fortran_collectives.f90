! A Fortran MPI program that knows nothing of strata (mode "fortran" of
! check_interpose.py): the five collectives the interposer serves, through
! each of Open MPI's three Fortran bindings, each on a duplicate of
! MPI_COMM_WORLD named after its binding (so the interposer's log tells them
! apart): mpif.h, `use mpi` and `use mpi_f08`. Values are small integers, so
! every sum is exact and the references are formulas. Each binding prints
! "fortran: rank R: BINDING, N elements: P of C checks passed" per size; the
! program stops with status 1 when a check failed.

module fortran_checks
  implicit none
  integer :: checks = 0, passed = 0, failures = 0
contains
  subroutine check(ok)
    logical, intent(in) :: ok
    checks = checks + 1
    if (ok) passed = passed + 1
  end subroutine check

  subroutine report(rank, binding, n)
    integer, intent(in) :: rank, n
    character(len=*), intent(in) :: binding
    print '(a,i0,a,a,a,i0,a,i0,a,i0,a)', 'fortran: rank ', rank, ': ', binding, ', ', n, ' elements: ', passed, &
      ' of ', checks, ' checks passed'
    failures = failures + checks - passed
    checks = 0
    passed = 0
  end subroutine report
end module fortran_checks

! The checks every binding runs, on plain Fortran arrays: all-reduce (sum of
! real(8) in and out of place, max of integers), reduce to the last rank
! (out of place and in place), broadcast from rank 1 mod size, all-gather
! (in place and not) and reduce_scatter_block (real(4) sum). `n`: elements
! per call; rank r contributes r + i (+ a shift per call) to element i.
module fortran_expected
  implicit none
contains
  ! sum over ranks of (r + i + shift) = size*(i+shift) + size*(size-1)/2
  pure real(8) function rank_sum(i, size, shift)
    integer, intent(in) :: i, size, shift
    rank_sum = real(size, 8) * real(i + shift, 8) + real(size, 8) * real(size - 1, 8) / 2
  end function rank_sum
end module fortran_expected

subroutine with_mpif_h(n)
  use fortran_checks
  use fortran_expected
  implicit none
  include 'mpif.h'
  integer, intent(in) :: n
  integer :: comm, rank, size, ierr, i, root
  real(8), allocatable :: a(:), b(:)
  integer, allocatable :: k(:), g(:)
  real(4), allocatable :: s(:), t(:)

  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_set_name(comm, 'fortran-mpif-h', ierr)
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, size, ierr)
  allocate(a(n), b(n), k(n), g(n * size), s(n * size), t(n))

  a = [(real(rank + i, 8), i = 1, n)]
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 0), i = 1, n)]))
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(a == [(rank_sum(i, size, 0), i = 1, n)]))
  k = [(rank * 7 - i, i = 1, n)]
  call MPI_Allreduce(MPI_IN_PLACE, k, n, MPI_INTEGER, MPI_MAX, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [((size - 1) * 7 - i, i = 1, n)]))

  root = size - 1
  a = [(real(rank + i + 1, 8), i = 1, n)]
  b = -1
  call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
  if (rank == root) then
    call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 1), i = 1, n)]))
    call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS .and. all(a == [(rank_sum(i, size, 1), i = 1, n)]))
  else
    call check(ierr == MPI_SUCCESS .and. all(b == -1))
    call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS)
  end if

  root = mod(1, size)
  k = -1
  if (rank == root) k = [(3 * i, i = 1, n)]
  call MPI_Bcast(k, n, MPI_INTEGER, root, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [(3 * i, i = 1, n)]))

  k = [(100 * rank + i, i = 1, n)]
  call MPI_Allgather(k, n, MPI_INTEGER, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))
  g = -1
  g(rank * n + 1 : rank * n + n) = k
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))

  s = [(real(rank + i, 4), i = 1, n * size)]
  call MPI_Reduce_scatter_block(s, t, n, MPI_REAL, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(real(t, 8) == [(rank_sum(rank * n + i, size, 0), i = 1, n)]))

  call report(rank, 'mpif.h', n)
  call MPI_Comm_free(comm, ierr)
end subroutine with_mpif_h

subroutine with_use_mpi(n)
  use mpi
  use fortran_checks
  use fortran_expected
  implicit none
  integer, intent(in) :: n
  integer :: comm, rank, size, ierr, i, root
  real(8), allocatable :: a(:), b(:)
  integer, allocatable :: k(:), g(:)
  real(4), allocatable :: s(:), t(:)

  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_set_name(comm, 'fortran-use-mpi', ierr)
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, size, ierr)
  allocate(a(n), b(n), k(n), g(n * size), s(n * size), t(n))

  a = [(real(rank + i, 8), i = 1, n)]
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 0), i = 1, n)]))
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(a == [(rank_sum(i, size, 0), i = 1, n)]))
  k = [(rank * 7 - i, i = 1, n)]
  call MPI_Allreduce(MPI_IN_PLACE, k, n, MPI_INTEGER, MPI_MAX, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [((size - 1) * 7 - i, i = 1, n)]))

  root = size - 1
  a = [(real(rank + i + 1, 8), i = 1, n)]
  b = -1
  call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
  if (rank == root) then
    call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 1), i = 1, n)]))
    call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS .and. all(a == [(rank_sum(i, size, 1), i = 1, n)]))
  else
    call check(ierr == MPI_SUCCESS .and. all(b == -1))
    call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS)
  end if

  root = mod(1, size)
  k = -1
  if (rank == root) k = [(3 * i, i = 1, n)]
  call MPI_Bcast(k, n, MPI_INTEGER, root, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [(3 * i, i = 1, n)]))

  k = [(100 * rank + i, i = 1, n)]
  call MPI_Allgather(k, n, MPI_INTEGER, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))
  g = -1
  g(rank * n + 1 : rank * n + n) = k
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))

  s = [(real(rank + i, 4), i = 1, n * size)]
  call MPI_Reduce_scatter_block(s, t, n, MPI_REAL, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(real(t, 8) == [(rank_sum(rank * n + i, size, 0), i = 1, n)]))

  call report(rank, 'use mpi', n)
  call MPI_Comm_free(comm, ierr)
end subroutine with_use_mpi

subroutine with_use_mpi_f08(n)
  use mpi_f08
  use fortran_checks
  use fortran_expected
  implicit none
  integer, intent(in) :: n
  type(MPI_Comm) :: comm
  integer :: rank, size, ierr, i, root
  real(8), allocatable :: a(:), b(:)
  integer, allocatable :: k(:), g(:)
  real(4), allocatable :: s(:), t(:)

  call MPI_Comm_dup(MPI_COMM_WORLD, comm)
  call MPI_Comm_set_name(comm, 'fortran-use-mpi-f08')
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, size)
  allocate(a(n), b(n), k(n), g(n * size), s(n * size), t(n))

  a = [(real(rank + i, 8), i = 1, n)]
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 0), i = 1, n)]))
  call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm)  ! no ierror: optional in f08
  call check(all(a == [(rank_sum(i, size, 0), i = 1, n)]))
  k = [(rank * 7 - i, i = 1, n)]
  call MPI_Allreduce(MPI_IN_PLACE, k, n, MPI_INTEGER, MPI_MAX, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [((size - 1) * 7 - i, i = 1, n)]))

  root = size - 1
  a = [(real(rank + i + 1, 8), i = 1, n)]
  b = -1
  call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
  if (rank == root) then
    call check(ierr == MPI_SUCCESS .and. all(b == [(rank_sum(i, size, 1), i = 1, n)]))
    call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS .and. all(a == [(rank_sum(i, size, 1), i = 1, n)]))
  else
    call check(ierr == MPI_SUCCESS .and. all(b == -1))
    call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, comm, ierr)
    call check(ierr == MPI_SUCCESS)
  end if

  root = mod(1, size)
  k = -1
  if (rank == root) k = [(3 * i, i = 1, n)]
  call MPI_Bcast(k, n, MPI_INTEGER, root, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(k == [(3 * i, i = 1, n)]))

  k = [(100 * rank + i, i = 1, n)]
  call MPI_Allgather(k, n, MPI_INTEGER, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))
  g = -1
  g(rank * n + 1 : rank * n + n) = k
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(g == [(100 * ((i - 1) / n) + mod(i - 1, n) + 1, i = 1, n * size)]))

  s = [(real(rank + i, 4), i = 1, n * size)]
  call MPI_Reduce_scatter_block(s, t, n, MPI_REAL, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS .and. all(real(t, 8) == [(rank_sum(rank * n + i, size, 0), i = 1, n)]))

  call report(rank, 'use mpi_f08', n)
  call MPI_Comm_free(comm)
end subroutine with_use_mpi_f08

program fortran_collectives
  use mpi_f08, only: MPI_Init, MPI_Finalize
  use fortran_checks
  implicit none
  integer, parameter :: sizes(3) = [1, 1000, 70000]
  integer :: s

  call MPI_Init()
  do s = 1, size(sizes)
    call with_mpif_h(sizes(s))
    call with_use_mpi(sizes(s))
    call with_use_mpi_f08(sizes(s))
  end do
  call MPI_Finalize()
  if (failures > 0) stop 1
end program fortran_collectives
