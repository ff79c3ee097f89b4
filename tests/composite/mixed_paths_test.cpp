// One job whose ranks reach some peers through shared memory and others through the
// network fabric: four ranks in two shared-memory domains (as two hosts would be), each
// with a peer on its "host" and two off it, exchanging eager and rendezvous messages
// with every other rank at once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine_test.h"
#include "harness/world.h"

namespace rdmx::test {
namespace {

constexpr const char* kBackend = "ofi-tcp+shm";

TEST(MixedPaths, EachPeerTakesItsPathAndEveryMessageArrivesWhole) {
  std::string why = backend_unavailable(kBackend);
  if (!why.empty()) GTEST_SKIP() << "SKIPPED backend " << kBackend << ": " << why;
  run_world(
      kBackend, 4,
      [](Rank& r) {
        for (int q = 0; q < r.size; ++q) {
          std::string path = rdmx_peer_fabric(r.ctx, q);
          if (q == r.rank)
            EXPECT_EQ(path, "self");
          else if (q / 2 == r.rank / 2)
            EXPECT_EQ(path, "shm") << "rank " << r.rank << " to " << q;
          else
            EXPECT_EQ(path, "ofi") << "rank " << r.rank << " to " << q;
        }
        for (uint64_t size : {uint64_t(8), uint64_t(100000), uint64_t(1) << 20}) {
          std::vector<std::vector<uint8_t>> out(4), in(4);
          std::vector<rdmx_request_t*> reqs;
          for (int q = 0; q < r.size; ++q) {
            if (q == r.rank) continue;
            out[size_t(q)].resize(size);
            fill(out[size_t(q)], uint64_t(r.rank * 16 + q));
            in[size_t(q)].resize(size);
            reqs.push_back(irecv(r, q, 9, in[size_t(q)].data(), size));
            reqs.push_back(isend(r, q, 9, out[size_t(q)].data(), size));
          }
          for (auto* x : reqs) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          for (int q = 0; q < r.size; ++q) {
            if (q == r.rank) continue;
            EXPECT_TRUE(check(in[size_t(q)].data(), size, uint64_t(q * 16 + r.rank)))
                << size << " bytes from rank " << q << " to " << r.rank;
          }
          r.barrier();
        }
      },
      {},
      [](int rank) {
        return SettingList{{"RDMX_SHM_DOMAIN", rank < 2 ? "a" : "b"}};
      });
}

}  // namespace
}  // namespace rdmx::test
