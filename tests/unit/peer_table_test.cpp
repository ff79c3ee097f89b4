// What the peer table costs: one entry per rank of the job, so a peer this rank never
// talks to must stay small and own nothing on the heap.
#include <gtest/gtest.h>

#include <cstdint>

#include "container/ring.h"
#include "engine/link.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fabric/shm/shm_fabric.h"

namespace rdmx {
namespace {

// 10,000 peers: 1.2 MB of peer table (docs/scale.md), where each entry was 200 bytes and
// a control ring of 128 bytes on the heap.
TEST(PeerTable, AnUnconnectedPeerFitsIn128Bytes) {
  EXPECT_LT(sizeof(engine::Peer<loopback::Fabric>), 128u);
  EXPECT_LT(sizeof(engine::Peer<shm::Fabric>), 128u);
  engine::Peer<loopback::Fabric> p;
  EXPECT_TRUE(p.control.empty());
  EXPECT_EQ(p.history, nullptr) << "nothing of connection set-up before the first connect";
  EXPECT_EQ(p.link, nullptr);
}

// A ring made empty takes its first element, grows by doubling, and keeps the order
// through growth and many laps.
TEST(PeerTable, ARingMadeEmptyKeepsItsOrderAsItGrowsAndWraps) {
  Ring<uint64_t> r{0};
  EXPECT_TRUE(r.empty());
  uint64_t next_in = 0, next_out = 0;
  for (int lap = 0; lap < 1000; ++lap) {
    for (int i = 0; i < 1 + lap % 37; ++i) r.push(next_in++);
    EXPECT_TRUE(r.any([&](uint64_t v) { return v == next_out; }));
    for (int i = 0; i < 1 + lap % 23 && !r.empty(); ++i) EXPECT_EQ(r.pop(), next_out++);
  }
  while (!r.empty()) EXPECT_EQ(r.pop(), next_out++);
  EXPECT_EQ(next_out, next_in);
}

}  // namespace
}  // namespace rdmx
