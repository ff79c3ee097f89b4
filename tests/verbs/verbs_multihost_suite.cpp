// The verbs backend across the two hosts of the multi-host Soft-RoCE VM
// (tests/vm/vm-run --hosts 2): ranks on either host, and a rank with both hosts' devices.
#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine_test.h"
#include "verbs/verbs_test.h"

namespace rdmx::test {
namespace {

// Ranks on two hosts of the multi-host VM (tests/vm/vm-run --hosts 2): traffic leaves
// rxe0 and crosses the bridge to rxe1 instead of looping back inside one device.
class VerbsMultiHost : public VerbsCm {
 protected:
  void SetUp() override {
    VerbsCm::SetUp();
    if (IsSkipped()) return;
    const char* hosts = std::getenv("RDMX_VM_HOSTS");
    if (!hosts || std::atoi(hosts) < 2)
      GTEST_SKIP() << "SKIPPED: needs the multi-host VM (tests/vm/vm-run --hosts 2)";
  }
  static std::string dev(int i) {
    const char* d = std::getenv(("RDMX_VM_DEV" + std::to_string(i)).c_str());
    return d ? d : "";
  }
  static uint64_t counter(const std::string& dev, const char* name) {
    std::string path = "/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" + name;
    FILE* f = std::fopen(path.c_str(), "r");
    unsigned long long v = 0;
    if (f) {
      if (std::fscanf(f, "%llu", &v) != 1) v = 0;
      std::fclose(f);
    }
    return v;
  }
};

// rxe has no congestion control and the emulated bridge drops bursts beyond the veth
// backlog (about 1000 packets): rdmx's defaults on a software device (READs of 64 KiB,
// 4 in flight: 256 packets of the 1024-byte MTU) must get through; the retransmissions
// seen are printed.
TEST_F(VerbsMultiHost, RanksOnTwoHostsTalkAcrossTheBridge) {
  uint64_t sent0 = counter(dev(0), "sent_pkts"), rcvd1 = counter(dev(1), "rcvd_pkts");
  auto retries = [] {
    uint64_t n = 0;
    for (int i = 0; i < 2; ++i)
      for (const char* c : {"completer_retry_err", "rcvd_seq_err", "duplicate_request"})
        n += counter(dev(i), c);
    return n;
  };
  uint64_t retries0 = retries();
  auto t0 = std::chrono::steady_clock::now();
  run_world(
      "verbs", 2,
      [](Rank& r) {
        int peer = 1 - r.rank;
        for (int i = 0; i < 100; ++i) {
          uint64_t v = uint64_t(i), w = 0;
          if ((i % 2) == r.rank) {
            EXPECT_EQ(r.finish(isend(r, peer, 1, &v, sizeof v)).error, RDMX_OK);
          } else {
            EXPECT_EQ(r.finish(irecv(r, peer, 1, &w, sizeof w)).error, RDMX_OK);
            EXPECT_EQ(w, v);
          }
        }
        std::vector<uint8_t> out(4 << 20), in(4 << 20);
        fill(out, uint64_t(r.rank));
        auto* rq = irecv(r, peer, 2, in.data(), in.size());
        auto* sq = isend(r, peer, 2, out.data(), out.size());
        EXPECT_EQ(r.finish(sq).error, RDMX_OK);
        EXPECT_EQ(r.finish(rq).error, RDMX_OK);
        EXPECT_TRUE(check(in.data(), in.size(), uint64_t(peer)));
        r.barrier();
      },
      SettingList{},
      [](int rank) {
        return SettingList{{"RDMX_VERBS_DEVICE", dev(rank)}};
      });
  std::printf("across the bridge: %.1f s, %llu retransmission events\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              static_cast<unsigned long long>(retries() - retries0));
  EXPECT_GE(counter(dev(0), "sent_pkts") - sent0, 100u) << dev(0) << " sent nothing";
  EXPECT_GE(counter(dev(1), "rcvd_pkts") - rcvd1, 100u) << dev(1) << " received nothing";
}

// READs beyond what the bridge carries (16 of 256 KiB in flight each way: 8192 packets
// against a backlog of about 1000): what is dropped is resent, a READ that takes rxe's
// retransmission timeout halves its connection's READ window (engine/read_pacer.h), and
// every byte arrives. Each rank prints its device's READ retries and its halvings.
TEST_F(VerbsMultiHost, ReadsBeyondWhatTheBridgeCarriesAllArrive) {
  auto t0 = std::chrono::steady_clock::now();
  run_world(
      "verbs", 2,
      [t0](Rank& r) {
        constexpr size_t kSize = 8 << 20;
        int peer = 1 - r.rank;
        uint64_t retries0 = counter(dev(r.rank), "completer_retry_err");
        std::vector<uint8_t> out(kSize), in(kSize);
        for (int round = 0; round < 3; ++round) {
          fill(out, uint64_t(r.rank * 10 + round));
          auto* rq = irecv(r, peer, round, in.data(), in.size());
          auto* sq = isend(r, peer, round, out.data(), out.size());
          EXPECT_EQ(r.finish(sq).error, RDMX_OK);
          EXPECT_EQ(r.finish(rq).error, RDMX_OK);
          EXPECT_TRUE(check(in.data(), in.size(), uint64_t(peer * 10 + round)));
        }
        std::printf(
            "rank %d: 3 x 8 MiB in %.1f s, %llu READ retries on %s, READ window "
            "halved %llu times\n",
            r.rank, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            static_cast<unsigned long long>(counter(dev(r.rank), "completer_retry_err") - retries0),
            dev(r.rank).c_str(), static_cast<unsigned long long>(stats(r).read_backoffs));
        r.barrier();
      },
      SettingList{{"RDMX_RNDV_CHUNK", "262144"}, {"RDMX_MAX_RD_ATOMIC", "16"}},
      [](int rank) {
        return SettingList{{"RDMX_VERBS_DEVICE", dev(rank)}};
      });
}

// A rank with both hosts' devices (RDMX_VERBS_DEVICE=rxe0,rxe1) and two peers, each
// with one device of the other host: the rank's connections go through one device
// each (the least used of two equal ones), it says which, and data crosses the bridge
// both ways on both: eager messages and rendezvous READs, whose keys are the keys of
// the connection's device.
TEST_F(VerbsMultiHost, ARankWithTwoDevicesReachesEachPeerThroughOne) {
  uint64_t sent0 = counter(dev(0), "sent_pkts"), sent1 = counter(dev(1), "sent_pkts");
  run_world(
      "verbs", 3,
      [](Rank& r) {
        constexpr size_t kBig = 1 << 20;
        std::vector<uint8_t> out(kBig), in(kBig);
        auto exchange = [&](int peer) {
          uint64_t v = uint64_t(r.rank * 10 + peer), w = 0;
          fill(out, uint64_t(r.rank * 10 + peer));
          if (r.rank == 0) {  // rank 0 speaks first: its side makes both connections
            EXPECT_EQ(r.finish(isend(r, peer, 1, &v, sizeof v)).error, RDMX_OK);
            EXPECT_EQ(r.finish(isend(r, peer, 2, out.data(), kBig)).error, RDMX_OK);
            EXPECT_EQ(r.finish(irecv(r, peer, 3, in.data(), kBig)).error, RDMX_OK);
          } else {
            EXPECT_EQ(r.finish(irecv(r, peer, 1, &w, sizeof w)).error, RDMX_OK);
            EXPECT_EQ(w, uint64_t(peer * 10 + r.rank));
            EXPECT_EQ(r.finish(irecv(r, peer, 2, in.data(), kBig)).error, RDMX_OK);
            EXPECT_EQ(r.finish(isend(r, peer, 3, out.data(), kBig)).error, RDMX_OK);
          }
          EXPECT_TRUE(check(in.data(), kBig, uint64_t(peer * 10 + r.rank)))
              << "rank " << r.rank << " from " << peer;
        };
        if (r.rank == 0) {
          exchange(1);
          exchange(2);
          EXPECT_EQ(std::string(rdmx_peer_fabric(r.ctx, 1)), "verbs:" + dev(0));
          EXPECT_EQ(std::string(rdmx_peer_fabric(r.ctx, 2)), "verbs:" + dev(1));
        } else {
          exchange(0);
          EXPECT_EQ(std::string(rdmx_peer_fabric(r.ctx, 0)), "verbs");
        }
        r.barrier();
      },
      SettingList{},
      [](int rank) {
        std::string d = rank == 0 ? dev(0) + "," + dev(1) : dev(rank % 2);
        return SettingList{{"RDMX_VERBS_DEVICE", d}};
      });
  // Rank 0 sent from rxe0 to rank 1 (on rxe1) and from rxe1 to rank 2 (on rxe0).
  EXPECT_GE(counter(dev(0), "sent_pkts") - sent0, 1000u) << dev(0) << " sent little";
  EXPECT_GE(counter(dev(1), "sent_pkts") - sent1, 1000u) << dev(1) << " sent little";
}

// A rank's first device fails (a fatal event, injected as rxe raises none on demand)
// before it connects: its connection goes through its other device, and works.
TEST_F(VerbsMultiHost, ARankGoesOnThroughItsOtherDeviceWhenOneFails) {
  run_world(
      "verbs", 2,
      [](Rank& r) {
        if (r.rank == 0) {
          // The device as this process has it open (librdmacm opens each device once).
          rdma_cm_id* id = nullptr;
          ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          ASSERT_EQ(inet_pton(AF_INET, std::getenv("RDMX_VM_ADDR0"), &a.sin_addr), 1);
          ASSERT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)), 0);
          ASSERT_TRUE(id->verbs);
          verbs::async_events::inject(id->verbs, verbs::AsyncEvent{IBV_EVENT_DEVICE_FATAL});
          rdma_destroy_id(id);
          for (int i = 0; i < 600; ++i) rdmx_progress(r.ctx);  // the device takes it
        }
        r.barrier();
        constexpr size_t kBig = 1 << 20;
        std::vector<uint8_t> out(kBig), in(kBig);
        fill(out, uint64_t(r.rank));
        int peer = 1 - r.rank;
        if (r.rank == 0) {
          EXPECT_EQ(r.finish(isend(r, peer, 1, out.data(), kBig)).error, RDMX_OK);
          EXPECT_EQ(r.finish(irecv(r, peer, 2, in.data(), kBig)).error, RDMX_OK);
          EXPECT_EQ(std::string(rdmx_peer_fabric(r.ctx, 1)), "verbs:" + dev(1));
        } else {
          EXPECT_EQ(r.finish(irecv(r, peer, 1, in.data(), kBig)).error, RDMX_OK);
          EXPECT_EQ(r.finish(isend(r, peer, 2, out.data(), kBig)).error, RDMX_OK);
        }
        EXPECT_TRUE(check(in.data(), kBig, uint64_t(peer)));
        r.barrier();
      },
      SettingList{},
      [](int rank) {
        return SettingList{{"RDMX_VERBS_DEVICE", rank == 0 ? dev(0) + "," + dev(1) : dev(0)}};
      });
}

}  // namespace
}  // namespace rdmx::test
