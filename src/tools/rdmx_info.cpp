// rdmx_info: what this rdmx was built with, what RDMX_FABRIC=auto picks here, and
// every RDMX_* setting with its default. "--settings --markdown" prints the settings as
// the table in README.md; "--topology" the RDMA devices, where they sit, and which one
// a rank bound to each core would use.
#include <cstdio>
#include <string>
#include <vector>

#include "api/context.h"
#include "config.h"
#include "core/settings.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_host.h"
#include "rdmx/rdmx.h"
#include "topology/device_choice.h"
#include "topology/local_rank.h"
#include "topology/nearest_device.h"
#include "topology/numa_memory.h"
#include "topology/software_device.h"
#if RDMX_HAVE_HWLOC
#include "topology/hwloc_topology.h"
#endif

namespace {

// A table cell: '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void print_markdown() {
  std::printf("| variable | MCA parameter | default | accepted | what it does |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < rdmx_setting_count(); ++i) {
    rdmx_setting_desc_t d;
    if (rdmx_setting_get(i, &d) != RDMX_OK) continue;
    std::string mca = d.flags & (RDMX_SETTING_STANDALONE | RDMX_SETTING_SECRET)
                          ? "-"
                          : "`mtl_rdmx_" + std::string(d.key) + "`";
    std::string def = d.flags & RDMX_SETTING_NO_DEFAULT ? "unset"
                      : d.default_text[0]               ? "`" + std::string(d.default_text) + "`"
                                                        : "empty";
    std::printf("| `%s` | %s | %s | %s | %s |\n", d.name, mca.c_str(), def.c_str(),
                cell(d.accepted).c_str(), cell(d.help).c_str());
  }
}

// What ranks on this host would do: talk through shared memory (RDMX_SHM), and read
// each other's buffers across memory or by copies (RDMX_SHM_READ).
void print_shm() {
  rdmx::Settings s;
  std::string err;
  s.load_from_env(err);
  const rdmx::shm::HostIdentity& h = rdmx::shm::host_identity();
  std::printf("peers on this host: %s\n",
              s.shm == "off" ? "through the network fabric (RDMX_SHM=off)" : "shared memory (shm)");
  std::printf("  host identity: boot id ");
  for (uint8_t b : h.boot_id) std::printf("%02x", b);
  std::printf(", network namespace %llu:%llu, uid %u%s%s\n",
              static_cast<unsigned long long>(h.netns_dev),
              static_cast<unsigned long long>(h.netns_ino), h.uid,
              s.shm_domain.empty() ? "" : ", RDMX_SHM_DOMAIN ", s.shm_domain.c_str());
  std::string why;
  bool cma = rdmx::shm::cma_allowed(why);
  std::printf("  shared-memory rendezvous reads: %s (%s)\n",
              s.shm_read == "copy" ? "copies through the segment (RDMX_SHM_READ=copy)"
              : cma                ? "process_vm_readv (cross-memory attach)"
                                   : "copies through the segment",
              why.c_str());
  if (s.shm_read != "copy" && cma)
    std::printf("  split reads: %s\n",
                s.shm_split_read
                    ? ("from " + std::to_string(s.shm_split_read) +
                       " bytes, the sender writing half (process_vm_writev; RDMX_SHM_SPLIT_READ)")
                          .c_str()
                    : "off (RDMX_SHM_SPLIT_READ=0)");
}

// The device a rank placed so would get, in a few words.
std::string chosen(const rdmx::topology::DeviceChoice& c,
                   const std::vector<rdmx::topology::DeviceLocality>& devices) {
  if (devices.empty()) return "none (no RDMA device)";
  if (c.order.empty()) return c.why;
  std::string s = devices[c.order[0]].name;
  if (c.tied > 1) s += " (round-robin over " + std::to_string(c.tied) + " by local rank)";
  return s;
}

// What a context with several devices (RDMX_VERBS_DEVICE=a,b or all) would use: the
// near tier, which its connections share, then the rest.
std::string several(const rdmx::topology::DeviceChoice& c,
                    const std::vector<rdmx::topology::DeviceLocality>& devices,
                    const std::vector<std::string>& wanted) {
  std::string near, far;
  for (const std::string& w : wanted) {
    size_t i = 0;
    while (i < devices.size() && devices[i].name != w) ++i;
    unsigned tier = i < devices.size() ? rdmx::topology::device_tier(c, i) : 0;
    (tier == 0 ? near : far) += (tier == 0 ? near : far).empty() ? w : " " + w;
  }
  std::string s = near.empty() ? "none" : near;
  s += " (near: each connection through the least used)";
  if (!far.empty()) s += ", then " + far + " (for peers in a subnet only these reach)";
  return s;
}

// The names RDMX_VERBS_DEVICE lists when it asks for several devices, else empty.
std::vector<std::string> listed_devices(const std::string& setting,
                                        const std::vector<rdmx::topology::DeviceLocality>& all) {
  std::vector<std::string> out;
  if (setting == "all") {
    for (const auto& d : all) out.push_back(d.name);
    return out;
  }
  if (setting.find(',') == std::string::npos) return out;
  for (const std::string& item : rdmx::topology::split_device_list(setting))
    if (!item.empty()) out.push_back(item);
  return out;
}

