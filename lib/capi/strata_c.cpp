// The C API (include/strata/strata.h): thin wrappers over the public C++
// API. Each entry point converts its C arguments to strata's C++ types and
// calls strata::Communicator inside capi::guarded, which turns any
// exception into a strata_status and this thread's last error message.
#include "strata/strata.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "capi/status.hpp"
#include "strata/strata.hpp"
#include "util/where.hpp"

// The handles behind the opaque strata_comm* and strata_request*.
struct strata_comm {
  strata::Communicator comm;
};

struct strata_request {
  strata::Request request;
};

namespace strata::capi {
namespace {

// The C enumerators are the C++ enumerators' values, so conversions are casts.
static_assert(STRATA_F32 == int(DataType::f32) && STRATA_F64 == int(DataType::f64) &&
              STRATA_F16 == int(DataType::f16) && STRATA_BF16 == int(DataType::bf16) &&
              STRATA_I8 == int(DataType::i8) && STRATA_U8 == int(DataType::u8) && STRATA_I32 == int(DataType::i32) &&
              STRATA_U32 == int(DataType::u32) && STRATA_I64 == int(DataType::i64) && STRATA_U64 == int(DataType::u64));
static_assert(STRATA_SUM == int(ReduceOp::sum) && STRATA_MEAN == int(ReduceOp::mean) &&
              STRATA_MIN == int(ReduceOp::min) && STRATA_MAX == int(ReduceOp::max) &&
              STRATA_PROD == int(ReduceOp::prod));
static_assert(STRATA_IMPL_AUTO == int(Implementation::automatic) && STRATA_IMPL_RING == int(Implementation::ring) &&
              STRATA_IMPL_NCCL == int(Implementation::nccl));
static_assert(STRATA_MEMORY_HOST == int(Memory::host) && STRATA_MEMORY_CUDA == int(Memory::cuda));

// Out-of-range values pass through unchanged (as ints): the C++ API's own
// validation rejects them with InvalidArgument naming the field.
DataType dtype_of(strata_dtype dtype) { return static_cast<DataType>(static_cast<int>(dtype)); }
ReduceOp op_of(strata_op op) { return static_cast<ReduceOp>(static_cast<int>(op)); }

Communicator& comm_of(strata_comm* comm) {
  if (comm == nullptr) throw InvalidArgument(util::located("comm is NULL; create one with strata_comm_create"));
  return comm->comm;
}

// One call's options in C++ terms: the CommunicationOptions plus where all
// of the call's buffers live.
struct Call {
  CommunicationOptions options;
  Memory memory = Memory::host;
  int device = -1;
};

Call call_of(const strata_options* options) {
  strata_options c = STRATA_OPTIONS_INIT;
  if (options != nullptr) c = *options;
  Call call;  // by member: CommunicationOptions may grow fields
  call.options.bytes_per_pack = c.bytes_per_pack;
  call.options.timeout_seconds = c.timeout_seconds;
  call.options.implementation = static_cast<Implementation>(static_cast<int>(c.implementation));
  call.options.stream = c.stream;
  call.memory = static_cast<Memory>(static_cast<int>(c.memory));
  call.device = c.device;
  return call;
}

// strata only reads `in` buffers; the const_cast is for Tensor's one pointer type.
Tensor tensor(const void* data, std::size_t count, strata_dtype dtype, const Call& call) {
  return {const_cast<void*>(data), count, dtype_of(dtype), call.memory, call.device};
}

// The element count of a blockwise call's whole buffer (reduce_scatter's
// `in`, all_gather's `out`): `count` per rank times the ranks. Refused here
// when the product overflows: the C++ API is given the whole count, so its
// message could not name the argument the caller passed.
std::size_t whole_count(const Communicator& comm, std::size_t count, const char* field) {
  std::size_t whole = 0;
  if (__builtin_mul_overflow(count, static_cast<std::size_t>(comm.size()), &whole))
    throw InvalidArgument(util::located(
        fmt::format("{} = {} times the {} ranks of this communicator does not fit a size_t; pass the element count "
                    "of one rank's block",
                    field, count, comm.size())));
  return whole;
}

Config config_of(const strata_config* config) {
  strata_config c = STRATA_CONFIG_INIT;
  if (config != nullptr) c = *config;
  Config result;  // by member: Config may grow fields
  result.all_reduce_spec = c.all_reduce_spec ? c.all_reduce_spec : "";
  result.chunk_bytes = c.chunk_bytes;
  result.check_calls = c.check_calls != 0;
  result.progress_thread = c.progress_thread != 0;
  result.reproducible = c.reproducible ? c.reproducible : "";
  result.accumulate_f32 = c.accumulate_f32 != 0;
  result.verify = static_cast<Verification>(c.verify);  // (validated with the rest of the config)
  return result;
}

PackingOptions packing_of(const strata_packing* packing) {
  strata_packing p = STRATA_PACKING_INIT;
  if (packing != nullptr) p = *packing;
  return {p.num_packs, p.agg_small_grads_max_bytes, p.agg_small_grads_max_group};
}

template <typename T>
void require_out(const T* out, const char* name) {
  if (out == nullptr)
    throw InvalidArgument(util::located(fmt::format("{} is NULL; pass the address of a variable to receive it", name)));
}

strata::Request& request_of(strata_request* req) {
  if (req == nullptr)
    throw InvalidArgument(util::located("req is NULL; pass a request made by one of the strata_i* or *_init calls"));
  return req->request;
}

// A request-making call: *req = NULL until make() returned the request,
// which then goes into a new handle (make throws only where no request can
// be made; the C++ calls report the rest from the request).
template <typename Make>
strata_status make_request(const char* function, strata_request** req, Make&& make) {
  if (req != nullptr) *req = nullptr;
  return guarded(function, [&] {
    require_out(req, "req");
    *req = new strata_request{make()};
  });
}

// A batch's tensors (the C++ call copies them: the arrays need not outlive it).
std::vector<Tensor> batch_tensors(void* const* buffers, const size_t* counts, const strata_dtype* dtypes, size_t n,
                                  const Call& call) {
  if (n > 0 && (buffers == nullptr || counts == nullptr || dtypes == nullptr))
    throw InvalidArgument(
        util::located(fmt::format("n = {} but {} NULL; pass n entries in each of buffers, counts and dtypes", n,
                                  buffers == nullptr  ? "buffers is"
                                  : counts == nullptr ? "counts is"
                                                      : "dtypes is")));
  std::vector<Tensor> tensors;
  tensors.reserve(n);
  for (std::size_t i = 0; i < n; ++i) tensors.push_back(tensor(buffers[i], counts[i], dtypes[i], call));
  return tensors;
}

strata_status create(const char* function, MPI_Comm comm, const strata_config* config, strata_comm** out) {
  if (out != nullptr) *out = nullptr;
  return guarded(function, [&] {
    require_out(out, "out");
    *out = new strata_comm{Communicator(comm, config_of(config))};
  });
}

struct Version {
  int major = 0, minor = 0, patch = 0;
};

// Parsed once from strata::version ("MAJOR.MINOR.PATCH", from meson.build).
const Version& parsed_version() {
  static const Version parsed = [] {
    Version v;
    std::sscanf(strata::version, "%d.%d.%d", &v.major, &v.minor, &v.patch);
    return v;
  }();
  return parsed;
}

}  // namespace
}  // namespace strata::capi

