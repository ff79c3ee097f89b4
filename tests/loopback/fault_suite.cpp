// Failure handling, provoked through the loopback fabric's fault injection and by
// peers that speak wrongly: every pending request completes with an error naming the
// peer and the cause, nothing hangs, and a listener keeps serving.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_test.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fabric/loopback/loopback_faults.h"
#include "harness/child_rank.h"
#include "loopback/raw_peer.h"
#include "protocol/connect_msg.h"

namespace rdmx::test {
namespace {

class LoopbackFaults : public ::testing::Test {
 protected:
  void SetUp() override { loopback::reset_faults(); }
  void TearDown() override { loopback::reset_faults(); }
};

TEST_F(LoopbackFaults, ConnectionDroppedMidRendezvousFailsEveryPendingRequest) {
  loopback::faults().drop_at_read = 3;
  run_world(
      "loopback", 2,
      [](Rank& r) {
        std::vector<uint8_t> big(1 << 20), small(64);
        auto t0 = std::chrono::steady_clock::now();
        if (r.rank == 0) {
          auto* s = isend(r, 1, 1, big.data(), big.size());
          auto* rv = irecv(r, 1, 2, small.data(), small.size());  // never sent
          auto st = r.finish(s, 10000);
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
          st = r.finish(rv, 10000);
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
          EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("rank 1"), std::string::npos)
              << rdmx_last_error(r.ctx);
          // Later sends to the lost peer fail at once.
          st = r.finish(isend(r, 1, 3, small.data(), 8), 10000);
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
        } else {
          auto st = r.finish(irecv(r, 0, 1, big.data(), big.size()), 10000);
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
          EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("rank 0"), std::string::npos);
        }
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
      },
      SettingList{{"RDMX_RNDV_CHUNK", "4096"}});
}

TEST_F(LoopbackFaults, DelayedCompletionsChangeNothing) {
  loopback::faults().completion_delay = 7;
  run_world("loopback", 2, [](Rank& r) {
    for (uint64_t size : {uint64_t(8), uint64_t(5000), uint64_t(300000)}) {
      std::vector<uint8_t> b(size);
      if (r.rank == 0) {
        fill(b, size);
        EXPECT_EQ(r.finish(isend(r, 1, 0, b.data(), size)).error, RDMX_OK);
      } else {
        EXPECT_EQ(r.finish(irecv(r, 0, 0, b.data(), size)).error, RDMX_OK);
        EXPECT_TRUE(check(b.data(), size, size));
      }
    }
  });
}

// rdma_cm may report a passive side's connection established after the first receive
// completions on it: its receives are posted at accept, and with a shared receive queue
// the active side's first messages can land at once. Whatever comes first (eager,
// mid-size or a rendezvous request, matched at once) is taken as usual; a rendezvous
// matched then is read in the link's chunks once they are chosen.
TEST_F(LoopbackFaults, MessagesBeforeThePassiveSideIsEstablishedAreTakenAsUsual) {
  loopback::faults().established_late = 1000000;
  for (const SettingList& s : {SettingList{}, SettingList{{"RDMX_SRQ", "1"}}}) {
    for (uint64_t size : {uint64_t(8), uint64_t(5000), uint64_t(40000), uint64_t(300000)}) {
      SCOPED_TRACE(std::to_string(size) + " bytes" + (s.empty() ? "" : ", shared receive queue"));
      loopback::faults().messages_before_established = 0;
      run_world(
          "loopback", 2,
          [size](Rank& r) {
            std::vector<uint8_t> b(size);
            if (r.rank == 0) {
              fill(b, size);
              EXPECT_EQ(r.finish(isend(r, 1, 0, b.data(), size), 10000).error, RDMX_OK);
            } else {
              EXPECT_EQ(r.finish(irecv(r, 0, 0, b.data(), size), 10000).error, RDMX_OK);
              EXPECT_TRUE(check(b.data(), size, size));
            }
          },
          s);
      EXPECT_EQ(loopback::faults().messages_before_established.load(), 1u);
    }
  }
}

