! Fortran module `strata`: ISO_C_BINDING interfaces to strata's C API
! (include/strata/strata.h), plus three helpers that return C strings as
! Fortran strings. Installed as source next to strata.h: compile it with
! your own Fortran compiler (so the .mod file matches it) together with
! your program, e.g.
!   mpifort $(pkg-config --variable=includedir strata)/strata/strata.f90 prog.f90 \
!     $(pkg-config --libs strata) -o prog
! See docs/C_API.md, "From Fortran".
!
! Conventions (the C API's, see strata.h for each function's contract):
! - Every function returns an integer(c_int) status, STRATA_OK on success;
!   strata_last_error_f() is the failing call's message.
! - Communicators are type(c_ptr) handles from strata_comm_create_f, which
!   takes an `integer` MPI communicator (`use mpi`; with `use mpi_f08` pass
!   comm%MPI_VAL). Release them with strata_comm_free before MPI_Finalize.
! - Buffers are type(c_ptr): c_loc(x) of an array declared with `target`;
!   counts are integer(c_size_t) element counts.
! - Option arguments (config, options, packing) are optional: leave them out
!   for the defaults. The derived types start out with the defaults.
! - Requests (the non-blocking strata_i* and persistent *_init calls) are
!   type(c_ptr) handles too, the last argument (pass it by keyword,
!   request=req, when leaving out the options). Their buffers belong to
!   strata until the request completes: declare them `target, asynchronous`
!   so that the compiler neither copies them nor keeps their values in
!   registers across strata_request_wait. Free each request with
!   strata_request_free (it completes an active one first).
module strata
  use, intrinsic :: iso_c_binding, only: c_int, c_long_long, c_size_t, c_double, c_char, c_ptr, c_null_ptr, &
                                         c_f_pointer, c_associated
  implicit none
  private

  ! strata_status
  enum, bind(c)
    enumerator :: STRATA_OK = 0, STRATA_ERR_INVALID_ARGUMENT = 1, STRATA_ERR_DEADLINE_EXCEEDED = 2, &
                  STRATA_ERR_MISMATCH = 3, STRATA_ERR_PEER_FAILURE = 4, STRATA_ERR_UNAVAILABLE = 5, &
                  STRATA_ERR_BACKEND = 6, STRATA_ERR_INTERNAL = 7, STRATA_ERR_CORRUPTED = 8
  end enum
  ! strata_dtype (real(c_float) = STRATA_F32, real(c_double) = STRATA_F64,
  ! integer(c_int32_t) = STRATA_I32, integer(c_int64_t) = STRATA_I64, ...)
  enum, bind(c)
    enumerator :: STRATA_F32 = 0, STRATA_F64 = 1, STRATA_F16 = 2, STRATA_BF16 = 3, STRATA_I8 = 4, STRATA_U8 = 5, &
                  STRATA_I32 = 6, STRATA_U32 = 7, STRATA_I64 = 8, STRATA_U64 = 9
  end enum
  ! strata_op
  enum, bind(c)
    enumerator :: STRATA_SUM = 0, STRATA_MEAN = 1, STRATA_MIN = 2, STRATA_MAX = 3, STRATA_PROD = 4
  end enum
  ! strata_implementation
  enum, bind(c)
    enumerator :: STRATA_IMPL_AUTO = 0, STRATA_IMPL_RING = 1, STRATA_IMPL_NCCL = 2
  end enum
  ! strata_memory
  enum, bind(c)
    enumerator :: STRATA_MEMORY_HOST = 0, STRATA_MEMORY_CUDA = 1
  end enum
  public :: STRATA_OK, STRATA_ERR_INVALID_ARGUMENT, STRATA_ERR_DEADLINE_EXCEEDED, STRATA_ERR_MISMATCH, &
            STRATA_ERR_PEER_FAILURE, STRATA_ERR_UNAVAILABLE, STRATA_ERR_BACKEND, STRATA_ERR_INTERNAL, &
            STRATA_ERR_CORRUPTED
  public :: STRATA_F32, STRATA_F64, STRATA_F16, STRATA_BF16, STRATA_I8, STRATA_U8, STRATA_I32, STRATA_U32, &
            STRATA_I64, STRATA_U64
  public :: STRATA_SUM, STRATA_MEAN, STRATA_MIN, STRATA_MAX, STRATA_PROD
  public :: STRATA_IMPL_AUTO, STRATA_IMPL_RING, STRATA_IMPL_NCCL, STRATA_MEMORY_HOST, STRATA_MEMORY_CUDA

  ! strata_config: all_reduce_spec and reproducible are c_null_ptr (the
  ! defaults) or c_loc of a `character(kind=c_char), target` string ending
  ! in c_null_char.
  type, bind(c), public :: strata_config
    type(c_ptr) :: all_reduce_spec = c_null_ptr
    integer(c_size_t) :: chunk_bytes = 0
    integer(c_int) :: check_calls = 1
    integer(c_int) :: progress_thread = 0
    type(c_ptr) :: reproducible = c_null_ptr  ! "off", "order" or "exact", as all_reduce_spec
    integer(c_int) :: accumulate_f32 = 0
    integer(c_int) :: verify = 0  ! 1: the integrity check after each host call (strata.h)
  end type

  ! strata_options: per-call options and where the call's buffers live.
  ! stream: c_null_ptr (a blocking call), or a cudaStream_t as type(c_ptr)
  ! for a stream-ordered call on CUDA buffers (CUDA Fortran:
  ! transfer(stream, c_null_ptr) of an integer(cuda_stream_kind) stream;
  ! transfer(1_c_intptr_t, c_null_ptr) is cudaStreamLegacy); see strata.h.
  type, bind(c), public :: strata_options
    integer(c_long_long) :: bytes_per_pack = 0
    real(c_double) :: timeout_seconds = 0
    integer(c_int) :: implementation = STRATA_IMPL_AUTO
    integer(c_int) :: memory = STRATA_MEMORY_HOST
    integer(c_int) :: device = -1
    type(c_ptr) :: stream = c_null_ptr
  end type

  ! strata_packing: how strata_batch_all_reduce packs buffers.
  type, bind(c), public :: strata_packing
    integer(c_int) :: num_packs = 0
    integer(c_long_long) :: agg_small_grads_max_bytes = 0
    integer(c_int) :: agg_small_grads_max_group = 10
  end type

  public :: strata_comm_create_f, strata_comm_free, strata_comm_rank, strata_comm_size, strata_comm_broken
  public :: strata_comm_check
  public :: strata_all_reduce, strata_reduce, strata_broadcast, strata_reduce_scatter, strata_all_gather
  public :: strata_batch_all_reduce
  public :: strata_iall_reduce, strata_ireduce, strata_ibroadcast, strata_ireduce_scatter, strata_iall_gather
  public :: strata_ibatch_all_reduce
  public :: strata_all_reduce_init, strata_reduce_init, strata_broadcast_init, strata_reduce_scatter_init, &
            strata_all_gather_init
  public :: strata_request_test, strata_request_wait, strata_request_start, strata_request_free
  public :: strata_version, strata_last_error, strata_status_name, strata_version_string
  public :: strata_last_error_f, strata_status_name_f, strata_version_string_f

  interface
    ! handle = new communicator over the Fortran communicator `comm`.
    integer(c_int) function strata_comm_create_f(comm, config, handle) bind(c, name='strata_comm_create_f')
      import :: c_int, c_ptr, strata_config
      integer(c_int), value :: comm
      type(strata_config), intent(in), optional :: config
      type(c_ptr), intent(out) :: handle
    end function

    ! Releases handle and sets it to c_null_ptr.
    integer(c_int) function strata_comm_free(handle) bind(c, name='strata_comm_free')
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: handle
    end function

    integer(c_int) function strata_comm_rank(handle, rank) bind(c, name='strata_comm_rank')
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), intent(out) :: rank
    end function

    integer(c_int) function strata_comm_size(handle, size) bind(c, name='strata_comm_size')
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), intent(out) :: size
    end function

    ! broken = 1 once a timeout or peer failure broke the communicator.
    integer(c_int) function strata_comm_broken(handle, broken) bind(c, name='strata_comm_broken')
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), intent(out) :: broken
    end function

    ! STRATA_OK while the communicator is usable; else the error that broke
    ! it (once: DEADLINE_EXCEEDED or BACKEND from after a stream-ordered
    ! call returned), then STRATA_ERR_PEER_FAILURE. Local, never waits.
    integer(c_int) function strata_comm_check(handle) bind(c, name='strata_comm_check')
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
    end function

    ! In place when in and out are the same c_loc.
    integer(c_int) function strata_all_reduce(handle, in, out, count, dtype, op, options) &
        bind(c, name='strata_all_reduce')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
    end function

    ! Root is a 0-based rank; out may be c_null_ptr on the other ranks.
    integer(c_int) function strata_reduce(handle, in, out, count, dtype, op, root, options) &
        bind(c, name='strata_reduce')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(strata_options), intent(in), optional :: options
    end function

    integer(c_int) function strata_broadcast(handle, buffer, count, dtype, root, options) &
        bind(c, name='strata_broadcast')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(strata_options), intent(in), optional :: options
    end function

    ! in holds size x recv_count elements; rank r's out gets op over every
    ! rank's block r (0-based: elements r*recv_count+1 .. (r+1)*recv_count).
    ! In place when out is c_loc of this rank's block of in.
    integer(c_int) function strata_reduce_scatter(handle, in, out, recv_count, dtype, op, options) &
        bind(c, name='strata_reduce_scatter')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
    end function

    ! out holds size x send_count elements; rank r's in lands at block r
    ! (0-based: elements r*send_count+1 .. (r+1)*send_count). In place when
    ! in is c_loc of this rank's block of out.
    integer(c_int) function strata_all_gather(handle, in, out, send_count, dtype, options) &
        bind(c, name='strata_all_gather')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(strata_options), intent(in), optional :: options
    end function

    ! n buffers reduced in place: buffers(i) = c_loc(array i), counts(i) its
    ! element count, dtypes(i) its dtype.
    integer(c_int) function strata_batch_all_reduce(handle, buffers, counts, dtypes, n, op, packing, options) &
        bind(c, name='strata_batch_all_reduce')
      import :: c_int, c_ptr, c_size_t, strata_packing, strata_options
      type(c_ptr), value :: handle
      type(c_ptr), intent(in) :: buffers(*)
      integer(c_size_t), intent(in) :: counts(*)
      integer(c_int), intent(in) :: dtypes(*)
      integer(c_size_t), value :: n
      integer(c_int), value :: op
      type(strata_packing), intent(in), optional :: packing
      type(strata_options), intent(in), optional :: options
    end function

    ! Non-blocking forms: the blocking call's arguments, then request, a new
    ! handle (c_null_ptr when the call fails). Errors of the run come from
    ! strata_request_test / strata_request_wait.
    integer(c_int) function strata_iall_reduce(handle, in, out, count, dtype, op, options, request) &
        bind(c, name='strata_iall_reduce')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_ireduce(handle, in, out, count, dtype, op, root, options, request) &
        bind(c, name='strata_ireduce')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_ibroadcast(handle, buffer, count, dtype, root, options, request) &
        bind(c, name='strata_ibroadcast')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_ireduce_scatter(handle, in, out, recv_count, dtype, op, options, request) &
        bind(c, name='strata_ireduce_scatter')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_iall_gather(handle, in, out, send_count, dtype, options, request) &
        bind(c, name='strata_iall_gather')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    ! buffers, counts and dtypes are copied; the arrays they point at are
    ! strata's until the request completes.
    integer(c_int) function strata_ibatch_all_reduce(handle, buffers, counts, dtypes, n, op, packing, options, &
                                                     request) bind(c, name='strata_ibatch_all_reduce')
      import :: c_int, c_ptr, c_size_t, strata_packing, strata_options
      type(c_ptr), value :: handle
      type(c_ptr), intent(in) :: buffers(*)
      integer(c_size_t), intent(in) :: counts(*)
      integer(c_int), intent(in) :: dtypes(*)
      integer(c_size_t), value :: n
      integer(c_int), value :: op
      type(strata_packing), intent(in), optional :: packing
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    ! Persistent forms: bind the call (nothing is sent); each
    ! strata_request_start runs it again on the same buffers.
    integer(c_int) function strata_all_reduce_init(handle, in, out, count, dtype, op, options, request) &
        bind(c, name='strata_all_reduce_init')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_reduce_init(handle, in, out, count, dtype, op, root, options, request) &
        bind(c, name='strata_reduce_init')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_broadcast_init(handle, buffer, count, dtype, root, options, request) &
        bind(c, name='strata_broadcast_init')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, buffer
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_reduce_scatter_init(handle, in, out, recv_count, dtype, op, options, request) &
        bind(c, name='strata_reduce_scatter_init')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: recv_count
      integer(c_int), value :: dtype, op
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    integer(c_int) function strata_all_gather_init(handle, in, out, send_count, dtype, options, request) &
        bind(c, name='strata_all_gather_init')
      import :: c_int, c_ptr, c_size_t, strata_options
      type(c_ptr), value :: handle, in, out
      integer(c_size_t), value :: send_count
      integer(c_int), value :: dtype
      type(strata_options), intent(in), optional :: options
      type(c_ptr), intent(out) :: request
    end function

    ! flag = 1 once the run is complete (also when it failed: the status is
    ! its error, reported once), else 0.
    integer(c_int) function strata_request_test(request, flag) bind(c, name='strata_request_test')
      import :: c_int, c_ptr
      type(c_ptr), value :: request
      integer(c_int), intent(out) :: flag
    end function

    ! Returns when the run is complete, with its status.
    integer(c_int) function strata_request_wait(request) bind(c, name='strata_request_wait')
      import :: c_int, c_ptr
      type(c_ptr), value :: request
    end function

    ! Persistent requests: runs the bound call again.
    integer(c_int) function strata_request_start(request) bind(c, name='strata_request_start')
      import :: c_int, c_ptr
      type(c_ptr), value :: request
    end function

    ! Completes an active request first (its status is returned), releases
    ! it and sets request to c_null_ptr.
    integer(c_int) function strata_request_free(request) bind(c, name='strata_request_free')
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: request
    end function

    subroutine strata_version(major, minor, patch) bind(c, name='strata_version')
      import :: c_int
      integer(c_int), intent(out) :: major, minor, patch
    end subroutine

    ! The C strings; strata_last_error_f() and friends below convert them.
    type(c_ptr) function strata_last_error() bind(c, name='strata_last_error')
      import :: c_ptr
    end function

    type(c_ptr) function strata_status_name(status) bind(c, name='strata_status_name')
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function

    type(c_ptr) function strata_version_string() bind(c, name='strata_version_string')
      import :: c_ptr
    end function

    integer(c_size_t) function c_strlen(text) bind(c, name='strlen')
      import :: c_size_t, c_ptr
      type(c_ptr), value :: text
    end function
  end interface

contains

  ! The message of this thread's last failing strata call ('' if none).
  function strata_last_error_f() result(text)
    character(len=:), allocatable :: text
    text = from_c(strata_last_error())
  end function

  ! 'STRATA_OK', 'STRATA_ERR_INVALID_ARGUMENT', ... for a status value.
  function strata_status_name_f(status) result(text)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: text
    text = from_c(strata_status_name(status))
  end function

  ! The loaded library's version, 'MAJOR.MINOR.PATCH'.
  function strata_version_string_f() result(text)
    character(len=:), allocatable :: text
    text = from_c(strata_version_string())
  end function

  ! A copy of the NUL-terminated C string at `p` ('' for a null pointer).
  function from_c(p) result(text)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      text = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function

end module strata