using namespace strata;
using namespace strata::capi;

void strata_config_init(strata_config* config) {
  if (config != nullptr) *config = STRATA_CONFIG_INIT;
}
void strata_options_init(strata_options* options) {
  if (options != nullptr) *options = STRATA_OPTIONS_INIT;
}
void strata_packing_init(strata_packing* packing) {
  if (packing != nullptr) *packing = STRATA_PACKING_INIT;
}

strata_status strata_comm_create(MPI_Comm comm, const strata_config* config, strata_comm** out) {
  return create("strata_comm_create", comm, config, out);
}

strata_status strata_comm_create_f(MPI_Fint comm, const strata_config* config, strata_comm** out) {
  return create("strata_comm_create_f", MPI_Comm_f2c(comm), config, out);
}

strata_status strata_comm_free(strata_comm** comm) {
  if (comm != nullptr) {
    delete *comm;  // ~Communicator never throws
    *comm = nullptr;
  }
  return STRATA_OK;
}

strata_status strata_comm_rank(const strata_comm* comm, int* rank) {
  return guarded("strata_comm_rank", [&] {
    require_out(rank, "rank");
    *rank = comm_of(const_cast<strata_comm*>(comm)).rank();
  });
}

strata_status strata_comm_size(const strata_comm* comm, int* size) {
  return guarded("strata_comm_size", [&] {
    require_out(size, "size");
    *size = comm_of(const_cast<strata_comm*>(comm)).size();
  });
}

strata_status strata_comm_broken(const strata_comm* comm, int* broken) {
  return guarded("strata_comm_broken", [&] {
    require_out(broken, "broken");
    *broken = comm_of(const_cast<strata_comm*>(comm)).broken() ? 1 : 0;
  });
}

strata_status strata_comm_check(strata_comm* comm) {
  return guarded("strata_comm_check", [&] { comm_of(comm).check(); });
}

strata_status strata_comm_dump_flight_record(strata_comm* comm, char* path, size_t path_size) {
  return guarded("strata_comm_dump_flight_record", [&] {
    const std::string written = comm_of(comm).dump_flight_record();
    if (path && path_size > 0) {
      const std::size_t length = std::min(written.size(), path_size - 1);
      std::memcpy(path, written.data(), length);
      path[length] = '\0';
    }
  });
}

