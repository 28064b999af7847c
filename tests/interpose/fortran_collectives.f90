! A Fortran MPI program that knows nothing of strata (mode "fortran" of
! check_interpose.py): the five collectives the interposer serves, through
! each of the MPI's three Fortran bindings, each on a duplicate of
! MPI_COMM_WORLD named after its binding (so the interposer's log tells them
! apart): mpif.h, `use mpi` and `use mpi_f08`, each running the same checks
! (fortran_collectives.inc) with its own MPI in scope. Values are small
! integers, so every sum is exact and the references are formulas. Each binding prints
! "fortran: rank R: BINDING, N elements: P of C checks passed" per size; the
! checks go through the MPI test harness (tests/mpi/harness.f90: a watchdog,
! each failure printed with its rank), and the program stops with status 1
! when a check failed.

module fortran_checks
  use strata_test_harness, only: test_check
  implicit none
  integer :: checks = 0, passed = 0
contains
  ! Counts a check for this binding's report, and for the MPI test harness
  ! (tests/mpi/harness.f90), which prints a failed one with the rank.
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (ok) passed = passed + 1
    call test_check(ok, what)
  end subroutine check

  subroutine report(rank, binding, n)
    integer, intent(in) :: rank, n
    character(len=*), intent(in) :: binding
    print '(a,i0,a,a,a,i0,a,i0,a,i0,a)', 'fortran: rank ', rank, ': ', binding, ', ', n, ' elements: ', passed, &
      ' of ', checks, ' checks passed'
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
  character(len=*), parameter :: name = 'fortran-mpif-h'
  integer :: comm
  include 'fortran_collectives.inc'
  call report(rank, 'mpif.h', n)
  call MPI_Comm_free(comm, ierr)
end subroutine with_mpif_h

subroutine with_use_mpi(n)
  use mpi
  use fortran_checks
  use fortran_expected
  implicit none
  integer, intent(in) :: n
  character(len=*), parameter :: name = 'fortran-use-mpi'
  integer :: comm
  include 'fortran_collectives.inc'
  call report(rank, 'use mpi', n)
  call MPI_Comm_free(comm, ierr)
end subroutine with_use_mpi

subroutine with_use_mpi_f08(n)
  use mpi_f08
  use fortran_checks
  use fortran_expected
  implicit none
  integer, intent(in) :: n
  character(len=*), parameter :: name = 'fortran-use-mpi-f08'
  type(MPI_Comm) :: comm
  include 'fortran_collectives.inc'
  call report(rank, 'use mpi_f08', n)
  call MPI_Comm_free(comm, ierr)
end subroutine with_use_mpi_f08

program fortran_collectives
  use mpi_f08, only: MPI_Init, MPI_Finalize
  use strata_test_harness, only: test_start, test_case, test_finish_rank
  implicit none
  integer, parameter :: sizes(3) = [1, 1000, 70000]
  integer :: s, status

  call MPI_Init()
  ! Every MPI call here is under test: the harness ends each rank alone.
  call test_start('interpose-fortran', 100)
  do s = 1, size(sizes)
    call test_case('mpif.h')
    call with_mpif_h(sizes(s))
    call test_case('use mpi')
    call with_use_mpi(sizes(s))
    call test_case('use mpi_f08')
    call with_use_mpi_f08(sizes(s))
  end do
  status = test_finish_rank()
  call MPI_Finalize()
  if (status /= 0) stop 1
end program fortran_collectives
