// NCCL's threading rule: NCCL calls for communicators on one device must be
// serialized across host threads (NCCL's thread-safety notes: issuing NCCL
// operations in parallel to independent communicators on the same device
// is not safe). The double marks a thread inside an NCCL call for its
// device, and reports a second thread that enters a call for that device
// meanwhile, naming both threads and the device. An ncclGroupStart ..
// ncclGroupEnd span counts as one call: the thread holds each device it
// touches inside the span until the span ends, and another thread's call
// for that device made anywhere inside the span is reported too.
//
// Calls that count: initialisation, collectives, send and receive,
// finalize, destroy and group spans. ncclCommGetAsyncError, ncclCommAbort
// and the queries are meant to be called from other threads and do not.
// Once more than one thread has made NCCL calls, each call holds its
// device for a short seeded while, so that overlapping calls show.
#pragma once

namespace gpu_double::nccl {

class Inside {
 public:
  Inside(const char* call, int device);
  ~Inside();
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;

 private:
  int device_;
  bool owned_ = false;
};

// The calling thread's outermost ncclGroupStart and ncclGroupEnd.
void begin_span();
void end_span();

}  // namespace gpu_double::nccl
