#include "topology/nearest_device.h"

#include "config.h"
#include "topology/local_rank.h"
#if RDMX_HAVE_HWLOC
#include "topology/hwloc_topology.h"
#endif

namespace rdmx::topology {
namespace {

std::vector<DeviceLocality> unlocated(const std::vector<std::string>& names) {
  std::vector<DeviceLocality> out;
  for (const std::string& n : names) out.push_back({.name = n});
  return out;
}

}  // namespace

DeviceChoice nearest_device(const std::vector<std::string>& names, const Settings& s) {
  if (!s.verbs_device.empty()) return choose_device(unlocated(names), {}, {}, s.verbs_device);
#if RDMX_HAVE_HWLOC
  Topology topo;
  std::string err;
  if (!topo.load_system(err)) return {{}, "the first device: " + err};
  LocalRank lr = local_rank(s.local_rank);
  DeviceChoice c = choose_device(topo.locate(names), topo.place(topo.binding(), lr.value),
                                 topo.numa_distances());
  if (c.tied > 1) c.why += " (" + lr.source + ")";
  return c;
#else
  return {{}, "the first device: built without hwloc"};
#endif
}

}  // namespace rdmx::topology
