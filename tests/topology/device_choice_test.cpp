// The device choice on hand-made machines: locality first, NUMA distance next, then
// round-robin by local rank; RDMX_VERBS_DEVICE wins; devices without a known locality
// leave the choice to the backend's order. And the local rank's sources.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "topology/device_choice.h"
#include "topology/local_rank.h"

namespace rdmx::topology {
namespace {

// Two devices, one per NUMA node: PUs 0-1 on node 0 with mlx5_0, 2-3 on node 1 with
// mlx5_1, and a third node (PUs 4-5) without a device, nearer to node 1.
std::vector<DeviceLocality> two_rails() {
  return {{"mlx5_0", "0000:3b:00.0", {0, 1}, {0}}, {"mlx5_1", "0000:af:00.0", {2, 3}, {1}}};
}
NumaDistances three_nodes() { return {{0, 1, 2}, {10, 20, 30, 20, 10, 20, 30, 20, 10}}; }

std::string first(const DeviceChoice& c, const std::vector<DeviceLocality>& d) {
  return c.order.empty() ? "" : d[c.order[0]].name;
}

TEST(DeviceChoice, LocalDeviceWins) {
  auto d = two_rails();
  for (unsigned lr : {0u, 1u, 2u, 7u}) {
    EXPECT_EQ(first(choose_device(d, {{0}, {0}, lr}, three_nodes()), d), "mlx5_0") << lr;
    EXPECT_EQ(first(choose_device(d, {{0, 1}, {0}, lr}, three_nodes()), d), "mlx5_0") << lr;
    EXPECT_EQ(first(choose_device(d, {{3}, {1}, lr}, three_nodes()), d), "mlx5_1") << lr;
  }
  DeviceChoice c = choose_device(d, {{2, 3}, {1}, 0}, three_nodes());
  EXPECT_EQ(c.order, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(c.tied, 1u);
  EXPECT_NE(c.why.find("mlx5_1: local"), std::string::npos) << c.why;
}

TEST(DeviceChoice, SpanningBothNodesRoundRobinsByLocalRank) {
  auto d = two_rails();
  for (unsigned lr = 0; lr < 6; ++lr) {
    DeviceChoice c = choose_device(d, {{1, 2}, {0, 1}, lr}, three_nodes());
    EXPECT_EQ(first(c, d), lr % 2 ? "mlx5_1" : "mlx5_0") << lr;
    EXPECT_EQ(c.order.size(), 2u);
    EXPECT_EQ(c.tied, 2u);
    EXPECT_NE(c.why.find("round-robin over 2"), std::string::npos) << c.why;
  }
  // Not bound at all: every device is partly local; spread the same way.
  EXPECT_EQ(first(choose_device(d, {{}, {0, 1, 2}, 1}, three_nodes()), d), "mlx5_1");
}

TEST(DeviceChoice, NumaDistanceBreaksTies) {
  auto d = two_rails();
  // Node 2 has no device: node 1's (distance 20) beats node 0's (30), whatever the rank.
  for (unsigned lr : {0u, 1u})
    EXPECT_EQ(first(choose_device(d, {{4, 5}, {2}, lr}, three_nodes()), d), "mlx5_1");
  // Unknown distances: both remote devices tie, round-robin.
  EXPECT_EQ(first(choose_device(d, {{4}, {2}, 0}, {}), d), "mlx5_0");
  EXPECT_EQ(first(choose_device(d, {{4}, {2}, 1}, {}), d), "mlx5_1");
}

// A context that uses both devices: the one local to the rank is its near tier (its
// connections go there first); a rank spanning both nodes has two near devices; without
// any locality every device is near.
TEST(DeviceChoice, WithSeveralDevicesTheLocalOnesAreTheNearTier) {
  auto d = two_rails();
  DeviceChoice c = choose_device(d, {{2, 3}, {1}, 0}, three_nodes());
  EXPECT_EQ(device_tier(c, 1), 0u);
  EXPECT_EQ(device_tier(c, 0), 1u);
  c = choose_device(d, {{1, 2}, {0, 1}, 5}, three_nodes());
  EXPECT_EQ(device_tier(c, 0), 0u);
  EXPECT_EQ(device_tier(c, 1), 0u);
  c = choose_device({{"rxe0"}, {"rxe1"}}, {{0}, {0}, 0}, three_nodes());
  EXPECT_TRUE(c.order.empty());
  EXPECT_EQ(device_tier(c, 0), 0u);
  EXPECT_EQ(device_tier(c, 1), 0u);
}

TEST(DeviceChoice, MoreOfTheRankLocalIsNotNearer) {
  // Locality is all, some or none of the rank's PUs: three PUs on node 0 and one on node
  // 1 still tie, and the distance sums tie too.
  auto d = two_rails();
  NumaDistances two{{0, 1}, {10, 20, 20, 10}};
  EXPECT_EQ(choose_device(d, {{0, 1, 2}, {0, 1}, 0}, two).tied, 2u);
}

TEST(DeviceChoice, OverrideWins) {
  auto d = two_rails();
  DeviceChoice c = choose_device(d, {{0}, {0}, 0}, three_nodes(), "mlx5_1");
  EXPECT_EQ(c.order, (std::vector<size_t>{1}));
  EXPECT_NE(c.why.find("RDMX_VERBS_DEVICE"), std::string::npos);
  // An address (or a name not in the list) is the backend's to resolve: no preference.
  c = choose_device(d, {{0}, {0}, 0}, three_nodes(), "10.0.0.1");
  EXPECT_TRUE(c.order.empty());
  EXPECT_NE(c.why.find("RDMX_VERBS_DEVICE=10.0.0.1"), std::string::npos);
}

TEST(DeviceChoice, WithoutPciParentsTheFirstDeviceWithoutError) {
  std::vector<DeviceLocality> rxe{{.name = "rxe0"}, {.name = "rxe1"}};
  for (unsigned lr : {0u, 1u}) {
    DeviceChoice c = choose_device(rxe, {{0}, {0}, lr}, three_nodes());
    EXPECT_TRUE(c.order.empty());
    EXPECT_NE(c.why.find("no PCI parent"), std::string::npos) << c.why;
  }
  // A located device, even a remote one, comes before one of unknown locality.
  std::vector<DeviceLocality> mixed{{.name = "rxe0"}, two_rails()[1]};
  DeviceChoice c = choose_device(mixed, {{0}, {0}, 0}, three_nodes());
  EXPECT_EQ(c.order, (std::vector<size_t>{1, 0}));
  EXPECT_TRUE(choose_device({}, {{0}, {0}, 0}, {}).order.empty());
}

TEST(DeviceChoice, FormatsIndexRanges) {
  EXPECT_EQ(format_indexes({}), "none");
  EXPECT_EQ(format_indexes({3}), "3");
  EXPECT_EQ(format_indexes({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(LocalRank, SettingThenLaunchersThenZero) {
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK"};
  for (const char* v : vars) unsetenv(v);
  EXPECT_EQ(local_rank(-1).value, 0u);
  EXPECT_EQ(local_rank(-1).source, "none set");
  setenv("PMIX_LOCAL_RANK", "5", 1);
  EXPECT_EQ(local_rank(-1).value, 5u);
  setenv("SLURM_LOCALID", "4", 1);
  EXPECT_EQ(local_rank(-1).value, 4u);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(local_rank(-1).value, 3u);
  EXPECT_EQ(local_rank(-1).source, "OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(local_rank(9).value, 9u);
  EXPECT_EQ(local_rank(9).source, "RDMX_LOCAL_RANK");
  // A value that is not a plain number is passed over.
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x1", 1);
  EXPECT_EQ(local_rank(-1).value, 4u);
  for (const char* v : vars) unsetenv(v);
}

}  // namespace
}  // namespace rdmx::topology
