#include "topology/software_device.h"

#include <climits>
#include <cstdlib>

namespace rdmx::topology {

bool is_software_rdma_device(const std::string& ibdev, const std::string& sysfs) {
  if (ibdev.empty() || ibdev.find('/') != std::string::npos) return false;
  char resolved[PATH_MAX];
  std::string link = sysfs + "/class/infiniband/" + ibdev;
  if (!::realpath(link.c_str(), resolved)) return false;
  std::string real = resolved;
  return real.find("/devices/virtual/") != std::string::npos;
}

}  // namespace rdmx::topology
