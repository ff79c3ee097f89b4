// Connection management over rdma_cm as the engine sees it: private data limits and
// padding, every reject reason in words at the connecting side, simultaneous connect,
// negotiated read depth, who speaks first, unreachable peers and a peer that dies.
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/engine_test.h"
#include "verbs/verbs_test.h"

namespace rdmx::test {
namespace {

using protocol::CmKind;
using protocol::CmMessage;
using protocol::RejectReason;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kJob = 0x7e57;

// Makes a raw end accept every request with an rdmx accept from rank `me`.
void accept_all(RawEnd& e, int32_t me, std::vector<verbs::Conn*>& conns) {
  e.rec.on_request = [&e, me, &conns](verbs::ConnRequest* req, const uint8_t* p, size_t n) {
    CmMessage m;
    std::string why;
    ASSERT_EQ(protocol::parse_cm(p, n, CmKind::Connect, m, why), RejectReason::None) << why;
    verbs::Conn* c = nullptr;
    std::string err;
    ASSERT_EQ(e.fabric.create_conn(nullptr, 0, req, &e, &c, err), RDMX_OK) << err;
    e.post_recvs(c, RawEnd::kBufs);
    CmMessage a = cm_message(CmKind::Accept, kJob, me, m.src_rank, e.fabric.qp_num(c), m.nonce);
    ASSERT_EQ(e.fabric.accept(c, req, &a, sizeof a, err), RDMX_OK) << err;
    conns.push_back(c);
  };
}

wire::Header header_at(RawEnd& e, uint64_t wr) {
  wire::Header h;
  std::memcpy(&h, e.buf(uint32_t(wr)), sizeof h);
  return h;
}

TEST_F(VerbsCm, ConnectMessageFitsTheLimitByConstruction) {
  static_assert(sizeof(CmMessage) <= protocol::kConnectDataLimit);
  static_assert(protocol::kConnectDataLimit <= verbs::Fabric::kConnectDataMax);
  in_child([] {
    RawEnd a, b;
    ASSERT_EQ(a.open(), RDMX_OK);
    ASSERT_EQ(b.open(), RDMX_OK);
    EXPECT_EQ(a.fabric.max_connect_data(), 56u);
    // The backend refuses at run time what the static_assert rules out for rdmx.
    verbs::Conn* c = nullptr;
    std::string err;
    std::vector<uint8_t> addr = b.address();
    ASSERT_EQ(a.fabric.create_conn(addr.data(), addr.size(), nullptr, &a, &c, err), RDMX_OK);
    uint8_t big[57] = {};
    EXPECT_EQ(a.fabric.connect(c, big, sizeof big, err), RDMX_ERR_INVALID);
    EXPECT_NE(err.find("56-byte limit"), std::string::npos) << err;
    // 56 bytes go out; the peer sees exactly 56.
    EXPECT_EQ(a.fabric.connect(c, big, 56, err), RDMX_OK) << err;
    ASSERT_TRUE(drive([&] { return a.rec.count(Recorder::ConnError) > 0; }, {&a, &b}));
    EXPECT_EQ(b.rec.last_request.size(), 56u);
  });
}

TEST_F(VerbsCm, ZeroPaddedPrivateDataIsAccepted) {
  in_child([] {
    // Raw to raw: 40 bytes sent arrive as 56, zero-padded; the accept as 196.
    RawEnd a, b;
    ASSERT_EQ(a.open(), RDMX_OK);
    ASSERT_EQ(b.open(), RDMX_OK);
    std::vector<verbs::Conn*> b_conns;
    accept_all(b, 0, b_conns);
    verbs::Conn* ac = nullptr;
    CmMessage m = cm_message(CmKind::Connect, kJob, 1, 0, 0);
    std::string err;
    std::vector<uint8_t> addr = b.address();
    ASSERT_EQ(a.fabric.create_conn(addr.data(), addr.size(), nullptr, &a, &ac, err), RDMX_OK);
    m.qp_num = a.fabric.qp_num(ac);
    protocol::seal(m, protocol::job_key_mac_key(kJob), nullptr);
    ASSERT_EQ(a.fabric.connect(ac, &m, sizeof m, err), RDMX_OK);
    ASSERT_TRUE(drive([&] { return a.rec.count(Recorder::Established) > 0; }, {&a, &b}));
    ASSERT_EQ(b.rec.last_request.size(), 56u);
    for (size_t i = sizeof m; i < 56; ++i) EXPECT_EQ(b.rec.last_request[i], 0) << i;
    const auto& est = *a.rec.first(Recorder::Established);
    EXPECT_EQ(est.pdata.size(), 196u);
    CmMessage got;
    std::string why;
    EXPECT_EQ(protocol::parse_cm(est.pdata.data(), est.pdata.size(), CmKind::Accept, got, why),
              RejectReason::None)
        << why;

    // Raw to rdmx: a request padded to the full 56 bytes by its sender is accepted.
    rdmx_context_t* ctx = verbs_context(0, 2, kJob);
    ASSERT_TRUE(ctx);
    RawEnd d;
    ASSERT_EQ(d.open(), RDMX_OK);
    uint8_t padded[56] = {};
    verbs::Conn* dc = nullptr;
    addr = address_of(ctx);
    ASSERT_EQ(d.fabric.create_conn(addr.data(), addr.size(), nullptr, &d, &dc, err), RDMX_OK);
    d.post_recvs(dc, RawEnd::kBufs);
    m.qp_num = d.fabric.qp_num(dc);
    protocol::fresh_nonce(m);
    protocol::seal(m, protocol::job_key_mac_key(kJob), nullptr);
    std::memcpy(padded, &m, sizeof m);
    ASSERT_EQ(d.fabric.connect(dc, padded, sizeof padded, err), RDMX_OK);
    ASSERT_TRUE(drive([&] { return !d.rec.events.empty(); }, {&d}, ctx));
    ASSERT_EQ(d.rec.events[0].kind, Recorder::Established) << d.rec.events[0].why;
    const auto& e = d.rec.events[0];
    EXPECT_EQ(protocol::parse_cm(e.pdata.data(), e.pdata.size(), CmKind::Accept, got, why),
              RejectReason::None)
        << why;
    EXPECT_EQ(got.src_rank, 0);
    EXPECT_EQ(got.dst_rank, 1);
    rdmx_finalize(ctx);
  });
}

TEST_F(VerbsCm, EachRejectReasonReachesTheConnectingRankInWords) {
  in_child([] {
    RawEnd peer;
    ASSERT_EQ(peer.open(), RDMX_OK);
    RejectReason reason = RejectReason::None;
    peer.rec.on_request = [&](verbs::ConnRequest* req, const uint8_t*, size_t) {
      CmMessage r = cm_message(CmKind::Reject, kJob, 1, 0, 0);
      r.reason = reason;
      peer.fabric.reject(req, &r, sizeof r);
    };
    for (RejectReason rr :
         {RejectReason::Foreign, RejectReason::Version, RejectReason::Corrupt,
          RejectReason::WrongJob, RejectReason::WrongRank, RejectReason::UnknownRank,
          RejectReason::Shutdown, RejectReason::Resources}) {
      reason = rr;
      // A refusal for want of resources is asked again (with backoff) until the attempt's
      // time limit: a short one here.
      bool retried = rr == RejectReason::Resources;
      rdmx_context_t* ctx = verbs_context(
          0, 2, kJob, retried ? SettingList{{"RDMX_CONNECT_TIMEOUT_MS", "500"}} : SettingList{});
      ASSERT_TRUE(ctx);
      std::vector<uint8_t> addr = peer.address();
      ASSERT_EQ(rdmx_add_peer(ctx, 1, addr.data(), addr.size()), RDMX_OK);
      uint64_t v = 1;
      rdmx_request_t* req = nullptr;
      ASSERT_EQ(rdmx_isend(ctx, 1, 0, 0, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
      rdmx_status_info_t st{};
      bool done = drive(
          [&] {
            int d = 0;
            rdmx_test(req, &d, &st);
            return d != 0;
          },
          {&peer}, ctx);
      ASSERT_TRUE(done) << "reason " << int(rr);
      if (retried && st.error == RDMX_ERR_TIMEOUT) st.error = RDMX_ERR_REJECTED;  // mid-attempt
      EXPECT_EQ(st.error, RDMX_ERR_REJECTED) << int(rr);
      std::string text = rdmx_last_error(ctx);
      EXPECT_NE(text.find(protocol::reject_reason_text(rr)), std::string::npos)
          << "reason " << int(rr) << ": " << text;
      EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
      rdmx_request_free(ctx, req);
      rdmx_finalize(ctx);
    }
  });
}

TEST_F(VerbsCm, InvalidRequestsAreRejectedWithAReason) {
  in_child([] {
    rdmx_context_t* ctx = verbs_context(0, 2, kJob);
    ASSERT_TRUE(ctx);
    std::vector<uint8_t> addr = address_of(ctx);
    struct Case {
      const char* name;
      std::function<void(CmMessage&)> spoil;
      RejectReason want;
    };
    std::vector<Case> cases = {
        {"foreign", [](CmMessage& m) { std::memset(&m, 0xab, sizeof m); }, RejectReason::Foreign},
        {"version", [](CmMessage& m) { m.version = 9; }, RejectReason::Version},
        {"length", [](CmMessage& m) { m.length = 39; }, RejectReason::Corrupt},
        {"mac", [](CmMessage& m) { m.mac[0] ^= 1; }, RejectReason::WrongJob},
        {"job",
         [](CmMessage& m) { protocol::seal(m, protocol::job_key_mac_key(kJob + 1), nullptr); },
         RejectReason::WrongJob},
        {"destination",
         [](CmMessage& m) {
           m.dst_rank = 1;
           protocol::seal(m, protocol::job_key_mac_key(kJob), nullptr);
         },
         RejectReason::WrongRank},
        {"source",
         [](CmMessage& m) {
           m.src_rank = 7;
           protocol::seal(m, protocol::job_key_mac_key(kJob), nullptr);
         },
         RejectReason::UnknownRank},
        {"qp number", [](CmMessage& m) { m.qp_num += 1; }, RejectReason::Corrupt},
    };
    for (const Case& k : cases) {
      RawEnd e;
      ASSERT_EQ(e.open(), RDMX_OK);
      verbs::Conn* c = nullptr;
      std::string err;
      ASSERT_EQ(e.fabric.create_conn(addr.data(), addr.size(), nullptr, &e, &c, err), RDMX_OK);
      CmMessage m = cm_message(CmKind::Connect, kJob, 1, 0, e.fabric.qp_num(c));
      k.spoil(m);
      ASSERT_EQ(e.fabric.connect(c, &m, sizeof m, err), RDMX_OK);
      ASSERT_TRUE(drive([&] { return !e.rec.events.empty(); }, {&e}, ctx)) << k.name;
      const Recorder::Event& ev = e.rec.events[0];
      ASSERT_EQ(ev.kind, Recorder::Rejected) << k.name << ": " << ev.why;
      CmMessage r;
      std::string why;
      ASSERT_EQ(protocol::parse_cm(ev.pdata.data(), ev.pdata.size(), CmKind::Reject, r, why),
                RejectReason::None)
          << k.name << ": " << why;
      EXPECT_EQ(r.reason, k.want) << k.name << ": " << protocol::reject_reason_text(r.reason);
    }
    // The listener still serves: a valid request is accepted.
    RawEnd e;
    ASSERT_EQ(e.open(), RDMX_OK);
    verbs::Conn* c = nullptr;
    std::string err;
    ASSERT_EQ(e.fabric.create_conn(addr.data(), addr.size(), nullptr, &e, &c, err), RDMX_OK);
    e.post_recvs(c, RawEnd::kBufs);
    CmMessage m = cm_message(CmKind::Connect, kJob, 1, 0, e.fabric.qp_num(c));
    ASSERT_EQ(e.fabric.connect(c, &m, sizeof m, err), RDMX_OK);
    ASSERT_TRUE(drive([&] { return !e.rec.events.empty(); }, {&e}, ctx));
    EXPECT_EQ(e.rec.events[0].kind, Recorder::Established) << e.rec.events[0].why;
    rdmx_finalize(ctx);
  });
}

TEST_F(VerbsCm, TheActiveSideSpeaksFirst) {
  in_child([] {
    // rdmx connecting: its first message is HELLO, sequence 0.
    {
      RawEnd peer;
      ASSERT_EQ(peer.open(), RDMX_OK);
      std::vector<verbs::Conn*> conns;
      accept_all(peer, 1, conns);
      rdmx_context_t* ctx = verbs_context(0, 2, kJob);
      ASSERT_TRUE(ctx);
      std::vector<uint8_t> addr = peer.address();
      ASSERT_EQ(rdmx_add_peer(ctx, 1, addr.data(), addr.size()), RDMX_OK);
      uint64_t v = 42;
      rdmx_request_t* req = nullptr;
      ASSERT_EQ(rdmx_isend(ctx, 1, 0, 3, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
      ASSERT_TRUE(drive([&] { return peer.rec.count(Recorder::Recv) >= 2; }, {&peer}, ctx));
      const Recorder::Event* first = peer.rec.first(Recorder::Recv);
      wire::Header h = header_at(peer, first->wr);
      EXPECT_EQ(h.type(), wire::Type::Hello);
      EXPECT_EQ(h.seq, 0u);
      EXPECT_EQ(h.source, 0);
      rdmx_wait(ctx, req, 5000, nullptr);
      rdmx_request_free(ctx, req);
      rdmx_finalize(ctx);
    }
    // rdmx accepting: it has a message for the connecting side, but sends nothing
    // until that side has spoken.
    RawEnd peer;
    ASSERT_EQ(peer.open(), RDMX_OK);
    rdmx_context_t* ctx = verbs_context(0, 2, kJob);
    ASSERT_TRUE(ctx);
    std::vector<uint8_t> addr = address_of(ctx);
    verbs::Conn* c = nullptr;
    std::string err;
    ASSERT_EQ(peer.fabric.create_conn(addr.data(), addr.size(), nullptr, &peer, &c, err), RDMX_OK);
    peer.post_recvs(c, RawEnd::kBufs);
    CmMessage m = cm_message(CmKind::Connect, kJob, 1, 0, peer.fabric.qp_num(c));
    ASSERT_EQ(peer.fabric.connect(c, &m, sizeof m, err), RDMX_OK);
    ASSERT_TRUE(drive([&] { return !peer.rec.events.empty(); }, {&peer}, ctx));
    ASSERT_EQ(peer.rec.events[0].kind, Recorder::Established) << peer.rec.events[0].why;
    uint64_t v = 7;
    rdmx_request_t* req = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, 1, 0, 3, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
    auto quiet_until = Clock::now() + std::chrono::milliseconds(500);
    drive([&] { return Clock::now() > quiet_until; }, {&peer}, ctx);
    EXPECT_EQ(peer.rec.count(Recorder::Recv), 0u) << "the accepting side sent first";
    wire::Header hello = header(wire::Type::Hello, 1, 0);
    fabric::Sge sge{&hello, sizeof hello, nullptr};
    ASSERT_EQ(peer.fabric.send(c, &sge, 1, true, 99), RDMX_OK);
    ASSERT_TRUE(drive([&] { return peer.rec.count(Recorder::Recv) >= 1; }, {&peer}, ctx));
    wire::Header h = header_at(peer, peer.rec.first(Recorder::Recv)->wr);
    EXPECT_EQ(h.type(), wire::Type::Short);
    EXPECT_EQ(h.seq, 0u);
    EXPECT_EQ(h.tag, 3);
    rdmx_status_info_t st{};
    EXPECT_EQ(rdmx_wait(ctx, req, 5000, &st), RDMX_OK);
    EXPECT_EQ(st.error, RDMX_OK);
    rdmx_request_free(ctx, req);
    rdmx_finalize(ctx);
  });
}

TEST_F(VerbsCm, ConnectingWhereNobodyListensFailsFast) {
  in_child([] {
    rdmx_context_t* ctx = verbs_context(0, 2, kJob);
    ASSERT_TRUE(ctx);
    std::vector<uint8_t> addr = address_of(ctx);
    verbs::WireAddress wa;
    ASSERT_EQ(addr.size(), sizeof wa);
    std::memcpy(&wa, addr.data(), sizeof wa);
    wa.port = 9;  // nobody listens for rdma_cm there
    std::memcpy(addr.data(), &wa, sizeof wa);
    ASSERT_EQ(rdmx_add_peer(ctx, 1, addr.data(), addr.size()), RDMX_OK);
    uint64_t v = 1;
    rdmx_request_t* req = nullptr;
    auto t0 = Clock::now();
    ASSERT_EQ(rdmx_isend(ctx, 1, 0, 0, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
    rdmx_status_info_t st{};
    ASSERT_EQ(rdmx_wait(ctx, req, 15000, &st), RDMX_OK);
    EXPECT_EQ(st.error, RDMX_ERR_UNREACHABLE) << rdmx_last_error(ctx);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
    EXPECT_NE(std::string(rdmx_last_error(ctx)).find(":9"), std::string::npos)
        << rdmx_last_error(ctx);
    rdmx_request_free(ctx, req);
    rdmx_finalize(ctx);
  });
}

class VerbsWorld : public VerbsCm {
 protected:
  void run(int n, const std::function<void(Rank&)>& body, const SettingList& settings = {},
           const std::function<SettingList(int)>& settings_for = nullptr) {
    run_world("verbs", n, body, settings, settings_for);
  }
};

TEST_F(VerbsWorld, SimultaneousConnectKeepsOneConnectionAndEveryMessage) {
  for (int round = 0; round < 3; ++round) {
    run(2, [](Rank& r) {
      constexpr int kN = 50;
      int peer = 1 - r.rank;
      std::vector<uint64_t> out(kN), in(kN);
      std::vector<rdmx_request_t*> sends, recvs;
      for (int i = 0; i < kN; ++i) recvs.push_back(irecv(r, peer, 9, &in[size_t(i)], 8));
      r.barrier();  // both ranks connect at the same moment
      for (int i = 0; i < kN; ++i) {
        out[size_t(i)] = uint64_t(r.rank) << 32 | uint64_t(i);
        sends.push_back(isend(r, peer, 9, &out[size_t(i)], 8));
      }
      for (auto* q : sends) EXPECT_EQ(r.finish(q).error, RDMX_OK);
      for (int i = 0; i < kN; ++i) {
        EXPECT_EQ(r.finish(recvs[size_t(i)]).error, RDMX_OK);
        EXPECT_EQ(in[size_t(i)], uint64_t(peer) << 32 | uint64_t(i)) << i;
      }
      rdmx_stats_t s;
      rdmx_get_stats(r.ctx, &s);
      EXPECT_EQ(s.connections, 1u);
      r.barrier();
    });
  }
}

TEST_F(VerbsWorld, NegotiatedReadDepthIsTheMinimumOfBothSides) {
  const std::pair<int, int> depths[] = {{1, 4}, {4, 1}, {3, 16}, {16, 7}, {128, 2}, {5, 5}};
  for (auto [d0, d1] : depths) {
    uint64_t want = uint64_t(std::min(d0, d1));
    run(
        2,
        [want](Rank& r) {
          int peer = 1 - r.rank;
          std::vector<uint8_t> out(1 << 20), in(1 << 20);
          fill(out, uint64_t(r.rank));
          auto* rq = irecv(r, peer, 1, in.data(), in.size());
          auto* sq = isend(r, peer, 1, out.data(), out.size());
          EXPECT_EQ(r.finish(sq).error, RDMX_OK);
          EXPECT_EQ(r.finish(rq).error, RDMX_OK);
          EXPECT_TRUE(check(in.data(), in.size(), uint64_t(peer)));
          rdmx_stats_t s;
          rdmx_get_stats(r.ctx, &s);
          EXPECT_EQ(s.min_read_depth, want) << "rank " << r.rank;
          EXPECT_LE(s.max_reads_outstanding, want) << "rank " << r.rank;
          EXPECT_EQ(s.max_reads_outstanding, want) << "the window was not used in full";
          EXPECT_EQ(s.rdma_reads, 256u);
          r.barrier();
        },
        SettingList{{"RDMX_RNDV_CHUNK", "4096"}},
        [d0, d1](int rank) {
          return SettingList{{"RDMX_MAX_RD_ATOMIC", std::to_string(rank ? d1 : d0)}};
        });
  }
}

// rxe is a software device: by default a rendezvous reads 64 KiB at a time, at most 4
// in flight, so that a burst survives a lossy path; RDMX_RNDV_CHUNK set by hand reads
// in its chunks with the whole negotiated depth.
TEST_F(VerbsWorld, ASoftwareDeviceReadsInSmallerChunksUnlessTold) {
  for (const char* chunk : {"-1", "1048576", "16384"}) {
    SCOPED_TRACE(std::string("RDMX_RNDV_CHUNK=") + chunk);
    bool fabric_choice = std::string(chunk) == "-1";
    uint64_t per_read = fabric_choice ? 65536 : std::stoull(chunk);
    run(
        2,
        [=](Rank& r) {
          constexpr uint64_t kSize = 4 << 20;
          int peer = 1 - r.rank;
          std::vector<uint8_t> out(kSize), in(kSize);
          fill(out, uint64_t(r.rank) + 5);
          auto* rq = irecv(r, peer, 3, in.data(), in.size());
          auto* sq = isend(r, peer, 3, out.data(), out.size());
          EXPECT_EQ(r.finish(sq).error, RDMX_OK);
          EXPECT_EQ(r.finish(rq).error, RDMX_OK);
          EXPECT_TRUE(check(in.data(), in.size(), uint64_t(peer) + 5));
          rdmx_stats_t s;
          rdmx_get_stats(r.ctx, &s);
          EXPECT_EQ(s.rdma_reads, kSize / per_read) << "rank " << r.rank;
          if (fabric_choice) {
            EXPECT_EQ(s.max_reads_outstanding, 4u) << "rank " << r.rank;
          } else if (per_read == 16384) {
            EXPECT_GT(s.max_reads_outstanding, 4u) << "the negotiated depth was not used";
          }
          r.barrier();
        },
        SettingList{{"RDMX_RNDV_CHUNK", chunk}});
  }
}

TEST_F(VerbsWorld, SharedReceiveQueueCarriesEagerAndRendezvous) {
  std::string why = init_error({{"RDMX_SRQ", "1"}});
  if (!why.empty()) GTEST_SKIP() << "SKIPPED: RDMX_SRQ=1 does not come up: " << why;
  run(
      2,
      [](Rank& r) {
        int peer = 1 - r.rank;
        std::vector<uint8_t> big(256 << 10), got(256 << 10);
        fill(big, uint64_t(r.rank));
        for (int i = 0; i < 200; ++i) {
          uint64_t v = uint64_t(i), w = 0;
          auto* rq = irecv(r, peer, i, &w, sizeof w);
          auto* sq = isend(r, peer, i, &v, sizeof v);
          EXPECT_EQ(r.finish(sq).error, RDMX_OK);
          EXPECT_EQ(r.finish(rq).error, RDMX_OK);
          EXPECT_EQ(w, v);
        }
        auto* rq = irecv(r, peer, 1000, got.data(), got.size());
        auto* sq = isend(r, peer, 1000, big.data(), big.size());
        EXPECT_EQ(r.finish(sq).error, RDMX_OK);
        EXPECT_EQ(r.finish(rq).error, RDMX_OK);
        EXPECT_TRUE(check(got.data(), got.size(), uint64_t(peer)));
        r.barrier();
      },
      SettingList{{"RDMX_SRQ", "1"}});
}

TEST_F(VerbsCm, TheDeviceCanBeChosenByNameOrAddress) {
  std::string why = init_error({{"RDMX_VERBS_DEVICE", "nosuchdev7"}});
  EXPECT_NE(why.find("RDMX_VERBS_DEVICE=nosuchdev7"), std::string::npos) << why;
  EXPECT_NE(why.find("devices here"), std::string::npos) << why;
  const char* dev = std::getenv("RDMX_VM_DEV0");
  const char* ip = std::getenv("RDMX_VM_ADDR0");
  if (!dev || !ip) GTEST_SKIP() << "SKIPPED: choosing by name needs the VM's RDMX_VM_DEV0";
  EXPECT_EQ(init_error({{"RDMX_VERBS_DEVICE", dev}}), "");
  EXPECT_EQ(init_error({{"RDMX_VERBS_DEVICE", ip}}), "");
}

// Several devices for one context: a comma-separated list or "all"; what is wrong in a
// list is named, and a shared receive queue (one device's) is refused with several.
TEST_F(VerbsCm, SeveralDevicesAreNamedWithCommasOrAll) {
  const char* dev = std::getenv("RDMX_VM_DEV0");
  if (!dev) GTEST_SKIP() << "SKIPPED: needs the VM's RDMX_VM_DEV0";
  std::string d = dev;
  std::string why = init_error({{"RDMX_VERBS_DEVICE", d + ",,other"}});
  EXPECT_NE(why.find("accepted are one device name or IP address, several separated by commas, "
                     "or all"),
            std::string::npos)
      << why;
  why = init_error({{"RDMX_VERBS_DEVICE", d + "," + d}});
  EXPECT_NE(why.find(d + " is named twice"), std::string::npos) << why;
  why = init_error({{"RDMX_VERBS_DEVICE", d + ",nosuchdev7"}});
  EXPECT_NE(why.find("RDMX_VERBS_DEVICE=nosuchdev7"), std::string::npos) << why;
  why = init_error({{"RDMX_VERBS_DEVICE", d + ",nosuchdev7"}, {"RDMX_SRQ", "1"}});
  EXPECT_NE(why.find("RDMX_SRQ=1 with several devices"), std::string::npos) << why;
  EXPECT_EQ(init_error({{"RDMX_VERBS_DEVICE", "all"}}), "");
}

// Two ranks in children of this process, the sender killed by the parent once the
// receiver is reading its message.
TEST_F(VerbsCm, PeerKilledMidRendezvousFailsTheSurvivorQuickly) {
  constexpr size_t kLen = 64 << 20;
  ForkedPair pair;
  pair.start([&](int rank) {
    rdmx_context_t* ctx = verbs_context(rank, 2, kJob, {{"RDMX_RNDV_CHUNK", "65536"}});
    if (!pair.join(ctx, rank)) _exit(3);
    std::vector<uint8_t> buf(kLen, uint8_t(rank));
    rdmx_request_t* req = nullptr;
    if (rank == 0) {
      rdmx_isend(ctx, 1, 0, 5, buf.data(), buf.size(), 0, nullptr, nullptr, &req);
      for (;;) rdmx_progress(ctx);  // until killed
    }
    rdmx_irecv(ctx, 0, 0, 5, buf.data(), buf.size(), nullptr, nullptr, &req);
    rdmx_status_info_t st{};
    int done = 0;
    bool told = false;
    Clock::time_point killed_at{};
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!done && Clock::now() < deadline) {
      rdmx_progress(ctx);
      rdmx_test(req, &done, &st);
      rdmx_stats_t s;
      rdmx_get_stats(ctx, &s);
      if (!told && s.rdma_reads > 0) {
        told = true;
        killed_at = Clock::now();
        pair.tell_ready();
      }
    }
    EXPECT_TRUE(told) << "the receiver never started reading";
    EXPECT_TRUE(done) << "the receive did not complete after its sender died";
    EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST) << rdmx_last_error(ctx);
    auto took = Clock::now() - killed_at;
    EXPECT_LT(took, std::chrono::seconds(15));
    std::printf("survivor: the receive failed %.1f ms after the kill was requested: %s\n",
                std::chrono::duration<double, std::milli>(took).count(), rdmx_last_error(ctx));
    // Anything more for that peer fails at once.
    uint64_t v = 0;
    rdmx_request_t* s2 = nullptr;
    rdmx_isend(ctx, 0, 0, 6, &v, sizeof v, 0, nullptr, nullptr, &s2);
    int d2 = 0;
    rdmx_test(s2, &d2, &st);
    EXPECT_TRUE(d2);
    EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
    rdmx_request_free(ctx, req);
    rdmx_request_free(ctx, s2);
    rdmx_finalize(ctx);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  });
  bool reading = pair.wait_ready(60000);
  ::kill(pair.pid(0), SIGKILL);
  int st0 = 0, st1 = 0;
  pair.reap(0, Clock::now() + std::chrono::seconds(10), st0);
  EXPECT_TRUE(pair.reap(1, Clock::now() + std::chrono::seconds(90), st1)) << "the survivor hung";
  EXPECT_TRUE(reading) << "the receiver never reported reading";
  EXPECT_TRUE(WIFSIGNALED(st0)) << "the sender was not killed mid-transfer";
  EXPECT_TRUE(WIFEXITED(st1) && WEXITSTATUS(st1) == 0) << "survivor status " << st1;
}

}  // namespace
}  // namespace rdmx::test
