! The Fortran module `strata` end to end, at any rank count: all_reduce of
! real(4) (sum out of place, mean in place) and integer (max) arrays,
! broadcast and reduce with a 0-based root, a batch, options,
! reduce_scatter (real(4) sum) and all_gather (integer, in place) at
! 0-based blocks, an invalid root giving STRATA_ERR_INVALID_ARGUMENT
! with a message, options%stream defaulting to c_null_ptr and
! strata_comm_check on a healthy communicator; requests: non-blocking all_reduce, broadcast,
! reduce_scatter, all_gather, reduce and batch outstanding together and
! waited out of order (one by a test loop), a persistent all_reduce started
! on new data each round, freeing an active request, an invalid root on the
! last rank (INVALID_ARGUMENT there, MISMATCH elsewhere, from wait), and a
! communicator with the progress thread; each checked against values
! computed here from known inputs. Checks go through the MPI test
! harness (tests/mpi/harness.f90: a watchdog, one line per failure, a
! summary on rank 0); exits 1 if any rank failed, 0 otherwise.
program test_fortran
  use, intrinsic :: iso_c_binding
  use mpi
  use strata
  use strata_test_harness
  implicit none
  integer, parameter :: n = 1000, m = 37
  real(c_float), target :: x(n), y(n), expected(n)
  integer(c_int), target :: k(n), kexpected(n)
  real(c_double), target :: d(n)
  real(c_float), allocatable, target :: whole(:), block(:)
  integer(c_int), allocatable, target :: gathered(:)
  ! Buffers of requests: strata's until the request completes.
  real(c_float), target, asynchronous :: xa(n), ya(n)
  integer(c_int), target, asynchronous :: ka(n), kb(n)
  real(c_double), target, asynchronous :: da(n)
  real(c_float), allocatable, target, asynchronous :: wa(:), ba(:), ga(:)
  type(c_ptr) :: requests(6), persistent, tcomm
  integer(c_int) :: flag
  integer :: round, q
  type(c_ptr) :: comm, buffers(2)
  integer(c_size_t) :: counts(2)
  integer(c_int) :: dtypes(2), status, value, major, minor, patch
  type(strata_options) :: options
  type(strata_packing) :: packing
  type(strata_config) :: config
  character(kind=c_char, len=6), target :: spec = c_char_'xring' // c_null_char
  integer :: ierr, rank, nranks, i, j, r, exit_status
  character(len=32) :: version
  character(len=:), allocatable :: message

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call test_start('fortran test', 50)

  call strata_version(major, minor, patch)
  write (version, '(i0,".",i0,".",i0)') major, minor, patch
  call check(trim(version) == strata_version_string_f(), 'version: ' // strata_version_string_f())
  call check(strata_status_name_f(STRATA_ERR_PEER_FAILURE) == 'STRATA_ERR_PEER_FAILURE', 'status name')

  status = strata_comm_create_f(MPI_COMM_WORLD, handle=comm)
  call expect_ok(status, 'strata_comm_create_f')
  status = strata_comm_rank(comm, value)
  call check(status == STRATA_OK .and. value == rank, 'strata_comm_rank')
  status = strata_comm_size(comm, value)
  call check(status == STRATA_OK .and. value == nranks, 'strata_comm_size')

  ! real(4) sum, out of place: x(i) = (rank+1)/2 + mod(i,17), exact in f32.
  do i = 1, n
    x(i) = 0.5 * (rank + 1) + mod(i, 17)
    expected(i) = 0
    do r = 0, nranks - 1
      expected(i) = expected(i) + (0.5 * (r + 1) + mod(i, 17))
    end do
  end do
  status = strata_all_reduce(comm, c_loc(x), c_loc(y), int(n, c_size_t), STRATA_F32, STRATA_SUM)
  call expect_ok(status, 'strata_all_reduce real(4) sum')
  call check(all(y == expected), 'real(4) sum values')
  call check(all(x == 0.5 * (rank + 1) + mod([(i, i = 1, n)], 17)), 'real(4) sum left the input alone')

  ! The options start out as STRATA_OPTIONS_INIT: no stream (blocking
  ! calls); a healthy communicator checks out fine.
  call check(.not. c_associated(options%stream), 'options%stream starts as c_null_ptr')
  status = strata_comm_check(comm)
  call expect_ok(status, 'strata_comm_check')

  ! real(4) mean in place, with options (a stream too, which host memory ignores).
  options%timeout_seconds = 30
  options%implementation = STRATA_IMPL_RING
  options%stream = c_loc(d)
  status = strata_all_reduce(comm, c_loc(x), c_loc(x), int(n, c_size_t), STRATA_F32, STRATA_MEAN, options)
  call expect_ok(status, 'strata_all_reduce real(4) mean')
  call check(all(x == expected / real(nranks, c_float)), 'real(4) mean values')

  ! integer max, in place.
  do i = 1, n
    k(i) = mod(rank * 7919 + i * 104729, 2001) - 1000
    kexpected(i) = -huge(0)
    do r = 0, nranks - 1
      kexpected(i) = max(kexpected(i), mod(r * 7919 + i * 104729, 2001) - 1000)
    end do
  end do
  status = strata_all_reduce(comm, c_loc(k), c_loc(k), int(n, c_size_t), STRATA_I32, STRATA_MAX)
  call expect_ok(status, 'strata_all_reduce integer max')
  call check(all(k == kexpected), 'integer max values')

  ! broadcast of real(8) from the last rank (0-based), on an xring communicator.
  config%all_reduce_spec = c_loc(spec)
  status = strata_comm_free(comm)
  call check(status == STRATA_OK .and. .not. c_associated(comm), 'strata_comm_free')
  status = strata_comm_create_f(MPI_COMM_WORLD, config, comm)
  call expect_ok(status, 'strata_comm_create_f with config')
  d = -1
  if (rank == nranks - 1) d = [(1.0d0 / i, i = 1, n)]
  status = strata_broadcast(comm, c_loc(d), int(n, c_size_t), STRATA_F64, nranks - 1)
  call expect_ok(status, 'strata_broadcast')
  call check(all(d == [(1.0d0 / i, i = 1, n)]), 'broadcast values')

  ! reduce (integer sum) to rank 0; the others pass no output buffer.
  k = rank + 1
  status = strata_reduce(comm, c_loc(k), merge(c_loc(kexpected), c_null_ptr, rank == 0), int(n, c_size_t), &
                         STRATA_I32, STRATA_SUM, 0)
  call expect_ok(status, 'strata_reduce')
  if (rank == 0) call check(all(kexpected == nranks * (nranks + 1) / 2), 'reduce values')

  ! a batch of a real(4) and an integer array, two packs.
  x = rank
  k = 2 * rank
  buffers = [c_loc(x), c_loc(k)]
  counts = int(n, c_size_t)
  dtypes = [STRATA_F32, STRATA_I32]
  packing%num_packs = 2
  status = strata_batch_all_reduce(comm, buffers, counts, dtypes, 2_c_size_t, STRATA_SUM, packing)
  call expect_ok(status, 'strata_batch_all_reduce')
  call check(all(x == real(nranks * (nranks - 1) / 2, c_float)) .and. all(k == nranks * (nranks - 1)), &
             'batch values')

  ! reduce_scatter, real(4) sum: m elements per rank; element j of every
  ! rank's whole buffer differs by block and rank, so a wrong block or
  ! count cannot give rank r the sums of elements r*m+1 .. (r+1)*m.
  allocate (whole(m * nranks), block(m), gathered(m * nranks))
  whole = [(0.25 * j + rank, j = 1, m * nranks)]
  block = -1
  status = strata_reduce_scatter(comm, c_loc(whole), c_loc(block), int(m, c_size_t), STRATA_F32, STRATA_SUM)
  call expect_ok(status, 'strata_reduce_scatter')
  call check(all(block == [(nranks * 0.25 * (rank * m + i) + nranks * (nranks - 1) / 2, i = 1, m)]), &
             'reduce_scatter values')
  call check(all(whole == [(0.25 * j + rank, j = 1, m * nranks)]), 'reduce_scatter left the input alone')

  ! all_gather, integer, in place: this rank's m elements are its block of
  ! gathered; every block r ends up with rank r's elements.
  gathered = -1
  gathered(rank * m + 1:(rank + 1) * m) = [(1000 * rank + i, i = 1, m)]
  status = strata_all_gather(comm, c_loc(gathered(rank * m + 1)), c_loc(gathered), int(m, c_size_t), STRATA_I32)
  call expect_ok(status, 'strata_all_gather')
  call check(all(gathered == [((1000 * r + i, i = 1, m), r = 0, nranks - 1)]), 'all_gather values')

  ! an invalid root, on every rank: INVALID_ARGUMENT with a message.
  status = strata_broadcast(comm, c_loc(d), int(n, c_size_t), STRATA_F64, nranks)
  call check(status == STRATA_ERR_INVALID_ARGUMENT, 'bad root gave ' // strata_status_name_f(status))
  message = strata_last_error_f()
  call check(index(message, 'strata [') == 1 .and. index(message, ']: strata_broadcast: root') > 0, &
             'bad root message: ' // message)

  call test_case('requests')
  call test_requests(comm)

  status = strata_comm_free(comm)
  call check(status == STRATA_OK .and. .not. c_associated(comm), 'strata_comm_free')

  ! The same requests on a communicator with the progress thread.
  call test_case('requests with the progress thread')
  config%progress_thread = 1
  status = strata_comm_create_f(MPI_COMM_WORLD, config, tcomm)
  call expect_ok(status, 'strata_comm_create_f with progress_thread')
  call test_requests(tcomm)
  status = strata_comm_free(tcomm)
  call check(status == STRATA_OK .and. .not. c_associated(tcomm), 'strata_comm_free (progress thread)')

  exit_status = test_finish()
  call MPI_Finalize(ierr)
  if (exit_status /= 0) error stop 1

contains

  ! The request interfaces on `handle` (see the program's header).
  subroutine test_requests(handle)
    type(c_ptr), intent(in) :: handle
    integer(c_int) :: bad_root
    if (allocated(wa)) deallocate (wa, ba, ga)
    allocate (wa(m * nranks), ba(m), ga(m * nranks))

    ! Six requests outstanding: real(4) sum out of place, real(8) broadcast
    ! from the last rank, reduce_scatter, all_gather, integer reduce to rank
    ! 0, a batch of one real(4) array (into wa after the reduce_scatter).
    xa = [(0.5 * (rank + 1) + mod(i, 13), i = 1, n)]
    ya = -1
    da = -1
    if (rank == nranks - 1) da = [(1.0d0 / (i + 3), i = 1, n)]
    ga = -1
    ba = -1
    ka = [(rank * 1000 + i, i = 1, n)]
    kb = -1
    status = strata_iall_reduce(handle, c_loc(xa), c_loc(ya), int(n, c_size_t), STRATA_F32, STRATA_SUM, &
                                request=requests(1))
    call expect_ok(status, 'strata_iall_reduce')
    status = strata_ibroadcast(handle, c_loc(da), int(n, c_size_t), STRATA_F64, nranks - 1, request=requests(2))
    call expect_ok(status, 'strata_ibroadcast')
    wa = [(0.25 * j + rank, j = 1, m * nranks)]
    status = strata_ireduce_scatter(handle, c_loc(wa), c_loc(ba), int(m, c_size_t), STRATA_F32, STRATA_SUM, &
                                    request=requests(3))
    call expect_ok(status, 'strata_ireduce_scatter')
    ga(rank * m + 1:(rank + 1) * m) = [(100.0 * rank + i, i = 1, m)]
    status = strata_iall_gather(handle, c_loc(ga(rank * m + 1)), c_loc(ga), int(m, c_size_t), STRATA_F32, &
                                request=requests(4))
    call expect_ok(status, 'strata_iall_gather')
    status = strata_ireduce(handle, c_loc(ka), merge(c_loc(kb), c_null_ptr, rank == 0), int(n, c_size_t), &
                            STRATA_I32, STRATA_SUM, 0, request=requests(5))
    call expect_ok(status, 'strata_ireduce')
    buffers(1) = c_loc(xa)
    counts(1) = int(n, c_size_t)
    dtypes(1) = STRATA_F32
    ! xa is also the first request's input: the batch reduces it in place
    ! after that request ran (requests run in the order started).
    status = strata_ibatch_all_reduce(handle, buffers, counts, dtypes, 1_c_size_t, STRATA_MAX, &
                                      request=requests(6))
    call expect_ok(status, 'strata_ibatch_all_reduce')

    status = strata_request_wait(requests(4))
    call expect_ok(status, 'strata_request_wait (all_gather)')
    flag = 0
    do while (flag == 0)
      status = strata_request_test(requests(2), flag)
      call expect_ok(status, 'strata_request_test (broadcast)')
      if (status /= STRATA_OK) exit
    end do
    do q = 6, 1, -1
      status = strata_request_wait(requests(q))
      call expect_ok(status, 'strata_request_wait')
    end do
    call check(all(ya == [(nranks * (mod(i, 13) + 0.0) + 0.5 * nranks * (nranks + 1) / 2, i = 1, n)]), &
               'iall_reduce values')
    call check(all(xa == [(0.5 * nranks + mod(i, 13), i = 1, n)]), 'ibatch_all_reduce (max) values')
    call check(all(da == [(1.0d0 / (i + 3), i = 1, n)]), 'ibroadcast values')
    call check(all(ba == [(nranks * 0.25 * (rank * m + i) + nranks * (nranks - 1) / 2, i = 1, m)]), &
               'ireduce_scatter values')
    call check(all(ga == [((100.0 * r + i, i = 1, m), r = 0, nranks - 1)]), 'iall_gather values')
    if (rank == 0) call check(all(kb == [(1000 * nranks * (nranks - 1) / 2 + nranks * i, i = 1, n)]), &
                              'ireduce values')
    do q = 1, 6
      status = strata_request_free(requests(q))
      call check(status == STRATA_OK .and. .not. c_associated(requests(q)), 'strata_request_free')
    end do

    ! Persistent: bound once, started three times on new data.
    status = strata_all_reduce_init(handle, c_loc(ka), c_loc(kb), int(n, c_size_t), STRATA_I32, STRATA_SUM, &
                                    request=persistent)
    call expect_ok(status, 'strata_all_reduce_init')
    do round = 1, 3
      ka = [((rank + 1) * round + i, i = 1, n)]
      kb = -1
      status = strata_request_start(persistent)
      call expect_ok(status, 'strata_request_start')
      status = strata_request_wait(persistent)
      call expect_ok(status, 'strata_request_wait (persistent)')
      call check(all(kb == [(round * nranks * (nranks + 1) / 2 + nranks * i, i = 1, n)]), 'persistent values')
    end do
    status = strata_request_free(persistent)
    call check(status == STRATA_OK .and. .not. c_associated(persistent), 'strata_request_free (persistent)')

    ! Freeing an active request completes it.
    ya = [(rank + i, i = 1, n)]
    status = strata_iall_reduce(handle, c_loc(ya), c_loc(ya), int(n, c_size_t), STRATA_F32, STRATA_MIN, &
                                request=requests(1))
    call expect_ok(status, 'strata_iall_reduce (min, in place)')
    status = strata_request_free(requests(1))
    call check(status == STRATA_OK .and. .not. c_associated(requests(1)), 'strata_request_free (active)')
    call check(all(ya == [(real(i, c_float), i = 1, n)]), 'request completed by strata_request_free')

    ! An invalid root on the last rank: INVALID_ARGUMENT there, MISMATCH elsewhere.
    bad_root = merge(nranks, 0, rank == nranks - 1)
    status = strata_ireduce(handle, c_loc(ka), c_loc(kb), int(n, c_size_t), STRATA_I32, STRATA_SUM, bad_root, &
                            request=requests(1))
    call expect_ok(status, 'strata_ireduce (invalid root)')
    status = strata_request_wait(requests(1))
    message = strata_last_error_f()
    if (rank == nranks - 1) then
      call check(status == STRATA_ERR_INVALID_ARGUMENT, 'invalid root gave ' // strata_status_name_f(status))
    else
      call check(status == STRATA_ERR_MISMATCH, 'the others gave ' // strata_status_name_f(status))
    end if
    call check(index(message, ']: strata_request_wait: ') > 0 .and. index(message, 'root') > 0, &
               'invalid root message: ' // message)
    status = strata_request_free(requests(1))
    call check(status == STRATA_OK, 'strata_request_free (after the error)')
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    call test_check(ok, what)
  end subroutine

  subroutine expect_ok(got, what)
    integer(c_int), intent(in) :: got
    character(len=*), intent(in) :: what
    call check(got == STRATA_OK, what // ' returned ' // strata_status_name_f(got) // ': ' // strata_last_error_f())
  end subroutine

end program test_fortran