TEST_F(LoopbackFaults, SendErrorCompletionFailsTheConnection) {
  loopback::faults().error_at_send = 4;
  run_world("loopback", 2, [](Rank& r) {
    int v = 1;
    if (r.rank == 0) {
      int errors = 0;
      for (int i = 0; i < 10; ++i)
        errors += r.finish(isend(r, 1, 0, &v, 4, 0, RDMX_SEND_SYNC), 10000).error != RDMX_OK;
      EXPECT_GT(errors, 0);
      EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("retry"), std::string::npos)
          << rdmx_last_error(r.ctx);
    } else {
      for (int i = 0; i < 10; ++i) {
        auto st = r.finish(irecv(r, 0, 0, &v, 4), 10000);
        if (st.error != RDMX_OK) {
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
          break;
        }
      }
    }
  });
}

TEST_F(LoopbackFaults, UnreachablePeerFailsTheSend) {
  rdmx_init_params_t p{0, 2, "loopback", 1, nullptr};
  rdmx_context_t* c = nullptr;
  ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK);
  uint8_t bogus[12] = {'L', 'O', 'O', 'P', 0xff, 0xff, 0xff, 0x7f, 16, 0, 0, 0};
  ASSERT_EQ(rdmx_add_peer(c, 1, bogus, sizeof bogus), RDMX_OK);
  int v = 0;
  rdmx_request_t* q = nullptr;
  ASSERT_EQ(rdmx_isend(c, 1, 0, 0, &v, 4, 0, nullptr, nullptr, &q), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_EQ(rdmx_wait(c, q, 5000, &st), RDMX_OK);
  EXPECT_EQ(st.error, RDMX_ERR_UNREACHABLE);
  EXPECT_NE(std::string(rdmx_last_error(c)).find("rank 1"), std::string::npos);
  rdmx_request_free(c, q);
  rdmx_finalize(c);
}

// A loopback address carries the peer's read depth; with 0 every rendezvous read would
// wait forever, so it is refused, as the verbs fabric refuses it.
TEST_F(LoopbackFaults, AnAddressWithoutReadDepthIsRefused) {
  rdmx_context_t* a = open_rank("loopback", 0, 2, 7);
  rdmx_context_t* b = open_rank("loopback", 1, 2, 7);
  ASSERT_TRUE(a && b);
  auto addr = address_of(b);
  ASSERT_EQ(addr.size(), 12u);
  std::memset(addr.data() + 8, 0, 4);  // magic, endpoint id, then the read depth
  ASSERT_EQ(rdmx_add_peer(a, 1, addr.data(), addr.size()), RDMX_OK);
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a, b}, req, &st, 5000));
  EXPECT_NE(st.error, RDMX_OK);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("read depth 0"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
  rdmx_finalize(b);
}

