// The one header an application includes.
#pragma once

#include "strata/communicator.hpp"
#include "strata/cost_model.hpp"
#include "strata/cross_device_ops.hpp"
#include "strata/errors.hpp"
#include "strata/mpi_datatype.hpp"
#include "strata/options.hpp"
#include "strata/plan.hpp"
#include "strata/request.hpp"
#include "strata/spec.hpp"
#include "strata/topology.hpp"
#include "strata/types.hpp"
#include "strata/version.hpp"
