// Software RDMA devices (rxe, siw) are told from hardware ones by where sysfs files them,
// checked on a hand-made sysfs tree.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "topology/software_device.h"

namespace rdmx::topology {
namespace {

class SoftwareDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdmx-sysfs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    mkdirs("/class/infiniband");
    device("rxe0", "/devices/virtual/infiniband/rxe0");
    device("siw_eth0", "/devices/virtual/infiniband/siw_eth0");
    device("mlx5_0", "/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0");
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + root_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  void mkdirs(const std::string& rel) {
    std::string cmd = "mkdir -p '" + root_ + rel + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  // A device directory where the kernel would put it, and its class link.
  void device(const std::string& name, const std::string& where) {
    mkdirs(where);
    ASSERT_EQ(::symlink((root_ + where).c_str(), (root_ + "/class/infiniband/" + name).c_str()), 0);
  }
  std::string root_;
};

TEST_F(SoftwareDevice, VirtualDevicesAreSoftware) {
  EXPECT_TRUE(is_software_rdma_device("rxe0", root_));
  EXPECT_TRUE(is_software_rdma_device("siw_eth0", root_));
}

TEST_F(SoftwareDevice, DevicesOnABusAreNot) {
  EXPECT_FALSE(is_software_rdma_device("mlx5_0", root_));
}

TEST_F(SoftwareDevice, UnknownOrMalformedNamesAreNot) {
  EXPECT_FALSE(is_software_rdma_device("mlx5_9", root_));
  EXPECT_FALSE(is_software_rdma_device("", root_));
  EXPECT_FALSE(is_software_rdma_device("../../devices/virtual/infiniband/rxe0", root_));
}

}  // namespace
}  // namespace rdmx::topology