TEST_F(LoopbackFaults, WrongJobIsRejectedWithAReasonInWords) {
  rdmx_context_t* c[2] = {};
  std::vector<uint8_t> addr[2];
  for (int i = 0; i < 2; ++i) {
    rdmx_init_params_t p{i, 2, "loopback", uint64_t(100 + i), nullptr};  // keys differ
    ASSERT_EQ(rdmx_init(&p, &c[i]), RDMX_OK);
    addr[i] = address_of(c[i]);
  }
  for (int i = 0; i < 2; ++i) rdmx_add_peer(c[i], 1 - i, addr[1 - i].data(), addr[1 - i].size());
  int v = 0;
  rdmx_request_t* q = nullptr;
  ASSERT_EQ(rdmx_isend(c[0], 1, 0, 0, &v, 4, 0, nullptr, nullptr, &q), RDMX_OK);
  int done = 0;
  rdmx_status_info_t st{};
  for (int i = 0; i < 100000 && !done; ++i) {
    rdmx_progress(c[0]);
    rdmx_progress(c[1]);
    rdmx_test(q, &done, &st);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(st.error, RDMX_ERR_REJECTED);
  EXPECT_NE(std::string(rdmx_last_error(c[0])).find("did not prove membership"), std::string::npos)
      << rdmx_last_error(c[0]);
  rdmx_request_free(c[0], q);
  for (auto* x : c) rdmx_finalize(x);
}

// A raw loopback endpoint that sends foreign or corrupt private data (raw_peer.h): the
// engine rejects it with a reason and goes on serving proper peers.
protocol::CmMessage raw_connect_reply(rdmx_context_t* target, const void* pdata, size_t len) {
  RawOutcome o = raw_connect_outcome(target, pdata, len);
  EXPECT_TRUE(o.rejected);
  return o.reply;
}

protocol::RejectReason raw_connect(rdmx_context_t* target, const void* pdata, size_t len) {
  return raw_connect_reply(target, pdata, len).reason;
}

TEST_F(LoopbackFaults, ForeignAndCorruptPrivateDataAreRejected) {
  rdmx_init_params_t p{0, 2, "loopback", 5, nullptr};
  rdmx_context_t* c = nullptr;
  ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK);
  const char foreign[] = "GET / HTTP/1.1";
  EXPECT_EQ(raw_connect(c, foreign, sizeof foreign), protocol::RejectReason::Foreign);
  auto m = protocol::make_cm(protocol::CmKind::Connect, 1, 0);
  m.credits = 8;
  m.ctrl_credits = 1;
  const SipKey key = protocol::job_key_mac_key(5);
  auto resealed = [&](protocol::CmMessage x) {
    protocol::fresh_nonce(x);
    protocol::seal(x, key, nullptr);
    return x;
  };
  auto bad = m;
  bad.version = 9;
  EXPECT_EQ(raw_connect(c, &bad, sizeof bad), protocol::RejectReason::Version);
  bad = m;
  bad.length = 12;
  EXPECT_EQ(raw_connect(c, &bad, sizeof bad), protocol::RejectReason::Corrupt);
  bad = m;
  bad.dst_rank = 1;
  bad = resealed(bad);
  EXPECT_EQ(raw_connect(c, &bad, sizeof bad), protocol::RejectReason::WrongRank);
  bad = m;
  bad.src_rank = 7;
  bad = resealed(bad);
  EXPECT_EQ(raw_connect(c, &bad, sizeof bad), protocol::RejectReason::UnknownRank);
  bad = m;
  protocol::fresh_nonce(bad);
  protocol::seal(bad, protocol::job_key_mac_key(6), nullptr);  // another job's key
  protocol::CmMessage reply = raw_connect_reply(c, &bad, sizeof bad);
  EXPECT_EQ(reply.reason, protocol::RejectReason::WrongJob);
  const uint8_t zeros[protocol::kMacBytes] = {};
  EXPECT_EQ(std::memcmp(reply.mac, zeros, sizeof zeros), 0) << "a reject carried a MAC";
  bad = m;  // a member's request whose MAC is missing
  EXPECT_EQ(raw_connect(c, &bad, sizeof bad), protocol::RejectReason::WrongJob);
  rdmx_finalize(c);
}

