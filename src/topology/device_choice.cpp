#include "topology/device_choice.h"

#include <algorithm>
#include <limits>

namespace rdmx::topology {
namespace {

size_t common(const IndexList& a, const IndexList& b) {
  size_t n = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++n;
      ++i;
      ++j;
    }
  }
  return n;
}

Locality locality_of(const DeviceLocality& d, const RankPlace& r) {
  if (!d.located()) return Locality::Unknown;
  if (r.cpus.empty()) return Locality::Partial;  // unbound: runs everywhere
  size_t n = common(d.cpus, r.cpus);
  if (n == r.cpus.size()) return Locality::Local;
  return n ? Locality::Partial : Locality::Remote;
}

// Sum over the rank's NUMA nodes of the distance to the device's nearest node; 0 when
// the distances are unknown, so that they tie.
uint64_t distance_of(const DeviceLocality& d, const RankPlace& r, const NumaDistances& dist) {
  if (!d.located()) return std::numeric_limits<uint64_t>::max();
  uint64_t sum = 0;
  for (unsigned from : r.numa_nodes) {
    uint64_t best = 0;
    for (unsigned to : d.numa_nodes) {
      uint64_t v = dist.between(from, to);
      if (v && (!best || v < best)) best = v;
    }
    sum += best;
  }
  return sum;
}

struct Ranked {
  size_t index;
  Locality locality;
  uint64_t distance;
  bool operator==(const Ranked& o) const {
    return locality == o.locality && distance == o.distance;
  }
  bool operator<(const Ranked& o) const {
    return locality != o.locality ? locality < o.locality : distance < o.distance;
  }
};

}  // namespace

uint64_t NumaDistances::between(unsigned from, unsigned to) const {
  auto f = std::find(nodes.begin(), nodes.end(), from);
  auto t = std::find(nodes.begin(), nodes.end(), to);
  if (f == nodes.end() || t == nodes.end() || values.size() != nodes.size() * nodes.size())
    return 0;
  return values[size_t(f - nodes.begin()) * nodes.size() + size_t(t - nodes.begin())];
}

const char* locality_name(Locality l) {
  switch (l) {
    case Locality::Local: return "local";
    case Locality::Partial: return "partly local";
    case Locality::Remote: return "remote";
    case Locality::Unknown: return "locality unknown";
  }
  return "?";
}

unsigned device_tier(const DeviceChoice& c, size_t index) {
  if (c.order.empty()) return 0;
  size_t near = std::max<size_t>(c.tied, 1);
  for (size_t k = 0; k < c.order.size() && k < near; ++k)
    if (c.order[k] == index) return 0;
  return 1;
}

std::vector<std::string> split_device_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string format_indexes(const IndexList& l) {
  std::string s;
  for (size_t i = 0; i < l.size();) {
    size_t j = i;
    while (j + 1 < l.size() && l[j + 1] == l[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(l[i]);
    if (j > i) s += "-" + std::to_string(l[j]);
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

DeviceChoice choose_device(const std::vector<DeviceLocality>& devices, const RankPlace& rank,
                           const NumaDistances& distances, const std::string& override_name) {
  DeviceChoice c;
  if (!override_name.empty()) {
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i].name == override_name) {
        c.order = {i};
        c.why = devices[i].name + ": named by RDMX_VERBS_DEVICE";
        return c;
      }
    c.why = "RDMX_VERBS_DEVICE=" + override_name + ": the device of that name or address";
    return c;
  }
  std::vector<Ranked> ranked;
  for (size_t i = 0; i < devices.size(); ++i)
    ranked.push_back({i, locality_of(devices[i], rank), distance_of(devices[i], rank, distances)});
  if (ranked.empty()) {
    c.why = "no RDMA device";
    return c;
  }
  if (std::none_of(devices.begin(), devices.end(), [](auto& d) { return d.located(); })) {
    c.why = "the first device: none has a known locality (no PCI parent)";
    return c;
  }
  std::stable_sort(ranked.begin(), ranked.end());
  // Rotate the devices that tie with the best by the local rank, so that ranks sharing
  // equally near devices spread over them.
  size_t tied = 1;
  while (tied < ranked.size() && ranked[tied] == ranked[0]) ++tied;
  size_t pick = rank.local_rank % tied;
  std::rotate(ranked.begin(), ranked.begin() + ptrdiff_t(pick), ranked.begin() + ptrdiff_t(tied));
  for (const Ranked& r : ranked) c.order.push_back(r.index);
  c.tied = tied;

  const DeviceLocality& d = devices[ranked[0].index];
  c.why = d.name + ": " + locality_name(ranked[0].locality) + " to the rank's CPUs " +
          (rank.cpus.empty() ? std::string("(not bound)") : format_indexes(rank.cpus)) +
          " (device on NUMA node " + format_indexes(d.numa_nodes) + ")";
  if (tied > 1)
    c.why += ", round-robin over " + std::to_string(tied) + " equally near devices by local rank " +
             std::to_string(rank.local_rank);
  else if (ranked.size() > 1 && ranked[1].locality == ranked[0].locality)
    c.why += ", nearer by NUMA distance";
  return c;
}

}  // namespace rdmx::topology
