"""strata's errors. The C++ library's exceptions arrive as these classes.

Every one is a strata.Error (a RuntimeError), and two are also the built-in
exception Python code expects: InvalidArgument is a ValueError, and
DeadlineExceeded a TimeoutError.
"""


class Error(RuntimeError):
    """Any strata failure; the message says where (rank, host, call) and why."""


class InvalidArgument(Error, ValueError):
    """Bad input, detected before anything was sent (no peer is left waiting)."""


class DeadlineExceeded(Error, TimeoutError):
    """A call's timeout expired; the communicator is broken afterwards.

    waiting_for: the ranks that did not arrive (no answer to the roll call:
    stopped, crashed or busy outside strata); empty when nobody is known to
    be missing (every rank answered, or the backend cannot tell, e.g. NCCL).
    in_earlier_call: the ranks that answered from an earlier call, waiting
    there themselves (usually on the same missing ranks): never counted as
    missing.
    """

    def __init__(self, message, waiting_for=(), in_earlier_call=()):
        # TimeoutError is an OSError, whose two-argument form would read
        # (errno, strerror): pass the message alone.
        super().__init__(message)
        self.waiting_for = list(waiting_for)
        self.in_earlier_call = list(in_earlier_call)


class Mismatch(Error):
    """Ranks disagreed about a call (count, dtype, op, root, replicas)."""


class PeerFailure(Error):
    """A peer failed or an earlier call (a timeout) broke the communicator."""


class Unavailable(Error):
    """A feature that is not available here (no GPU, built without CUDA)."""


class BackendError(Error):
    """A return code from MPI, CUDA or NCCL.

    backend ("MPI", "CUDA", "NCCL"), code (its return code), host and rank
    (-1 when unknown) say where.
    """

    def __init__(self, message, backend="", code=0, host="", rank=-1):
        super().__init__(message)
        self.backend = backend
        self.code = code
        self.host = host
        self.rank = rank


class Corrupted(Error):
    """A result failed the integrity check (verify="checksum", STRATA_VERIFY).

    Raised on every rank; the message names the call and which ranks'
    results differ or which sum disagreed. The communicator stays usable;
    the call's outputs are unreliable.
    """


__all__ = ["Error", "InvalidArgument", "DeadlineExceeded", "Mismatch", "PeerFailure", "Unavailable", "BackendError",
           "Corrupted"]
