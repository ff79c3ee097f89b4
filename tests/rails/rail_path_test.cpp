// The rails fabric's rule for which device a connection goes through (rail_path.h), and
// its address format, on hand-made values: no device needed.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fabric/rails/rail_path.h"
#include "fabric/rails/rails_fabric.h"

namespace rdmx::rails {
namespace {

IpPrefix ip(const char* text, unsigned bits = 32) {
  IpPrefix p;
  if (inet_pton(AF_INET, text, p.addr) == 1) {
    p.family = 4;
  } else if (inet_pton(AF_INET6, text, p.addr) == 1) {
    p.family = 6;
    bits = bits == 32 ? 128 : bits;
  }
  p.bits = uint8_t(bits);
  return p;
}

RailView rail(const char* addr, unsigned bits, unsigned tier = 0, uint32_t conns = 0) {
  RailView v;
  v.local = ip(addr, bits);
  v.tier = tier;
  v.conns = conns;
  return v;
}

TEST(RailPath, PrefixesContainTheirSubnetOnly) {
  EXPECT_TRUE(ip("10.1.0.7", 16).contains(ip("10.1.200.3")));
  EXPECT_FALSE(ip("10.1.0.7", 16).contains(ip("10.2.0.7")));
  EXPECT_TRUE(ip("10.1.0.7", 23).contains(ip("10.1.1.9")));
  EXPECT_FALSE(ip("10.1.0.7", 23).contains(ip("10.1.2.9")));
  EXPECT_FALSE(ip("10.1.0.7", 16).contains(ip("fd00::1")));  // another family
  EXPECT_TRUE(ip("fd00:1::5", 64).contains(ip("fd00:1::9")));
  EXPECT_FALSE(ip("fd00:1::5", 64).contains(ip("fd00:2::9")));
  EXPECT_EQ(ip("10.1.0.7", 16).text(), "10.1.0.7/16");
}

// Two rails, each its own subnet: a peer on one rail's subnet goes through that rail,
// whatever the load or locality of the other.
TEST(RailPath, APeerGoesThroughTheDeviceOnItsSubnet) {
  std::vector<RailView> mine = {rail("10.1.0.1", 16, 0, 0), rail("10.2.0.1", 16, 0, 9)};
  Path p = choose_path(mine, {ip("10.2.0.5")}, 0);
  EXPECT_EQ(p.rail, 1u);
  EXPECT_EQ(p.peer, 0u);
  // Rail k to rail k between two dual-rail ranks, each pair on its subnet.
  p = choose_path(mine, {ip("10.1.0.5"), ip("10.2.0.5")}, 7);
  EXPECT_EQ(p.rail, 0u);
  EXPECT_EQ(p.peer, 0u);
  mine[0].conns = 20;
  p = choose_path(mine, {ip("10.1.0.5"), ip("10.2.0.5")}, 7);
  EXPECT_EQ(p.rail, 1u);
  EXPECT_EQ(p.peer, 1u);
}

// Equally reachable devices: the nearest tier first, then the least used.
TEST(RailPath, NearDevicesFirstThenTheLeastUsed) {
  std::vector<RailView> mine = {rail("10.0.0.1", 8, 1, 0), rail("10.0.0.2", 8, 0, 3),
                                rail("10.0.0.3", 8, 0, 2)};
  EXPECT_EQ(choose_path(mine, {ip("10.0.0.9")}, 0).rail, 2u);
  mine[2].conns = 3;
  EXPECT_EQ(choose_path(mine, {ip("10.0.0.9")}, 0).rail, 1u);  // a tie: the lower index
  // A far device only when the near ones cannot reach the peer.
  mine[0].local = ip("192.168.0.1", 24);
  EXPECT_EQ(choose_path(mine, {ip("192.168.0.9")}, 0).rail, 0u);
}

// Successive connections of one rank over two equal devices alternate between them.
TEST(RailPath, ConnectionsSpreadOverEqualDevices) {
  std::vector<RailView> mine = {rail("10.0.0.1", 24), rail("10.0.0.2", 24)};
  std::vector<size_t> used;
  for (int i = 0; i < 4; ++i) {
    Path p = choose_path(mine, {ip("10.0.0.50")}, 0);
    ++mine[p.rail].conns;
    used.push_back(p.rail);
  }
  EXPECT_EQ(used, (std::vector<size_t>{0, 1, 0, 1}));
}

// A single-device rank picks among a multi-device peer's addresses by its spread value,
// so that such ranks spread over the peer's devices.
TEST(RailPath, SingleDeviceRanksSpreadOverAPeersDevices) {
  std::vector<RailView> mine = {rail("10.0.0.7", 24)};
  std::vector<IpPrefix> peer = {ip("10.0.0.1"), ip("10.0.0.2")};
  EXPECT_EQ(choose_path(mine, peer, 4).peer, 0u);
  EXPECT_EQ(choose_path(mine, peer, 5).peer, 1u);
  // Only one of them on this side's subnet: that one, whatever the spread.
  peer[0] = ip("10.9.0.1");
  EXPECT_EQ(choose_path(mine, peer, 4).peer, 1u);
}

// A failed device takes no new connection while another one is up; with none up, the
// rule still answers (the fabric then says why the connection cannot be made).
TEST(RailPath, AFailedDeviceIsLeftOutWhileAnotherIsUp) {
  std::vector<RailView> mine = {rail("10.0.0.1", 24), rail("10.0.0.2", 24, 1, 5)};
  mine[0].down = true;
  EXPECT_EQ(choose_path(mine, {ip("10.0.0.9")}, 0).rail, 1u);
  mine[1].local = ip("10.1.0.2", 24);  // the one up is not on the peer's subnet: still it
  EXPECT_EQ(choose_path(mine, {ip("10.0.0.9")}, 0).rail, 1u);
  mine[1].down = true;
  EXPECT_EQ(choose_path(mine, {ip("10.0.0.9")}, 0).rail, 0u);
}

// No pair shares a subnet (a routed network): every pair is a candidate.
TEST(RailPath, WithoutACommonSubnetEveryPairIsACandidate) {
  std::vector<RailView> mine = {rail("10.1.0.1", 16, 0, 1), rail("10.2.0.1", 16, 0, 0)};
  Path p = choose_path(mine, {ip("172.16.0.1")}, 3);
  EXPECT_EQ(p.rail, 1u);
  EXPECT_EQ(p.peer, 0u);
}

std::vector<uint8_t> rails_address(const std::vector<std::string>& parts, uint16_t count) {
  std::vector<uint8_t> a(sizeof(AddressHeader));
  AddressHeader h{AddressHeader::kMagic, count, 0};
  std::memcpy(a.data(), &h, sizeof h);
  for (const std::string& p : parts) {
    uint16_t n = uint16_t(p.size());
    a.insert(a.end(), reinterpret_cast<uint8_t*>(&n), reinterpret_cast<uint8_t*>(&n) + 2);
    a.insert(a.end(), p.begin(), p.end());
  }
  return a;
}

TEST(RailPath, AddressesSplitIntoTheirDevicesAddressesOrNotAtAll) {
  std::vector<std::pair<const uint8_t*, size_t>> out;
  auto a = rails_address({"first", "second!"}, 2);
  ASSERT_TRUE(split_address(a.data(), a.size(), out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out[1].first), out[1].second), "second!");
  // A count that does not match, a length past the end, trailing bytes, no parts,
  // another magic, more rails than a context may have: not a rails address.
  auto bad = rails_address({"first"}, 2);
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  EXPECT_TRUE(out.empty());
  bad = a;
  bad.pop_back();
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  bad = a;
  bad.push_back(0);
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  bad = rails_address({}, 0);
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  bad = a;
  bad[0] ^= 1;
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  std::vector<std::string> many(kMaxRails + 1, "x");
  bad = rails_address(many, uint16_t(many.size()));
  EXPECT_FALSE(split_address(bad.data(), bad.size(), out));
  EXPECT_FALSE(split_address(nullptr, 0, out));
}

}  // namespace
}  // namespace rdmx::rails
