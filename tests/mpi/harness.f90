! The MPI test harness's core for Fortran test programs: the C face of
! harness_c.h (part of mpi_harness_core) bound with iso_c_binding.
!
!   call test_start('program', bound_seconds)   after MPI_Init, once
!   call test_case('name')                      as cases change
!   call test_check(ok, 'what')                 per check
!   status = test_finish()                      collective, before MPI_Finalize
!   status = test_finish_rank()                 this rank alone, no MPI
!
! The watchdog prints "strata-test HANG: ..." and exits 124 on a hang; a
! failed check prints "<program>: FAIL on rank R: <what>".
module strata_test_harness
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_null_char
  implicit none
  private
  public :: test_start, test_case, test_check, test_check_every_rank, test_finish, test_finish_rank

  interface
    subroutine c_start(program, bound_seconds) bind(C, name='strata_test_start')
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: program
      integer(c_int), value :: bound_seconds
    end subroutine
    subroutine c_case(name) bind(C, name='strata_test_case')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    integer(c_int) function c_check(ok, what) bind(C, name='strata_test_check')
      import :: c_char, c_int
      integer(c_int), value :: ok
      character(kind=c_char), dimension(*), intent(in) :: what
    end function
    integer(c_int) function c_check_every_rank(ok, what) bind(C, name='strata_test_check_every_rank')
      import :: c_char, c_int
      integer(c_int), value :: ok
      character(kind=c_char), dimension(*), intent(in) :: what
    end function
    integer(c_int) function c_finish() bind(C, name='strata_test_finish')
      import :: c_int
    end function
    integer(c_int) function c_finish_rank() bind(C, name='strata_test_finish_rank')
      import :: c_int
    end function
  end interface

contains

  subroutine test_start(program, bound_seconds)
    character(len=*), intent(in) :: program
    integer, intent(in) :: bound_seconds
    call c_start(program // c_null_char, int(bound_seconds, c_int))
  end subroutine

  subroutine test_case(name)
    character(len=*), intent(in) :: name
    call c_case(name // c_null_char)
  end subroutine

  ! Counts a check of this rank's; a false `ok` prints `what` with the rank.
  subroutine test_check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer(c_int) :: passed
    passed = c_check(merge(1_c_int, 0_c_int, ok), what // c_null_char)
  end subroutine

  ! Collective: test_check on every rank, then whether every rank's `ok` held.
  logical function test_check_every_rank(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    test_check_every_rank = c_check_every_rank(merge(1_c_int, 0_c_int, ok), what // c_null_char) /= 0
  end function

  ! Collective: the exit status, the same on every rank (0: every check passed).
  integer function test_finish()
    test_finish = int(c_finish())
  end function

  ! This rank alone: 0 iff this rank failed no check.
  integer function test_finish_rank()
    test_finish_rank = int(c_finish_rank())
  end function

end module strata_test_harness
