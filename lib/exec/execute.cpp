#include "exec/execute.hpp"

#include "exec/hierarchical.hpp"
#include "exec/registry.hpp"
#include "exec/verify.hpp"
#include "host/transport.hpp"

namespace strata::exec {

void run_host(Collective collective, const plan::Choice& choice, const plan::Job& job, const HostContext& context,
              const util::Deadline& deadline, const plan::CallInfo& info, const plan::Fingerprint* check) {
  const host::Algorithm& algorithm = *entry_of(*choice.algorithm).host;
  host::ShmSegment* segment = choice.shared_memory ? context.segment : nullptr;
  const bool check_rides_along = segment && choice.shape == plan::Shape::flat && collective == Collective::all_reduce;
  if (check && !check_rides_along) verify_call(context, *check, deadline, info);
  if (choice.shape == plan::Shape::hierarchical) {
    hierarchical_all_reduce(job, algorithm, *entry_of(*choice.cross).host, *context.split, segment, deadline, info,
                            *context.workspace, context.landing);
    return;
  }
  host::Transport transport(context.comm, context.rank, context.size, deadline, info, *context.workspace,
                            context.landing);
  // Flat over shared memory only happens on a one-node job, whose node
  // communicator orders ranks like `comm`.
  transport.set_shared_memory(segment);
  if (check_rides_along) transport.set_check(check);
  host::entry_point(algorithm, collective)(transport, job);
}

const host::Algorithm* staged_level(const plan::Choice& choice) {
  if (choice.algorithm->memory == Memory::host) return entry_of(*choice.algorithm).host;
  if (choice.cross && choice.cross->memory == Memory::host) return entry_of(*choice.cross).host;
  return nullptr;
}

}  // namespace strata::exec
