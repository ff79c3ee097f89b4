#include "topology/hwloc_topology.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rdmx::topology {
namespace {

IndexList indexes_of(hwloc_const_bitmap_t set) {
  IndexList out;
  if (!set || hwloc_bitmap_iszero(set) || hwloc_bitmap_weight(set) < 0) return out;
  unsigned i;
  hwloc_bitmap_foreach_begin(i, set) { out.push_back(i); }
  hwloc_bitmap_foreach_end();
  return out;
}

// A bitmap freed at the end of its scope.
struct Bitmap {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  ~Bitmap() { hwloc_bitmap_free(b); }
  Bitmap() = default;
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
};

std::string bus_id(const hwloc_obj_t pci) {
  char buf[32];
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a = pci->attr->pcidev;
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", unsigned(a.domain), unsigned(a.bus),
                unsigned(a.dev), unsigned(a.func));
  return buf;
}

}  // namespace

Topology::~Topology() {
  if (topo_) hwloc_topology_destroy(topo_);
}

bool Topology::load(std::string& err) {
  // PCI devices and their OpenFabrics OS devices are what the choice needs; bridges
  // and the rest of the I/O tree are left out.
  hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo_) != 0) {
    err = std::string("hwloc cannot load the topology: ") + std::strerror(errno);
    hwloc_topology_destroy(topo_);
    topo_ = nullptr;
    return false;
  }
  return true;
}

bool Topology::load_system(std::string& err) {
  if (topo_ || hwloc_topology_init(&topo_) != 0) {
    err = "hwloc_topology_init failed";
    return false;
  }
  // PCI devices come from sysfs (hwloc's linux component). The pci component
  // (libpciaccess) would find the same, but its cache of device names outlives the
  // plugin that hwloc unloads after each load: memory lost at every load.
  hwloc_topology_set_components(topo_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  return load(err);
}

bool Topology::load_xml(const std::string& xml, std::string& err) {
  if (topo_ || hwloc_topology_init(&topo_) != 0) {
    err = "hwloc_topology_init failed";
    return false;
  }
  if (hwloc_topology_set_xmlbuffer(topo_, xml.c_str(), int(xml.size()) + 1) != 0) {
    err = std::string("hwloc refuses the XML topology: ") + std::strerror(errno);
    hwloc_topology_destroy(topo_);
    topo_ = nullptr;
    return false;
  }
  return load(err);
}

std::vector<DeviceLocality> Topology::locate(const std::vector<std::string>& names) const {
  std::vector<DeviceLocality> out;
  for (const std::string& name : names) {
    DeviceLocality d;
    d.name = name;
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo_, nullptr); os;
         os = hwloc_get_next_osdev(topo_, os)) {
      if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !os->name || name != os->name)
        continue;
      hwloc_obj_t pci = os->parent;
      while (pci && pci->type != HWLOC_OBJ_PCI_DEVICE && !pci->cpuset) pci = pci->parent;
      if (!pci || pci->type != HWLOC_OBJ_PCI_DEVICE) break;  // a virtual device
      d.pci_bus_id = bus_id(pci);
      if (hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo_, pci)) {
        d.cpus = indexes_of(near->cpuset);
        d.numa_nodes = indexes_of(near->nodeset);
      }
      break;
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> Topology::openfabrics_devices() const {
  std::vector<std::string> out;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo_, nullptr); os;
       os = hwloc_get_next_osdev(topo_, os))
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && os->name) out.push_back(os->name);
  return out;
}

RankPlace Topology::place(const IndexList& cpus, unsigned local_rank) const {
  RankPlace r;
  r.cpus = cpus;
  r.local_rank = local_rank;
  Bitmap set, nodes;
  for (unsigned c : cpus) hwloc_bitmap_set(set.b, c);
  if (cpus.empty()) hwloc_bitmap_copy(set.b, hwloc_topology_get_topology_cpuset(topo_));
  hwloc_cpuset_to_nodeset(topo_, set.b, nodes.b);
  r.numa_nodes = indexes_of(nodes.b);
  return r;
}

IndexList Topology::binding() const {
  Bitmap set;
  if (!is_this_system()) return {};
  if (hwloc_get_cpubind(topo_, set.b, HWLOC_CPUBIND_THREAD) != 0 &&
      hwloc_get_cpubind(topo_, set.b, HWLOC_CPUBIND_PROCESS) != 0)
    return {};
  return indexes_of(set.b);
}

NumaDistances Topology::numa_distances() const {
  NumaDistances out;
  unsigned nr = 1;
  hwloc_distances_s* d = nullptr;
  if (hwloc_distances_get_by_type(topo_, HWLOC_OBJ_NUMANODE, &nr, &d,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr == 0 || !d)
    return out;
  for (unsigned i = 0; i < d->nbobjs; ++i) out.nodes.push_back(d->objs[i]->os_index);
  out.values.assign(d->values, d->values + size_t(d->nbobjs) * d->nbobjs);
  hwloc_distances_release(topo_, d);
  return out;
}

std::vector<IndexList> Topology::cores() const {
  std::vector<IndexList> out;
  hwloc_obj_type_t type =
      hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t c = hwloc_get_next_obj_by_type(topo_, type, nullptr); c;
       c = hwloc_get_next_obj_by_type(topo_, type, c))
    out.push_back(indexes_of(c->cpuset));
  return out;
}

}  // namespace rdmx::topology