// The RDMA devices, their PCI parents and NUMA nodes, and the device choice for this
// thread and for a rank bound to each core. With a topology that is not this machine's
// (HWLOC_XMLFILE), or without verbs devices, hwloc's OpenFabrics devices stand in: the
// choice as it would be on that machine.
int print_topology() {
  using namespace rdmx::topology;
  rdmx::Settings s;
  std::string err;
  if (!s.load_from_env(err)) {
    std::fprintf(stderr, "rdmx_info: %s\n", err.c_str());
    return 1;
  }
  LocalRank lr = local_rank(s.local_rank);
  std::vector<std::string> names = rdmx::rdma_device_names();
  std::string from = "ibv_get_device_list";
#if RDMX_HAVE_HWLOC
  Topology topo;
  if (!topo.load_system(err)) {
    std::printf("hwloc: %s\n", err.c_str());
    return 1;
  }
  if (!topo.is_this_system() && !topo.openfabrics_devices().empty()) {
    names = topo.openfabrics_devices();
    from = "hwloc's OpenFabrics devices: the topology is not this machine's";
  } else if (names.empty() && !topo.openfabrics_devices().empty()) {
    names = topo.openfabrics_devices();
    from = "none from ibv_get_device_list; hwloc's OpenFabrics devices";
  }
  std::vector<DeviceLocality> devices = topo.locate(names);
  NumaDistances dist = topo.numa_distances();
  std::printf("hwloc %s\n", HWLOC_VERSION);
#else
  std::vector<DeviceLocality> devices;
  for (const std::string& n : names) devices.push_back({.name = n});
  NumaDistances dist;
  std::printf("built without hwloc: device locality unknown\n");
#endif
  std::printf("RDMA devices (%s):%s\n", from.c_str(), devices.empty() ? " none" : "");
  for (const DeviceLocality& d : devices) {
    if (d.pci_bus_id.empty() && is_software_rdma_device(d.name))
      std::printf(
          "  %-10s no PCI parent: a software device (rendezvous READs of %llu KiB, at "
          "most %u in flight)\n",
          d.name.c_str(),
          static_cast<unsigned long long>(rdmx::fabric::kSoftwareDeviceRndvChunk / 1024),
          rdmx::fabric::kSoftwareDeviceMaxReads);
    else if (d.pci_bus_id.empty())
      std::printf("  %-10s no PCI parent\n", d.name.c_str());
    else
      std::printf("  %-10s PCI %s  NUMA node %s  CPUs %s\n", d.name.c_str(), d.pci_bus_id.c_str(),
                  format_indexes(d.numa_nodes).c_str(), format_indexes(d.cpus).c_str());
  }
  if (!dist.nodes.empty()) {
    std::printf("NUMA distances:\n");
    for (unsigned from_node : dist.nodes) {
      std::printf("  node %u:", from_node);
      for (unsigned to : dist.nodes)
        std::printf(" %llu", static_cast<unsigned long long>(dist.between(from_node, to)));
      std::printf("\n");
    }
  }
  std::printf("local rank %u (%s)\n", lr.value, lr.source.c_str());
  int node = numa_node_of(thread_cpus());
  std::printf("this thread's receive and bounce buffers: %s\n",
              node >= 0 ? ("preferred on NUMA node " + std::to_string(node)).c_str()
                        : "where first touched (one NUMA node, or CPUs on several)");
  std::vector<std::string> wanted = listed_devices(s.verbs_device, devices);
  if (!s.verbs_device.empty() && wanted.empty()) {
    std::printf("every rank: RDMX_VERBS_DEVICE=%s\n", s.verbs_device.c_str());
    return 0;
  }
  if (!wanted.empty())
    std::printf(
        "several devices per rank (RDMX_VERBS_DEVICE=%s); a connection goes through "
        "one: a device in the peer's subnet, the nearest, the least used\n",
        s.verbs_device.c_str());
  auto describe = [&](const DeviceChoice& c) {
    return wanted.empty() ? chosen(c, devices) : several(c, devices, wanted);
  };
#if RDMX_HAVE_HWLOC
  if (topo.is_this_system()) {
    IndexList bound = topo.binding();
    std::printf("this thread, bound to CPUs %s: %s\n",
                bound.empty() ? "(unknown)" : format_indexes(bound).c_str(),
                describe(choose_device(devices, topo.place(bound, lr.value), dist)).c_str());
  }
  std::printf("a rank bound to one core:\n");
  std::vector<IndexList> cores = topo.cores();
  for (size_t i = 0; i < cores.size(); ++i)
    std::printf("  core %zu (CPUs %s): %s\n", i, format_indexes(cores[i]).c_str(),
                describe(choose_device(devices, topo.place(cores[i], lr.value), dist)).c_str());
#else
  std::printf("every rank: %s\n", describe(choose_device(devices, {}, dist)).c_str());
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string a1 = argc > 1 ? argv[1] : "", a2 = argc > 2 ? argv[2] : "";
  bool markdown = a2 == "--markdown";
  if (argc == 2 && a1 == "--topology") return print_topology();
  if (argc > 3 || (argc > 1 && a1 != "--settings") || (argc > 2 && !markdown)) {
    std::fprintf(stderr, "usage: rdmx_info [--settings [--markdown] | --topology]\n");
    return 2;
  }
  if (markdown) {
    print_markdown();
    return 0;
  }
  if (argc == 1) {
    std::printf("rdmx %s\n", PACKAGE_VERSION);
    std::printf("backends built: loopback shm%s%s\n", rdmx::make_verbs_context() ? " verbs" : "",
                rdmx::make_ofi_context() ? " ofi" : "");
    std::string why;
    std::string fabric = rdmx::resolve_auto_fabric(why);
    std::printf("RDMX_FABRIC=auto here: %s\n", fabric.empty() ? why.c_str() : fabric.c_str());
    print_shm();
    std::printf("\nsettings (environment variables):\n");
  }
  rdmx_print_settings(stdout);
  return 0;
}
