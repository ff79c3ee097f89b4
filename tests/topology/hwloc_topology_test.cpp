// Device choice on a synthetic machine that hwloc loads from XML
// (tests/topology/two-rails.xml: mlx5_0 under NUMA node 0, mlx5_1 under node 1, node 2
// without a device and nearer to node 1), so no RDMA hardware is needed. Also
// rdmx_info --topology on the same machine, through HWLOC_XMLFILE.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/run_program.h"
#include "topology/hwloc_topology.h"

namespace rdmx::topology {
namespace {

const std::string kXmlFile = RDMX_TEST_TOPOLOGY_DIR "/two-rails.xml";

std::string two_rails_xml() {
  std::ifstream in(kXmlFile);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TwoRails : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string xml = two_rails_xml();
    ASSERT_FALSE(xml.empty()) << "cannot read " << kXmlFile;
    std::string err;
    ASSERT_TRUE(topo.load_xml(xml, err)) << err;
  }
  // The device a rank bound to cpus would get, "" for the backend's first.
  std::string pick(const IndexList& cpus, unsigned local_rank,
                   const std::vector<std::string>& names = {"mlx5_0", "mlx5_1"},
                   const std::string& override_name = "") {
    DeviceChoice c = choose_device(topo.locate(names), topo.place(cpus, local_rank),
                                   topo.numa_distances(), override_name);
    return c.order.empty() ? "" : names[c.order[0]];
  }
  Topology topo;
};

TEST_F(TwoRails, LocatesDevicesByPciParent) {
  std::vector<DeviceLocality> d = topo.locate({"mlx5_0", "mlx5_1", "rxe0"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(d[0].numa_nodes, (IndexList{0}));
  EXPECT_EQ(d[0].cpus, (IndexList{0, 1}));
  EXPECT_EQ(d[1].pci_bus_id, "0000:af:00.0");
  EXPECT_EQ(d[1].numa_nodes, (IndexList{1}));
  EXPECT_EQ(d[1].cpus, (IndexList{2, 3}));
  EXPECT_FALSE(d[2].located()) << "rxe0 has no PCI parent";
  EXPECT_TRUE(d[2].pci_bus_id.empty());
  EXPECT_EQ(topo.openfabrics_devices(), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(topo.cores().size(), 6u);
  EXPECT_TRUE(topo.binding().empty()) << "a topology from XML is not this machine";
}

TEST_F(TwoRails, ReadsNumaNodesAndDistances) {
  EXPECT_EQ(topo.place({0, 1}, 0).numa_nodes, (IndexList{0}));
  EXPECT_EQ(topo.place({1, 2}, 0).numa_nodes, (IndexList{0, 1}));
  EXPECT_EQ(topo.place({}, 0).numa_nodes, (IndexList{0, 1, 2}));
  NumaDistances d = topo.numa_distances();
  EXPECT_EQ(d.between(0, 2), 30u);
  EXPECT_EQ(d.between(2, 1), 20u);
  EXPECT_EQ(d.between(1, 1), 10u);
}

TEST_F(TwoRails, NodeZeroPicksDeviceZeroNodeOnePicksDeviceOne) {
  for (unsigned lr : {0u, 1u, 2u, 3u}) {
    EXPECT_EQ(pick({0}, lr), "mlx5_0");
    EXPECT_EQ(pick({0, 1}, lr), "mlx5_0");
    EXPECT_EQ(pick({2}, lr), "mlx5_1");
    EXPECT_EQ(pick({2, 3}, lr), "mlx5_1");
    // In either list order.
    EXPECT_EQ(pick({0}, lr, {"mlx5_1", "mlx5_0"}), "mlx5_0");
  }
}

TEST_F(TwoRails, SpanningBothNodesRoundRobinsByLocalRank) {
  for (unsigned lr = 0; lr < 4; ++lr) {
    EXPECT_EQ(pick({0, 1, 2, 3}, lr), lr % 2 ? "mlx5_1" : "mlx5_0") << lr;
    EXPECT_EQ(pick({1, 2}, lr), lr % 2 ? "mlx5_1" : "mlx5_0") << lr;
  }
}

TEST_F(TwoRails, NodeWithoutDeviceTakesTheNearerNode) {
  for (unsigned lr : {0u, 1u}) EXPECT_EQ(pick({4, 5}, lr), "mlx5_1");
}

TEST_F(TwoRails, OverrideWins) {
  EXPECT_EQ(pick({0}, 0, {"mlx5_0", "mlx5_1"}, "mlx5_1"), "mlx5_1");
  EXPECT_EQ(pick({2}, 1, {"mlx5_0", "mlx5_1"}, "mlx5_0"), "mlx5_0");
}

TEST_F(TwoRails, DevicesWithoutPciParentLeaveTheFirstWithoutError) {
  DeviceChoice c =
      choose_device(topo.locate({"rxe0", "rxe1"}), topo.place({2}, 1), topo.numa_distances());
  EXPECT_TRUE(c.order.empty());
  EXPECT_NE(c.why.find("no PCI parent"), std::string::npos) << c.why;
  // Beside a located device, rxe comes last.
  EXPECT_EQ(pick({0}, 0, {"rxe0", "mlx5_1"}), "mlx5_1");
}

TEST(Topology, RefusesXmlThatIsNotATopology) {
  Topology t;
  std::string err;
  EXPECT_FALSE(t.load_xml("<not a topology", err));
  EXPECT_FALSE(err.empty());
}

TEST(Topology, LoadsThisMachine) {
  Topology t;
  std::string err;
  ASSERT_TRUE(t.load_system(err)) << err;
  EXPECT_FALSE(t.cores().empty());
  EXPECT_FALSE(t.place(t.binding(), 0).numa_nodes.empty());
}

TEST(RdmxInfo, TopologyShowsEachCoresDevice) {
  test::Child c = test::run_program({test::tool("rdmx_info"), "--topology"},
                                    {"HWLOC_XMLFILE=" + kXmlFile, "RDMX_LOCAL_RANK=1"}, 30);
  ASSERT_EQ(c.status, 0) << c.output;
  for (const char* want :
       {"mlx5_0     PCI 0000:3b:00.0  NUMA node 0  CPUs 0-1",
        "mlx5_1     PCI 0000:af:00.0  NUMA node 1  CPUs 2-3", "local rank 1 (RDMX_LOCAL_RANK)",
        "core 0 (CPUs 0): mlx5_0", "core 3 (CPUs 3): mlx5_1", "core 4 (CPUs 4): mlx5_1"})
    EXPECT_NE(c.output.find(want), std::string::npos) << want << "\n" << c.output;
  c = test::run_program({test::tool("rdmx_info"), "--topology"},
                        {"HWLOC_XMLFILE=" + kXmlFile, "RDMX_VERBS_DEVICE=mlx5_1"}, 30);
  EXPECT_NE(c.output.find("every rank: RDMX_VERBS_DEVICE=mlx5_1"), std::string::npos) << c.output;
}

// With both devices in use, each core's near one comes first, the other after it.
TEST(RdmxInfo, TopologyShowsEachCoresDevicesWhenThereAreSeveral) {
  for (const char* setting : {"all", "mlx5_1,mlx5_0"}) {
    test::Child c = test::run_program(
        {test::tool("rdmx_info"), "--topology"},
        {"HWLOC_XMLFILE=" + kXmlFile, std::string("RDMX_VERBS_DEVICE=") + setting}, 30);
    ASSERT_EQ(c.status, 0) << c.output;
    for (const char* want : {"several devices per rank",
                             "core 0 (CPUs 0): mlx5_0 (near: each connection through the least "
                             "used), then mlx5_1 (for peers in a subnet only these reach)",
                             "core 3 (CPUs 3): mlx5_1 (near"})
      EXPECT_NE(c.output.find(want), std::string::npos) << setting << ": " << want << "\n"
                                                        << c.output;
  }
}

}  // namespace
}  // namespace rdmx::topology