// A message that arrives damaged (header bytes changed on the way) fails its connection
// with a protocol error that says what was wrong; the receive waiting for it completes
// with that error instead of taking the bytes. A short message that says it is
// unnumbered (wire::kUnnumbered) is out of sequence on a fabric that does not keep the
// order for the engine (only shared memory does).
TEST_F(LoopbackFaults, CorruptMessagesFailTheConnectionAndSayWhy) {
  struct Case {
    bool sync;        // a synchronous send: the 32-byte header; else the 16-byte short one
    uint32_t offset;  // into the header (docs/wire-format.md)
    uint8_t xor_with;
    const char* says;
    uint32_t len = 1;   // bytes changed
    bool fill = false;  // set to xor_with instead
  };
  const Case cases[] = {
      {true, 16, 0x01, "length field says"},    // length
      {true, 24, 0x01, "source"},               // source rank
      {false, 4, 0x01, "sequence"},             // sequence number
      {true, 4, 0x01, "sequence"},              //
      {false, 0, 0x10, "version 3"},            // version
      {true, 0, 0x10, "version 3"},             //
      {false, 0, 0x07, "unknown type 15"},      // type
      {false, 0, 0x09, "shorter than its 32"},  // a type with a long header, cut short
      {false, 4, 0xff, "sequence", 4, true},    // wire::kUnnumbered
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    loopback::reset_faults();
    run_world("loopback", 2, [&c](Rank& r) {
      uint64_t v = 7;
      rdmx_request_t* q = r.rank == 0 ? isend(r, 1, 0, &v, sizeof v) : irecv(r, 0, 0, &v, sizeof v);
      EXPECT_EQ(r.finish(q).error, RDMX_OK);
      r.barrier();  // connected and quiet: the next SEND is rank 0's
      if (r.rank == 0) {
        loopback::faults().corrupt_offset = c.offset;
        loopback::faults().corrupt_xor = c.xor_with;
        loopback::faults().corrupt_len = c.len;
        loopback::faults().corrupt_fill = c.fill;
        loopback::faults().corrupt_at_send = loopback::faults().sends_posted + 1;
        auto st = r.finish(isend(r, 1, 1, &v, sizeof v, 0, c.sync ? RDMX_SEND_SYNC : 0), 10000);
        // A synchronous send waits for the receiver, which breaks the connection instead.
        if (c.sync)
          EXPECT_NE(st.error, RDMX_OK);
        else
          EXPECT_EQ(st.error, RDMX_OK);
      } else {
        auto st = r.finish(irecv(r, 0, 1, &v, sizeof v), 10000);
        EXPECT_EQ(st.error, RDMX_ERR_PROTOCOL);
        std::string why = rdmx_last_error(r.ctx);
        EXPECT_NE(why.find(c.says), std::string::npos) << why;
        EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
      }
      r.barrier();
    });
  }
}

// A READ the peer refuses (the RTS's key corrupted on the way) breaks the connection on
// both sides, as it breaks both queue pairs of an RC connection: the reader's receive
// fails with the peer's connection, saying it was refused, and the sender, waiting for
// FIN, hears the connection end. (A refusal with no end of the connection within
// kRefusalGrace would be a protocol error; over verbs a dying peer's memory can go
// before its connection, and its disconnect then follows the refusal.)
TEST_F(LoopbackFaults, ARefusedReadFailsTheConnectionOnBothSides) {
  loopback::reset_faults();
  run_world("loopback", 2,
            [](Rank& r) {
              uint64_t v = 7;
              rdmx_request_t* q =
                  r.rank == 0 ? isend(r, 1, 0, &v, sizeof v) : irecv(r, 0, 0, &v, sizeof v);
              EXPECT_EQ(r.finish(q).error, RDMX_OK);
              r.barrier();  // connected and quiet: the next SEND is rank 0's RTS
              std::vector<uint8_t> big(100000, 3);
              if (r.rank == 0) {
                loopback::faults().corrupt_offset = 32 + 8;  // the RTS body's key
                loopback::faults().corrupt_xor = 0x01;
                loopback::faults().corrupt_at_send = loopback::faults().sends_posted + 1;
                auto st = r.finish(isend(r, 1, 1, big.data(), big.size()), 10000);
                EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
              } else {
                auto st = r.finish(irecv(r, 0, 1, big.data(), big.size()), 10000);
                EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
                std::string why = rdmx_last_error(r.ctx);
                EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
                EXPECT_NE(why.find("refused"), std::string::npos) << why;
              }
              r.barrier();
            },
            {{"RDMX_EAGER_LIMIT", "4096"}, {"RDMX_MIDSIZE_LIMIT", "0"}});
}

