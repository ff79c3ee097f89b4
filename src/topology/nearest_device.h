// The RDMA device order for the calling rank on this machine: hwloc's view of where
// the devices and the calling thread sit, the local rank, RDMX_VERBS_DEVICE. Without
// hwloc in the build, or when hwloc cannot load the topology, no preference (the
// backend's own order: the first device).
#pragma once

#include <string>
#include <vector>

#include "core/settings.h"
#include "topology/device_choice.h"

namespace rdmx::topology {

// names: the verbs devices (ibv_get_device_list), in its order. The result's order
// indexes names.
DeviceChoice nearest_device(const std::vector<std::string>& names, const Settings& s);

}  // namespace rdmx::topology
