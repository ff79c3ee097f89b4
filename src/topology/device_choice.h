// Which RDMA device a rank should use, from where the devices and the rank sit in the
// machine. A pure function of plain values: the hwloc side (hwloc_topology.h) fills
// them in from the real machine or from a synthetic topology, and the tests fill them
// in by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmx::topology {

// Sorted, distinct OS indexes (of PUs, or of NUMA nodes).
using IndexList = std::vector<unsigned>;

// One RDMA device and its place in the machine.
struct DeviceLocality {
  std::string name;             // the verbs name: mlx5_0, rxe0
  std::string pci_bus_id = "";  // "0000:3b:00.0"; empty when hwloc knows no PCI parent (rxe)
  IndexList cpus = {};          // the PUs the device is local to; empty = unknown
  IndexList numa_nodes = {};    // the NUMA nodes it is local to; empty = unknown
  bool located() const { return !cpus.empty(); }
};

// Where the rank runs.
struct RankPlace {
  IndexList cpus;        // the PUs it is bound to; empty = unknown (treated as everywhere)
  IndexList numa_nodes;  // the NUMA nodes of those PUs
  unsigned local_rank = 0;
};

// Relative NUMA distances (10 = local, as the ACPI SLIT gives them); empty = unknown.
struct NumaDistances {
  IndexList nodes;               // OS indexes, in matrix order
  std::vector<uint64_t> values;  // nodes.size() squared, row = from, column = to
  // The distance between two nodes; 0 when either is not in the matrix.
  uint64_t between(unsigned from, unsigned to) const;
};

// How near a device is to the rank, best first.
enum class Locality {
  Local,    // every PU of the rank is local to the device
  Partial,  // some are
  Remote,   // none are, but the device's NUMA node is known
  Unknown,  // no PCI parent, or hwloc does not know the device
};
const char* locality_name(Locality l);

struct DeviceChoice {
  // Indexes into the device list, the chosen one first, then the others from nearest
  // to farthest (the order in which to try them). Empty: no preference, the caller
  // keeps its own order (no device is located, or RDMX_VERBS_DEVICE names an address).
  std::vector<size_t> order;
  std::string why;  // one line for the log and rdmx_info
  size_t tied = 0;  // how many devices tied for nearest (the local rank chose among them)
};

// Devices are ranked by locality to the rank's PUs, then by NUMA distance (the sum,
// over the rank's NUMA nodes, of the distance to the nearest of the device's), then
// taken round-robin by local rank among those still tied, in list order. When no
// device is located at all the result is empty (the first device, as without hwloc).
// override_name (RDMX_VERBS_DEVICE) wins when it names a device of the list.
DeviceChoice choose_device(const std::vector<DeviceLocality>& devices, const RankPlace& rank,
                           const NumaDistances& distances, const std::string& override_name = "");

// For a context that uses several devices (RDMX_VERBS_DEVICE=a,b or all): 0 if device
// `index` of the list is among the nearest (the devices tied for first, or every device
// when none is located), else 1.
unsigned device_tier(const DeviceChoice& c, size_t index);

// RDMX_VERBS_DEVICE as a list: the items between its commas, without surrounding blanks
// (empty items kept, for the caller to refuse). "mlx5_0" is a list of one.
std::vector<std::string> split_device_list(const std::string& text);

// "0-3,8", for messages.
std::string format_indexes(const IndexList& l);

}  // namespace rdmx::topology
