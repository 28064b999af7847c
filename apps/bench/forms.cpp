// The three forms over a collective's descriptor (collectives.cpp).
#include "forms.hpp"

namespace bench {

FormCall::FormCall(const Collective& c, Context& ctx, Buffers& buffers, Form form, cuda::DeviceStream* stream)
    : c_(c), ctx_(ctx), buffers_(buffers), form_(form), stream_(stream) {
  // options.cpp refuses persistent where the descriptor has no bind (batch).
  if (form_ == Form::persistent) request_ = c_.bind(ctx_, buffers_);
}

void FormCall::start() {
  switch (form_) {
    case Form::blocking: c_.run(ctx_, buffers_); return;
    case Form::nonblocking: request_ = c_.start(ctx_, buffers_); return;
    case Form::persistent: request_.start(); return;
  }
}

void FormCall::wait() {
  if (form_ != Form::blocking) request_.wait();
  // The stream-ordered call's work (and its result) is ordered on the
  // stream; the host may read the outputs only once the stream has passed it.
  if (stream_) stream_->synchronize();
}

}  // namespace bench
