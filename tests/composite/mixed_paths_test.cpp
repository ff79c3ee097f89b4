// One job whose ranks reach some peers through shared memory and others through the
// network fabric: four ranks on two "hosts" (shared-memory domains on this machine;
// the two hosts of the Soft-RoCE VM over rxe), each with a peer on its host and two off
// it, exchanging eager and rendezvous messages with every other rank at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
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

// A rank whose only connections are through shared memory still answers a request from
// another host within the connect timeout when each of its polls takes milliseconds: a
// rank that sleeps between polls (mode 0: in its own loop; mode 1: on the fabric, with
// rdmx_wait_event, as the Open MPI component does when told to sleep) or that yields its
// processor to many others. Rank 1, on another host, sends to rank 0 once rank 0 is in
// its slow loop, with 4 s to connect.
void slow_poller_answers(int mode) {
  std::string why = backend_unavailable("ofi-tcp+shm");
  if (!why.empty()) GTEST_SKIP() << "SKIPPED backend ofi-tcp+shm: " << why;
  run_world(
      "ofi-tcp+shm", 3,
      [mode](Rank& r) {
        int v = 0, w = 7;
        if (r.rank == 1) {
          // After rank 0 has begun its slow polls.
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          EXPECT_EQ(r.finish(isend(r, 0, 3, &w, sizeof w)).error, RDMX_OK);
          return;
        }
        // Rank 2, on rank 0's host, gives rank 0 a shared-memory connection first.
        if (r.rank == 2) {
          EXPECT_EQ(r.finish(isend(r, 0, 2, &w, sizeof w)).error, RDMX_OK);
          return;
        }
        EXPECT_EQ(r.finish(irecv(r, 2, 2, &v, sizeof v)).error, RDMX_OK);
        rdmx_request_t* req = irecv(r, 1, 3, &v, sizeof v);
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        int done = 0;
        rdmx_status_info_t st{};
        while (!done && std::chrono::steady_clock::now() < until) {
          rdmx_progress(r.ctx);
          ASSERT_EQ(rdmx_test(req, &done, &st), RDMX_OK);
          if (done) break;
          if (mode == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          else
            ASSERT_EQ(rdmx_wait_event(r.ctx, 10), RDMX_OK);
        }
        ASSERT_TRUE(done) << "rank 1's message did not arrive in 20 s";
        EXPECT_EQ(st.error, RDMX_OK);
        EXPECT_EQ(v, 7);
        rdmx_request_free(r.ctx, req);
      },
      {{"RDMX_CONNECT_TIMEOUT_MS", "4000"}},
      [](int rank) {
        return SettingList{{"RDMX_SHM_DOMAIN", rank == 1 ? "b" : "a"}};
      });
}

TEST(MixedPaths, ARankPollingEveryFewMillisecondsAnswersAnotherHost) { slow_poller_answers(0); }

TEST(MixedPaths, ARankSleepingOnTheFabricAnswersAnotherHost) { slow_poller_answers(1); }

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
