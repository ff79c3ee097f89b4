#include "topology/numa_memory.h"

#include <dirent.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "core/log.h"

namespace rdmx::topology {
namespace {

// "0-3,8,10-11" as sysfs writes CPU lists.
std::set<unsigned> parse_cpulist(const std::string& s) {
  std::set<unsigned> out;
  size_t i = 0;
  while (i < s.size()) {
    char* end = nullptr;
    unsigned long a = std::strtoul(s.c_str() + i, &end, 10);
    if (end == s.c_str() + i) break;
    unsigned long b = a;
    i = size_t(end - s.c_str());
    if (i < s.size() && s[i] == '-') {
      b = std::strtoul(s.c_str() + i + 1, &end, 10);
      i = size_t(end - s.c_str());
    }
    for (unsigned long c = a; c <= b && c < 65536; ++c) out.insert(unsigned(c));
    if (i < s.size() && s[i] == ',')
      ++i;
    else
      break;
  }
  return out;
}

}  // namespace

std::vector<unsigned> thread_cpus() {
  std::vector<unsigned> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

int numa_node_of(const std::vector<unsigned>& cpus, const std::string& sysfs) {
  if (cpus.empty()) return -1;
  std::string dir = sysfs + "/devices/system/node";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  int nodes = 0, found = -1;
  bool spans = false;
  while (dirent* e = ::readdir(d)) {
    unsigned node = 0;
    char extra = 0;
    if (std::sscanf(e->d_name, "node%u%c", &node, &extra) != 1) continue;
    ++nodes;
    std::ifstream f(dir + "/" + e->d_name + "/cpulist");
    std::string line;
    std::getline(f, line);
    std::set<unsigned> mine = parse_cpulist(line);
    size_t in = 0;
    for (unsigned c : cpus) in += mine.count(c);
    if (in == cpus.size())
      found = int(node);
    else if (in)
      spans = true;
  }
  ::closedir(d);
  return nodes > 1 && !spans ? found : -1;
}

bool prefer_node(void* p, size_t len, int node, std::string& err) {
  constexpr unsigned kMaskBits = 1024;
  unsigned long mask[kMaskBits / (8 * sizeof(unsigned long))] = {};
  if (node < 0 || unsigned(node) >= kMaskBits) {
    err = "NUMA node " + std::to_string(node) + " is out of range";
    return false;
  }
  mask[unsigned(node) / (8 * sizeof(unsigned long))] |=
      1ul << (unsigned(node) % (8 * sizeof(unsigned long)));
  if (::syscall(SYS_mbind, p, len, MPOL_PREFERRED, mask, kMaskBits + 1, MPOL_MF_MOVE) != 0) {
    err = std::string("mbind to NUMA node ") + std::to_string(node) + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void prefer_local(void* p, size_t len) {
  int node = numa_node_of(thread_cpus());
  std::string err;
  if (node < 0) {
    // First touch decides. The pages may have come back from a freed buffer whose
    // preference the kernel keeps with the range: drop it.
    ::syscall(SYS_mbind, p, len, MPOL_DEFAULT, nullptr, 0, 0);
  } else if (!prefer_node(p, len, node, err)) {
    RDMX_LOG(LogLevel::Debug, -1, "memory stays where first touched: %s", err.c_str());
  }
}

AlignedBuffer alloc_local(size_t bytes) {
  size_t n = (bytes + 4095) & ~size_t(4095);
  AlignedBuffer b = alloc_aligned(n);
  if (b) prefer_local(b.get(), n ? n : 4096);
  return b;
}

}  // namespace rdmx::topology
