// Buffers on the rank's NUMA node: which node a CPU set belongs to (hand-made sysfs
// trees of one and two nodes), and that the kernel takes the preference for a buffer.
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "topology/numa_memory.h"

namespace rdmx::topology {
namespace {

class NumaSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdmx-numa-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + root_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  void node(int n, const std::string& cpulist) {
    std::string dir = root_ + "/devices/system/node/node" + std::to_string(n);
    ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
    std::ofstream(dir + "/cpulist") << cpulist << "\n";
  }
  std::string root_;
};

TEST_F(NumaSysfs, CpusWithinOneOfTwoNodesNameIt) {
  node(0, "0-3,8-11");
  node(1, "4-7,12-15");
  EXPECT_EQ(numa_node_of({1, 2}, root_), 0);
  EXPECT_EQ(numa_node_of({9}, root_), 0);
  EXPECT_EQ(numa_node_of({5, 13}, root_), 1);
}

TEST_F(NumaSysfs, CpusAcrossNodesOrOneNodeNameNone) {
  node(0, "0-3");
  EXPECT_EQ(numa_node_of({1}, root_), -1) << "one node: nothing to choose";
  node(1, "4-7");
  EXPECT_EQ(numa_node_of({3, 4}, root_), -1);
  EXPECT_EQ(numa_node_of({}, root_), -1);
  EXPECT_EQ(numa_node_of({1}, root_ + "/nowhere"), -1);
}

long memory_policy(void* p, unsigned long* mask, unsigned long bits) {
  int mode = -1;
  if (::syscall(SYS_get_mempolicy, &mode, mask, bits, p, MPOL_F_ADDR) != 0) return -errno;
  return mode;
}

TEST(NumaMemory, TheKernelKeepsThePreferenceForABuffer) {
  constexpr size_t kLen = 64 << 10;
  AlignedBuffer b = alloc_aligned(kLen);
  std::string err;
  if (!prefer_node(b.get(), kLen, 0, err)) {
    if (err.find("not implemented") != std::string::npos)
      GTEST_SKIP() << "SKIPPED: this kernel has no NUMA policies: " << err;
    FAIL() << err;
  }
  unsigned long mask[16] = {};
  EXPECT_EQ(memory_policy(b.get(), mask, 1024), MPOL_PREFERRED);
  EXPECT_EQ(mask[0], 1ul) << "the preference is node 0 only";
  EXPECT_FALSE(prefer_node(b.get(), kLen, 5000, err));
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
}

TEST(NumaMemory, LocalBuffersFollowTheThreadsNode) {
  AlignedBuffer b = alloc_local(10000);
  ASSERT_TRUE(b);
  unsigned long mask[16] = {};
  long mode = memory_policy(b.get(), mask, 1024);
  if (mode == -ENOSYS) GTEST_SKIP() << "SKIPPED: this kernel has no NUMA policies";
  int node = numa_node_of(thread_cpus());
  if (node < 0) {
    EXPECT_EQ(mode, MPOL_DEFAULT) << "one node, or a rank not bound within one: first touch";
  } else {
    EXPECT_EQ(mode, MPOL_PREFERRED);
    EXPECT_EQ(mask[unsigned(node) / 64] >> (unsigned(node) % 64) & 1, 1ul);
  }
}

}  // namespace
}  // namespace rdmx::topology
