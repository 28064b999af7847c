// strata's call as --form makes it: the blocking call; the non-blocking one
// (i*, then Request::wait); or a persistent request (*_init) bound once per
// size, then start() and wait() per call. The driver times and checks
// through this, so that the result check runs the form that is timed;
// --overlap puts a computation between start() and wait().
// --stream-ordered is the blocking form with a stream: start() makes the
// call (CommunicationOptions::stream, which returns once enqueued) and
// wait() waits for that stream.
#pragma once

#include "collectives.hpp"
#include "cuda_buffers.hpp"
#include "options.hpp"
#include "strata/strata.hpp"

namespace bench {

class FormCall {
 public:
  // Persistent: binds the request to the buffers' current views, so make
  // one per size, after Buffers::set_count (a request bound at another size
  // would keep running on the old views). `c`, `ctx` and `buffers` must
  // outlive it. `stream`: --stream-ordered's stream, whose handle is
  // ctx.call.stream (blocking form only); null otherwise. It must outlive
  // the FormCall too.
  FormCall(const Collective& c, Context& ctx, Buffers& buffers, Form form, cuda::DeviceStream* stream = nullptr);

  // One complete call.
  void run() {
    start();
    wait();
  }
  // Starts the call (blocking: makes all of it here; stream-ordered: makes
  // the call, which may return before its work is done).
  void start();
  // Returns when the call start() began is complete, its result in the
  // output buffers (stream-ordered: when the stream has drained); throws
  // its error.
  void wait();

  // Whether every call reruns one bound request (persistent): a check must
  // then prove that a rerun reads the buffers anew.
  bool reruns() const { return form_ == Form::persistent; }

 private:
  const Collective& c_;
  Context& ctx_;
  Buffers& buffers_;
  Form form_;
  cuda::DeviceStream* stream_;
  strata::Request request_;  // nonblocking: the running call; persistent: the bound one
};

}  // namespace bench
