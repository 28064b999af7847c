// The intercepted request calls, after the re-entrancy check: the
// completion family, MPI_Request_free, MPI_Request_get_status, MPI_Start
// and MPI_Startall (and the communicator frees, at the end). Each has exactly the contract of the MPI function it
// replaces, for arrays that mix routed requests (requests.hpp) with MPI's
// own, MPI_REQUEST_NULL and inactive persistent requests: strata's side of
// each routed request is completed (the wait calls) or advanced
// (Request::test(), the test calls) on the calling thread, MPI's entries
// go to PMPI_* with the routed ones replaced by MPI_REQUEST_NULL, and
// indices, statuses and MPI_UNDEFINED come back as MPI defines them. With
// no routed request alive, each goes straight to PMPI_*.
//
// Order: routed requests are completed in the order they were started, not
// in array order, so that ranks listing the same requests differently
// still run strata's collectives in the same order (strata runs one
// communicator's requests in start order anyway). Across communicators
// too: a routed request runs after every one started before it
// (requests.hpp, poll), and a call that would wait for MPI's own requests,
// or return from a test with nothing done, first runs every active routed
// request (advance_all_routed): a peer may be running one of them, waiting
// for this rank, before it can complete what this rank waits for.
#pragma once

#include <mpi.h>

namespace strata::interpose {

int wait(MPI_Request* request, MPI_Status* status);
int test(MPI_Request* request, int* flag, MPI_Status* status);
int wait_all(int count, MPI_Request requests[], MPI_Status statuses[]);
int wait_any(int count, MPI_Request requests[], int* index, MPI_Status* status);
int wait_some(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]);
int test_all(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]);
int test_any(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status);
int test_some(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]);
int request_get_status(MPI_Request request, int* flag, MPI_Status* status);
int request_free(MPI_Request* request);
int start(MPI_Request* request);
int start_all(int count, MPI_Request requests[]);

// MPI_Comm_free and MPI_Comm_disconnect: every active routed request runs
// first, then MPI frees the communicator. A request started on a
// communicator without a strata side yet holds only the communicator's
// handle (started.hpp makes the side later), which the free invalidates;
// MPI lets a program free a communicator while its collectives are
// pending.
int comm_free(MPI_Comm* comm);
int comm_disconnect(MPI_Comm* comm);

}  // namespace strata::interpose
