// One job whose ranks reach some peers through shared memory and others through the
// network fabric: four ranks on two "hosts" (shared-memory domains on this machine;
// the two hosts of the Soft-RoCE VM over rxe), each with a peer on its host and two off
// it, exchanging eager and rendezvous messages with every other rank at once.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine_test.h"
#include "harness/world.h"

namespace rdmx::test {
namespace {

// Ranks 0 and 1 are on host 0, ranks 2 and 3 on host 1; host_settings(h) places a rank
// of host h.
void mixed_job(const std::string& backend, const std::string& net,
               const std::vector<uint64_t>& sizes,
               const std::function<SettingList(int host)>& host_settings) {
  std::string why = backend_unavailable(backend);
  if (!why.empty()) GTEST_SKIP() << "SKIPPED backend " << backend << ": " << why;
  run_world(
      backend, 4,
      [net, sizes](Rank& r) {
        for (int q = 0; q < r.size; ++q) {
          std::string path = rdmx_peer_fabric(r.ctx, q);
          if (q == r.rank)
            EXPECT_EQ(path, "self");
          else if (q / 2 == r.rank / 2)
            EXPECT_EQ(path, "shm") << "rank " << r.rank << " to " << q;
          else
            EXPECT_EQ(path, net) << "rank " << r.rank << " to " << q;
        }
        for (uint64_t size : sizes) {
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
      {}, [host_settings](int rank) { return host_settings(rank / 2); });
}

// What rxe counts of its recoveries from lost packets, on both hosts' devices.
uint64_t rxe_retries() {
  uint64_t n = 0;
  for (int i = 0; i < 2; ++i)
    for (const char* c : {"completer_retry_err", "rcvd_seq_err", "duplicate_request"}) {
      const char* dev = std::getenv(("RDMX_VM_DEV" + std::to_string(i)).c_str());
      if (!dev) continue;
      std::string path = std::string("/sys/class/infiniband/") + dev + "/ports/1/hw_counters/" + c;
      unsigned long long v = 0;
      if (FILE* f = std::fopen(path.c_str(), "r")) {
        if (std::fscanf(f, "%llu", &v) != 1) v = 0;
        std::fclose(f);
      }
      n += v;
    }
  return n;
}

TEST(MixedPaths, SharedMemoryAndLibfabricTcpInOneJob) {
  mixed_job("ofi-tcp+shm", "ofi", {8, 100000, 1 << 20}, [](int host) {
    return SettingList{{"RDMX_SHM_DOMAIN", "host" + std::to_string(host)}};
  });
}

// In the Soft-RoCE VM's two-host boot (tests/vm/tier.d/20-verbs): one kernel, so the
// hosts are told apart by their shared-memory domain, and each host's ranks use its
// own rxe device, whose traffic crosses the emulated bridge.
TEST(MixedPaths, SharedMemoryAndVerbsAcrossTwoVmHosts) {
  const char* hosts = std::getenv("RDMX_VM_HOSTS");
  if (!hosts || std::atoi(hosts) < 2)
    GTEST_SKIP() << "SKIPPED: needs the multi-host VM (tests/vm/vm-run --hosts 2)";
  uint64_t before = rxe_retries();
  // rxe has no congestion control and the bridge drops bursts beyond about 1000
  // packets: with four connections across it at once, rdmx's defaults on a software
  // device (READs of 64 KiB, at most 4 in flight per rank in all) keep within it.
  mixed_job("verbs+shm", "verbs", {8, 100000, 1 << 20}, [](int host) {
    const char* dev = std::getenv(("RDMX_VM_DEV" + std::to_string(host)).c_str());
    return SettingList{{"RDMX_SHM_DOMAIN", "host" + std::to_string(host)},
                       {"RDMX_VERBS_DEVICE", dev ? dev : ""}};
  });
  std::printf("retransmission events: %llu\n",
              static_cast<unsigned long long>(rxe_retries() - before));
}

}  // namespace
}  // namespace rdmx::test
