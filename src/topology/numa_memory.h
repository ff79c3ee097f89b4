// Buffers on the rank's own NUMA node. Receive buffers and bounce buffers are written by
// the device or the peer and read by this rank's CPU (or the other way round); on a
// machine of several NUMA nodes they belong on the node of the CPUs the rank runs on.
// A rank bound within one node gets its buffers preferred there (mbind MPOL_PREFERRED:
// the kernel falls back to another node rather than fail when that one is full); a rank
// that may run anywhere, or a machine of one node, leaves placement to first touch.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"

namespace rdmx::topology {

// The CPUs the calling thread may run on (sched_getaffinity).
std::vector<unsigned> thread_cpus();
// The one NUMA node, of a machine with more than one, that holds all of cpus, as sysfs
// (mounted at sysfs) describes the nodes; -1 when the CPUs span nodes, the machine has
// one node, or sysfs says nothing.
int numa_node_of(const std::vector<unsigned>& cpus, const std::string& sysfs = "/sys");
// Asks the kernel to keep [p, p + len) on node (pages already there are moved). False,
// with err, when it refuses.
bool prefer_node(void* p, size_t len, int node, std::string& err);
// Prefers the page-aligned [p, p + len) on the calling thread's node where numa_node_of()
// names one (a refusal is logged, not an error: the memory stays where first touched),
// else leaves it to first touch, dropping a preference the range kept from a freed buffer.
void prefer_local(void* p, size_t len);
// A page-aligned buffer of at least bytes, preferred on the calling thread's node where
// numa_node_of() names one.
AlignedBuffer alloc_local(size_t bytes);

}  // namespace rdmx::topology
