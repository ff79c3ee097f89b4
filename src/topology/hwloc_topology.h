// The machine as hwloc sees it, with its PCI and OpenFabrics devices: one owner of an
// hwloc_topology_t, loaded from this machine or from an XML description (the tests'
// synthetic machines), and the questions device choice asks of it. Built with hwloc only.
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "topology/device_choice.h"

namespace rdmx::topology {

class Topology {
 public:
  Topology() = default;
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // This machine (or the file HWLOC_XMLFILE names, as every hwloc program does).
  // False, with err, when hwloc cannot load it.
  bool load_system(std::string& err);
  // A topology in hwloc's XML format (hwloc 2.x, as lstopo --of xml writes it).
  bool load_xml(const std::string& xml, std::string& err);

  // Whether the topology is this machine's (not one from XML): only then do binding()
  // and the device names mean anything here.
  bool is_this_system() const { return hwloc_topology_is_thissystem(topo_) != 0; }
  // Where each named device sits; a name hwloc has no OpenFabrics device for, or whose
  // device has no PCI parent (rxe, siw), comes back unlocated.
  std::vector<DeviceLocality> locate(const std::vector<std::string>& names) const;
  // The names of hwloc's OpenFabrics devices, in topology order.
  std::vector<std::string> openfabrics_devices() const;
  // A rank bound to these PUs: their NUMA nodes filled in.
  RankPlace place(const IndexList& cpus, unsigned local_rank) const;
  // The PUs the calling thread is bound to (else the process); empty when unknown, as
  // for a topology that is not this machine's.
  IndexList binding() const;
  NumaDistances numa_distances() const;
  // Each core's PUs, in logical order.
  std::vector<IndexList> cores() const;

 private:
  bool load(std::string& err);
  hwloc_topology_t topo_ = nullptr;
};

}  // namespace rdmx::topology
