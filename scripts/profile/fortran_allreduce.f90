! What a Fortran program's MPI_Allreduce costs, plain or with the
! interposer preloaded: DOUBLE PRECISION sums through `use mpi_f08`, 8 B to
! 2 MiB by factors of 4, the mean time per call on rank 0 over a timed loop after a
! barrier (the ranks' loops run in step, as in OSU's).
!
!   mpif90 -O2 scripts/profile/fortran_allreduce.f90 -o /tmp/fortran_allreduce
!   build/strata-launch -n 2 /tmp/fortran_allreduce
!   build/strata-launch -n 2 --env LD_PRELOAD=$PWD/build/lib/interpose/libstrata_mpi.so /tmp/fortran_allreduce
!
! Prints one line per size, "bytes us", and stops with status 1 if a sum
! came out wrong (every element's sum is a small integer).
program fortran_allreduce
  use mpi_f08
  implicit none
  integer, parameter :: most = 262144  ! elements: 2 MiB
  real(8), allocatable :: a(:), b(:)
  integer :: rank, size, n, i, iterations
  double precision :: start, took
  logical :: wrong

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  allocate(a(most), b(most))
  a = [(real(rank + mod(i, 7), 8), i = 1, most)]
  wrong = .false.
  n = 1
  do while (n <= most)
    iterations = max(20, min(10000, 100000000 / (n * 8 + 10000)))
    do i = 1, 10
      call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    end do
    call MPI_Barrier(MPI_COMM_WORLD)
    start = MPI_Wtime()
    do i = 1, iterations
      call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    end do
    took = (MPI_Wtime() - start) / iterations
    do i = 1, n
      if (b(i) /= real(size * mod(i, 7), 8) + real(size * (size - 1) / 2, 8)) wrong = .true.
    end do
    if (rank == 0) print '(i8,f12.2)', n * 8, took * 1.0d6
    n = n * 4
  end do
  call MPI_Finalize()
  if (wrong) stop 1
end program fortran_allreduce