strata_status strata_all_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                strata_op op, const strata_options* options) {
  return guarded("strata_all_reduce", [&] {
    const Call call = call_of(options);
    comm_of(comm).all_reduce(tensor(in, count, dtype, call), tensor(out, count, dtype, call), op_of(op),
                             call.options);
  });
}

strata_status strata_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                            strata_op op, int root, const strata_options* options) {
  return guarded("strata_reduce", [&] {
    const Call call = call_of(options);
    comm_of(comm).reduce(tensor(in, count, dtype, call), tensor(out, count, dtype, call), op_of(op), root,
                         call.options);
  });
}

strata_status strata_broadcast(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                               const strata_options* options) {
  return guarded("strata_broadcast", [&] {
    const Call call = call_of(options);
    comm_of(comm).broadcast(tensor(buffer, count, dtype, call), root, call.options);
  });
}

strata_status strata_reduce_scatter(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                    strata_dtype dtype, strata_op op, const strata_options* options) {
  return guarded("strata_reduce_scatter", [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    c.reduce_scatter(tensor(in, whole_count(c, recv_count, "recv_count"), dtype, call),
                     tensor(out, recv_count, dtype, call), op_of(op), call.options);
  });
}

strata_status strata_all_gather(strata_comm* comm, const void* in, void* out, size_t send_count, strata_dtype dtype,
                                const strata_options* options) {
  return guarded("strata_all_gather", [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    c.all_gather(tensor(in, send_count, dtype, call),
                 tensor(out, whole_count(c, send_count, "send_count"), dtype, call), call.options);
  });
}

strata_status strata_batch_all_reduce(strata_comm* comm, void* const* buffers, const size_t* counts,
                                      const strata_dtype* dtypes, size_t n, strata_op op,
                                      const strata_packing* packing, const strata_options* options) {
  return guarded("strata_batch_all_reduce", [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    std::vector<Tensor> tensors = batch_tensors(buffers, counts, dtypes, n, call);
    c.batch_all_reduce(tensors, op_of(op), packing_of(packing), call.options);
  });
}

// Non-blocking and persistent forms. Each collective's arguments are
// turned into its C++ call once; `Form` is the Communicator member that
// makes the request (iX or X_init, which take the same arguments).

namespace {

template <auto Form>
strata_status all_reduce_request(const char* function, strata_comm* comm, const void* in, void* out, size_t count,
                                 strata_dtype dtype, strata_op op, const strata_options* options,
                                 strata_request** req) {
  return make_request(function, req, [&] {
    const Call call = call_of(options);
    return (comm_of(comm).*Form)(tensor(in, count, dtype, call), tensor(out, count, dtype, call), op_of(op),
                                 call.options);
  });
}

template <auto Form>
strata_status reduce_request(const char* function, strata_comm* comm, const void* in, void* out, size_t count,
                             strata_dtype dtype, strata_op op, int root, const strata_options* options,
                             strata_request** req) {
  return make_request(function, req, [&] {
    const Call call = call_of(options);
    return (comm_of(comm).*Form)(tensor(in, count, dtype, call), tensor(out, count, dtype, call), op_of(op), root,
                                 call.options);
  });
}

template <auto Form>
strata_status broadcast_request(const char* function, strata_comm* comm, void* buffer, size_t count,
                                strata_dtype dtype, int root, const strata_options* options, strata_request** req) {
  return make_request(function, req, [&] {
    const Call call = call_of(options);
    return (comm_of(comm).*Form)(tensor(buffer, count, dtype, call), root, call.options);
  });
}

template <auto Form>
strata_status reduce_scatter_request(const char* function, strata_comm* comm, const void* in, void* out,
                                     size_t recv_count, strata_dtype dtype, strata_op op,
                                     const strata_options* options, strata_request** req) {
  return make_request(function, req, [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    return (c.*Form)(tensor(in, whole_count(c, recv_count, "recv_count"), dtype, call),
                     tensor(out, recv_count, dtype, call), op_of(op), call.options);
  });
}

template <auto Form>
strata_status all_gather_request(const char* function, strata_comm* comm, const void* in, void* out,
                                 size_t send_count, strata_dtype dtype, const strata_options* options,
                                 strata_request** req) {
  return make_request(function, req, [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    return (c.*Form)(tensor(in, send_count, dtype, call),
                     tensor(out, whole_count(c, send_count, "send_count"), dtype, call), call.options);
  });
}

}  // namespace

strata_status strata_iall_reduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                 strata_op op, const strata_options* options, strata_request** req) {
  return all_reduce_request<&Communicator::iall_reduce>("strata_iall_reduce", comm, in, out, count, dtype, op,
                                                        options, req);
}