// Two raw loopback endpoints, connected by hand: a reader, and an owner of memory.
struct RawPair {
  struct Sink {
    loopback::Fabric* fab;
    bool established = false, read_done = false, wr_failed = false;
    fabric::Failure failure = fabric::Failure::Other;
    void on_connect_request(loopback::ConnRequest* req, const uint8_t*, size_t) {
      std::string err;
      loopback::Conn* c = nullptr;
      uint8_t none = 0;
      if (fab->create_conn(nullptr, 0, req, nullptr, &c, err) == RDMX_OK)
        fab->accept(c, req, &none, 0, err);
    }
    void on_established(void*, const fabric::ConnAttrs&, const uint8_t*, size_t) {
      established = true;
    }
    void on_rejected(void*, const uint8_t*, size_t, const char*) {}
    void on_conn_error(void*, fabric::Failure, const char*) {}
    void on_recv(void*, uint64_t, uint32_t) {}
    void on_recv_unbuffered(void*, const uint8_t*, uint32_t) {}
    void on_send_done(void*, uint64_t) {}
    void on_read_done(void*, uint64_t) { read_done = true; }
    void on_wr_error(void*, uint64_t, fabric::Failure f, const char*) {
      wr_failed = true;
      failure = f;
    }
  };
  loopback::Fabric reader, owner;
  Sink rs{&reader}, os{&owner};
  loopback::Conn* conn = nullptr;

  RawPair() {
    Settings s;
    std::string err;
    EXPECT_EQ(reader.open(s, 0, err), RDMX_OK);
    EXPECT_EQ(owner.open(s, 1, err), RDMX_OK);
    uint8_t addr[64];
    size_t len = owner.address(addr, sizeof addr);
    uint8_t none = 0;
    EXPECT_EQ(reader.create_conn(addr, len, nullptr, nullptr, &conn, err), RDMX_OK);
    EXPECT_EQ(reader.connect(conn, &none, 0, err), RDMX_OK);
    for (int i = 0; i < 100 && !rs.established; ++i) progress();
    EXPECT_TRUE(rs.established);
  }
  void progress() {
    owner.progress(os);
    reader.progress(rs);
  }
};

// A READ outside what the peer registered is refused, also when the range asked for
// wraps around the end of the address space: the address and length come from the
// peer's rendezvous request, and a device would check them.
TEST_F(LoopbackFaults, ReadsOutsideARegionAreRefusedEvenWhenTheRangeWraps) {
  std::vector<uint8_t> secret(4096, 7), local(64, 0);
  constexpr uint64_t kTop = UINT64_MAX - 15;  // 16 bytes below the end of the address space
  struct Case {
    uint64_t offset;  // from the start of the region, or kTop for that address itself
    uint64_t len;
    bool allowed;
  };
  const Case cases[] = {
      {0, 64, true},
      {4096 - 64, 64, true},
      {4096 - 32, 64, false},
      {kTop, 64, false},           // above the region: the end wraps past zero
      {8, UINT64_MAX - 7, false},  // inside it: the length wraps the end below the start
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.offset);
    RawPair p;
    std::string err;
    loopback::Fabric::Region theirs, mine;
    ASSERT_EQ(p.owner.reg(secret.data(), secret.size(), fabric::kRemoteRead, theirs, err), RDMX_OK);
    ASSERT_EQ(p.reader.reg(local.data(), local.size(), fabric::kLocalWrite, mine, err), RDMX_OK);
    uint64_t base = theirs.remote_address(secret.data());
    uint64_t at = c.offset == kTop ? kTop : base + c.offset;
    std::fill(local.begin(), local.end(), 0);
    ASSERT_EQ(p.reader.read(p.conn, local.data(), c.len, mine, at, theirs.key(), 1), RDMX_OK);
    for (int i = 0; i < 100 && !p.rs.read_done && !p.rs.wr_failed; ++i) p.progress();
    EXPECT_EQ(p.rs.read_done, c.allowed);
    EXPECT_EQ(p.rs.wr_failed, !c.allowed);
    if (c.allowed) {
      EXPECT_EQ(local[0], 7);
    } else {
      EXPECT_EQ(p.rs.failure, fabric::Failure::RemoteAccess);
    }
  }
}

}  // namespace
}  // namespace rdmx::test
