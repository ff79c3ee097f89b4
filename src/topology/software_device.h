// Whether an RDMA device is a software one (rxe, siw): a driver on top of an Ethernet
// netdev with no bus device of its own, whose transport (retransmission included) runs
// in the kernel's softirqs. The kernel files such devices under /sys/devices/virtual.
#pragma once

#include <string>

namespace rdmx::topology {

// ibdev is the verbs name (rxe0, mlx5_0); sysfs is where sysfs is mounted. False when
// the device is not found there.
bool is_software_rdma_device(const std::string& ibdev, const std::string& sysfs = "/sys");

}  // namespace rdmx::topology