strata_status strata_all_reduce_init(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                     strata_op op, const strata_options* options, strata_request** req) {
  return all_reduce_request<&Communicator::all_reduce_init>("strata_all_reduce_init", comm, in, out, count, dtype,
                                                            op, options, req);
}

strata_status strata_ireduce(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                             strata_op op, int root, const strata_options* options, strata_request** req) {
  return reduce_request<&Communicator::ireduce>("strata_ireduce", comm, in, out, count, dtype, op, root, options,
                                                req);
}

strata_status strata_reduce_init(strata_comm* comm, const void* in, void* out, size_t count, strata_dtype dtype,
                                 strata_op op, int root, const strata_options* options, strata_request** req) {
  return reduce_request<&Communicator::reduce_init>("strata_reduce_init", comm, in, out, count, dtype, op, root,
                                                    options, req);
}

strata_status strata_ibroadcast(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                                const strata_options* options, strata_request** req) {
  return broadcast_request<&Communicator::ibroadcast>("strata_ibroadcast", comm, buffer, count, dtype, root,
                                                      options, req);
}

strata_status strata_broadcast_init(strata_comm* comm, void* buffer, size_t count, strata_dtype dtype, int root,
                                    const strata_options* options, strata_request** req) {
  return broadcast_request<&Communicator::broadcast_init>("strata_broadcast_init", comm, buffer, count, dtype, root,
                                                          options, req);
}

strata_status strata_ireduce_scatter(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                     strata_dtype dtype, strata_op op, const strata_options* options,
                                     strata_request** req) {
  return reduce_scatter_request<&Communicator::ireduce_scatter>("strata_ireduce_scatter", comm, in, out, recv_count,
                                                                dtype, op, options, req);
}

strata_status strata_reduce_scatter_init(strata_comm* comm, const void* in, void* out, size_t recv_count,
                                         strata_dtype dtype, strata_op op, const strata_options* options,
                                         strata_request** req) {
  return reduce_scatter_request<&Communicator::reduce_scatter_init>("strata_reduce_scatter_init", comm, in, out,
                                                                    recv_count, dtype, op, options, req);
}

strata_status strata_iall_gather(strata_comm* comm, const void* in, void* out, size_t send_count, strata_dtype dtype,
                                 const strata_options* options, strata_request** req) {
  return all_gather_request<&Communicator::iall_gather>("strata_iall_gather", comm, in, out, send_count, dtype,
                                                        options, req);
}

strata_status strata_all_gather_init(strata_comm* comm, const void* in, void* out, size_t send_count,
                                     strata_dtype dtype, const strata_options* options, strata_request** req) {
  return all_gather_request<&Communicator::all_gather_init>("strata_all_gather_init", comm, in, out, send_count,
                                                            dtype, options, req);
}

strata_status strata_ibatch_all_reduce(strata_comm* comm, void* const* buffers, const size_t* counts,
                                       const strata_dtype* dtypes, size_t n, strata_op op,
                                       const strata_packing* packing, const strata_options* options,
                                       strata_request** req) {
  return make_request("strata_ibatch_all_reduce", req, [&] {
    Communicator& c = comm_of(comm);
    const Call call = call_of(options);
    std::vector<Tensor> tensors = batch_tensors(buffers, counts, dtypes, n, call);
    return c.ibatch_all_reduce(tensors, op_of(op), packing_of(packing), call.options);
  });
}

// Requests.

strata_status strata_request_test(strata_request* req, int* flag) {
  if (flag != nullptr) *flag = 0;
  return guarded("strata_request_test", [&] {
    require_out(flag, "flag");
    Request& request = request_of(req);
    // test() throws the run's error once the run is over: complete either way.
    try {
      *flag = request.test() ? 1 : 0;
    } catch (...) {
      *flag = 1;
      throw;
    }
  });
}

strata_status strata_request_wait(strata_request* req) {
  return guarded("strata_request_wait", [&] { request_of(req).wait(); });
}

strata_status strata_request_start(strata_request* req) {
  return guarded("strata_request_start", [&] { request_of(req).start(); });
}

strata_status strata_request_free(strata_request** req) {
  if (req == nullptr || *req == nullptr) return STRATA_OK;
  // Completed here rather than in ~Request, which could only log the error.
  const strata_status status = guarded("strata_request_free", [&] { (*req)->request.wait(); });
  delete *req;  // inactive now: ~Request does nothing
  *req = nullptr;
  return status;
}

void strata_version(int* major, int* minor, int* patch) {
  const Version& v = parsed_version();
  if (major != nullptr) *major = v.major;
  if (minor != nullptr) *minor = v.minor;
  if (patch != nullptr) *patch = v.patch;
}

const char* strata_version_string(void) { return strata::version; }
