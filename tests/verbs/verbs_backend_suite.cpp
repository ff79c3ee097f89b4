// The verbs backend on its own, between two raw ends: what each rdma_conn_param field
// does on the real driver (read depths, RNR retry, flow control, srq), the shared
// receive queue, the order of a peer's last messages and its disconnect, a teardown
// with work still posted, and the device events that end connections.
#include <chrono>
#include <cstring>

#include "fabric/verbs/verbs_async.h"
#include "verbs/verbs_test.h"

namespace rdmx::test {
namespace {

using protocol::CmKind;
using protocol::CmMessage;
using Clock = std::chrono::steady_clock;

// A connected pair: a connects to b. b posts b_recvs receives (a posts all of its own).
struct Pair {
  RawEnd a, b;
  verbs::Conn* ac = nullptr;
  verbs::Conn* bc = nullptr;
  bool b_shared = false;  // b posts to its shared receive queue instead

  bool open(const SettingList& a_settings = {}, const SettingList& b_settings = {},
            bool b_srq = false) {
    b_shared = b_srq;
    std::string err;
    EXPECT_EQ(a.open(a_settings), RDMX_OK);
    EXPECT_EQ(b.open(b_settings, b_srq, &err), RDMX_OK) << err;
    return !::testing::Test::HasFailure();
  }
  bool connect(uint32_t b_recvs) {
    b.rec.on_request = [this, b_recvs](verbs::ConnRequest* req, const uint8_t* p, size_t n) {
      CmMessage m;
      std::string why, err;
      ASSERT_EQ(protocol::parse_cm(p, n, CmKind::Connect, m, why), protocol::RejectReason::None);
      ASSERT_EQ(b.fabric.create_conn(nullptr, 0, req, &b, &bc, err), RDMX_OK) << err;
      if (!b_shared) b.post_recvs(bc, b_recvs);
      CmMessage acc = cm_message(CmKind::Accept, 1, 0, 1, b.fabric.qp_num(bc));
      ASSERT_EQ(b.fabric.accept(bc, req, &acc, sizeof acc, err), RDMX_OK) << err;
    };
    std::string err;
    std::vector<uint8_t> addr = b.address();
    EXPECT_EQ(a.fabric.create_conn(addr.data(), addr.size(), nullptr, &a, &ac, err), RDMX_OK);
    if (!ac) return false;
    a.post_recvs(ac, RawEnd::kBufs);
    CmMessage m = cm_message(CmKind::Connect, 1, 1, 0, a.fabric.qp_num(ac));
    EXPECT_EQ(a.fabric.connect(ac, &m, sizeof m, err), RDMX_OK) << err;
    bool ok = drive([&] { return !a.rec.events.empty() && b.rec.count(Recorder::Established) > 0; },
                    {&a, &b});
    EXPECT_TRUE(ok);
    EXPECT_TRUE(ok && a.rec.events[0].kind == Recorder::Established)
        << (a.rec.events.empty() ? "" : a.rec.events[0].why);
    return !::testing::Test::HasFailure();
  }
  const fabric::ConnAttrs& a_attrs() { return a.rec.first(Recorder::Established)->attrs; }
  const fabric::ConnAttrs& b_attrs() { return b.rec.first(Recorder::Established)->attrs; }
};

int send_bytes(RawEnd& e, verbs::Conn* c, uint64_t v, uint64_t wr) {
  fabric::Sge sge{&v, sizeof v, nullptr};
  return e.fabric.send(c, &sge, 1, fabric::kSendInline | fabric::kSendSignaled, wr);
}

TEST_F(VerbsCm, ReadDepthsAreLoweredByThePassiveSide) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open({{"RDMX_MAX_RD_ATOMIC", "9"}}, {{"RDMX_MAX_RD_ATOMIC", "3"}}));
    ASSERT_TRUE(p.connect(4));
    EXPECT_EQ(p.a_attrs().initiator_depth, 3u);
    EXPECT_EQ(p.a_attrs().responder_resources, 3u);
    EXPECT_EQ(p.b_attrs().initiator_depth, 3u);
    EXPECT_EQ(p.b_attrs().responder_resources, 3u);
    // The queue pair's own caps are what the engine sees.
    EXPECT_GE(p.a_attrs().max_inline, 32u);
    EXPECT_GE(p.a_attrs().max_send_wr, 64u);
    EXPECT_GE(p.a_attrs().max_msg_size, 1u << 20);
    EXPECT_FALSE(p.a_attrs().srq);
  });
}

TEST_F(VerbsCm, FlowControlIsExchangedAndReported) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open({{"RDMX_FLOW_CONTROL", "1"}}, {{"RDMX_FLOW_CONTROL", "0"}}));
    ASSERT_TRUE(p.connect(4));
    EXPECT_FALSE(p.a_attrs().flow_control) << "a reports what b declared";
    EXPECT_TRUE(p.b_attrs().flow_control) << "b reports what a declared";
  });
}

TEST_F(VerbsCm, RnrWithoutRetrySurfacesAsAnError) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open({{"RDMX_RNR_RETRY", "0"}}, {{"RDMX_RNR_RETRY", "0"}}));
    ASSERT_TRUE(p.connect(0));  // b posts no receive
    EXPECT_EQ(p.a_attrs().rnr_retry, 0);
    auto t0 = Clock::now();
    ASSERT_EQ(send_bytes(p.a, p.ac, 1, 77), RDMX_OK);
    ASSERT_TRUE(
        drive([&] { return p.a.rec.count(Recorder::WrError) > 0; }, {&p.a, &p.b}, nullptr, 10000))
        << "the send neither failed nor completed";
    const Recorder::Event& e = *p.a.rec.first(Recorder::WrError);
    EXPECT_EQ(e.wr, 77u);
    EXPECT_EQ(e.failure, fabric::Failure::RnrRetryExceeded);
    EXPECT_NE(e.why.find("receiver not ready"), std::string::npos) << e.why;
    EXPECT_EQ(p.a.rec.count(Recorder::SendDone), 0u);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  });
}

TEST_F(VerbsCm, RnrRetryCountIsTheReceiversToGive) {
  in_child([] {
    // b asks its peer to retry forever (7): a's send waits until b posts a receive.
    Pair p;
    ASSERT_TRUE(
        p.open({{"RDMX_RNR_RETRY", "0"}}, {{"RDMX_RNR_RETRY", "7"}, {"RDMX_RETRY_COUNT", "5"}}));
    ASSERT_TRUE(p.connect(0));
    EXPECT_EQ(p.a_attrs().rnr_retry, 7);
    EXPECT_EQ(p.b_attrs().rnr_retry, 0);
    EXPECT_EQ(p.a_attrs().retry_count, 7);  // the requester's retry count serves both
    EXPECT_EQ(p.b_attrs().retry_count, 7);
    ASSERT_EQ(send_bytes(p.a, p.ac, 0x1234, 5), RDMX_OK);
    auto until = Clock::now() + std::chrono::milliseconds(300);
    drive([&] { return Clock::now() > until; }, {&p.a, &p.b});
    EXPECT_EQ(p.a.rec.events.size(), 1u) << "the send ended while the receiver was not ready";
    p.b.post_recvs(p.bc, 1);
    ASSERT_TRUE(drive([&] { return p.a.rec.count(Recorder::SendDone) > 0; }, {&p.a, &p.b}));
    ASSERT_TRUE(drive([&] { return p.b.rec.count(Recorder::Recv) > 0; }, {&p.a, &p.b}));
    uint64_t got;
    std::memcpy(&got, p.b.buf(0), sizeof got);
    EXPECT_EQ(got, 0x1234u);
  });
}

TEST_F(VerbsCm, ThePeersLastMessagesArriveBeforeItsDisconnect) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open());
    ASSERT_TRUE(p.connect(RawEnd::kBufs));
    // Let b's side of the handshake settle, then stop driving b.
    auto until = Clock::now() + std::chrono::milliseconds(100);
    drive([&] { return Clock::now() > until; }, {&p.a, &p.b});
    size_t before = p.b.rec.events.size();
    for (uint64_t i = 0; i < 10; ++i) ASSERT_EQ(send_bytes(p.a, p.ac, i, i), RDMX_OK);
    ASSERT_TRUE(drive([&] { return p.a.rec.count(Recorder::SendDone) == 10; }, {&p.a}));
    p.a.fabric.disconnect(p.ac);
    until = Clock::now() + std::chrono::milliseconds(300);
    drive([&] { return Clock::now() > until; }, {&p.a});
    ASSERT_TRUE(drive([&] { return p.b.rec.count(Recorder::ConnError) > 0; }, {&p.b}));
    std::vector<Recorder::Event> ev(p.b.rec.events.begin() + long(before), p.b.rec.events.end());
    size_t recvs = 0;
    bool ended = false;
    for (const auto& e : ev) {
      if (e.kind == Recorder::Recv) {
        EXPECT_FALSE(ended) << "a message was reported after the connection ended";
        uint64_t v;
        std::memcpy(&v, p.b.buf(uint32_t(e.wr)), sizeof v);
        EXPECT_EQ(v, recvs);
        ++recvs;
      } else {
        ended = true;
        EXPECT_EQ(e.failure, fabric::Failure::Disconnected) << e.why;
      }
    }
    EXPECT_EQ(recvs, 10u);
    EXPECT_NE(p.b.rec.first(Recorder::ConnError)->why.find("disconnected"), std::string::npos);
  });
}

TEST_F(VerbsCm, TeardownWithWorkPostedDoesNotHang) {
  in_child([] {
    auto t0 = Clock::now();
    {
      Pair p;
      ASSERT_TRUE(p.open());
      ASSERT_TRUE(p.connect(RawEnd::kBufs));
      std::vector<uint8_t> src(1 << 20, 1), dst(1 << 20);
      verbs::Fabric::Region rs, rd;
      std::string err;
      ASSERT_EQ(p.b.fabric.reg(src.data(), src.size(), fabric::kRemoteRead, rs, err), RDMX_OK);
      ASSERT_EQ(p.a.fabric.reg(dst.data(), dst.size(), fabric::kLocalWrite, rd, err), RDMX_OK);
      for (uint64_t i = 0; i < 8; ++i)
        ASSERT_EQ(p.a.fabric.read(p.ac, dst.data(), dst.size(), rd, rs.remote_address(src.data()),
                                  rs.key(), i),
                  RDMX_OK);
      ASSERT_EQ(send_bytes(p.a, p.ac, 1, 100), RDMX_OK);
      // Everything goes away now, reads and receives still posted.
    }
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  });
}

TEST_F(VerbsCm, SharedReceiveQueueNamesTheConnection) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open({}, {{"RDMX_SRQ", "1"}}, true));
    ASSERT_TRUE(p.connect(0));
    EXPECT_TRUE(p.b_attrs().srq);
    EXPECT_EQ(p.a_attrs().rnr_retry, 7) << "a shared queue can run dry: the peer retries";
    for (uint32_t i = 0; i < 4; ++i)
      ASSERT_EQ(p.b.fabric.post_shared_recv(p.b.buf(i), RawEnd::kBufSize, p.b.region, 100 + i),
                RDMX_OK);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(send_bytes(p.a, p.ac, i + 10, i), RDMX_OK);
    ASSERT_TRUE(drive([&] { return p.b.rec.count(Recorder::Recv) == 3; }, {&p.a, &p.b}));
    for (const auto& e : p.b.rec.events) {
      if (e.kind != Recorder::Recv) continue;
      EXPECT_EQ(e.user, &p.b) << "the completion names the connection";
      EXPECT_GE(e.wr, 100u);
      EXPECT_EQ(e.len, 8u);
    }
  });
}

TEST_F(VerbsCm, SharedReceiveQueueNeedsACallerThatPostsToIt) {
  in_child([] {
    RawEnd e;
    std::string err;
    EXPECT_EQ(e.open({{"RDMX_SRQ", "1"}}, false, &err), RDMX_ERR_UNSUPPORTED);
    EXPECT_NE(err.find("RDMX_SRQ=1"), std::string::npos) << err;
  });
}

// The device events no driver raises on demand, delivered as the device would
// (async_events::inject): a queue pair gone fatal ends its own connection, naming the
// device and the event; the device gone fatal ends every connection and refuses new ones.
TEST_F(VerbsCm, AQueuePairFatalEventEndsItsOwnConnection) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open());
    ASSERT_TRUE(p.connect(4));
    verbs::AsyncEvent e{IBV_EVENT_QP_FATAL};
    e.qp_num = p.a.fabric.qp_num(p.ac);
    verbs::async_events::inject(p.a.fabric.device().context(), e);
    ASSERT_TRUE(
        drive([&] { return p.a.rec.count(Recorder::ConnError) > 0; }, {&p.a, &p.b}, nullptr, 10000))
        << "the event ended nothing";
    const Recorder::Event& ev = *p.a.rec.first(Recorder::ConnError);
    EXPECT_NE(ev.why.find("IBV_EVENT_QP_FATAL"), std::string::npos) << ev.why;
    EXPECT_NE(ev.why.find("device " + p.a.fabric.device().name()), std::string::npos) << ev.why;
    // b shares the device (one process) but not the queue pair: it hears only that a
    // went away.
    ASSERT_TRUE(drive([&] { return p.b.rec.count(Recorder::ConnError) > 0; }, {&p.a, &p.b}, nullptr,
                      10000));
    EXPECT_EQ(p.b.rec.first(Recorder::ConnError)->why.find("IBV_EVENT_QP_FATAL"),
              std::string::npos);
    // The device still serves new connections.
    std::string err;
    verbs::Conn* again = nullptr;
    std::vector<uint8_t> addr = p.b.address();
    EXPECT_EQ(p.a.fabric.create_conn(addr.data(), addr.size(), nullptr, &p.a, &again, err), RDMX_OK)
        << err;
  });
}

TEST_F(VerbsCm, ADeviceFatalEventEndsEveryConnectionAndRefusesNewOnes) {
  in_child([] {
    Pair p;
    ASSERT_TRUE(p.open());
    ASSERT_TRUE(p.connect(4));
    ASSERT_EQ(send_bytes(p.a, p.ac, 5, 1), RDMX_OK);
    verbs::async_events::inject(p.a.fabric.device().context(),
                                verbs::AsyncEvent{IBV_EVENT_DEVICE_FATAL});
    ASSERT_TRUE(drive(
        [&] {
          return p.a.rec.count(Recorder::ConnError) > 0 && p.b.rec.count(Recorder::ConnError) > 0;
        },
        {&p.a, &p.b}, nullptr, 10000))
        << "a connection outlived its device";
    const Recorder::Event& ev = *p.a.rec.first(Recorder::ConnError);
    EXPECT_EQ(ev.failure, fabric::Failure::DeviceRemoved);
    EXPECT_NE(ev.why.find("IBV_EVENT_DEVICE_FATAL"), std::string::npos) << ev.why;
    // Both ends have taken the event by now or within their next look (every 256 calls).
    for (int i = 0; i < 300; ++i) p.b.progress();
    for (RawEnd* e : {&p.a, &p.b}) {
      std::string err;
      verbs::Conn* c = nullptr;
      std::vector<uint8_t> addr = (e == &p.a ? p.b : p.a).address();
      EXPECT_EQ(e->fabric.create_conn(addr.data(), addr.size(), nullptr, e, &c, err),
                RDMX_ERR_NO_DEVICE);
      EXPECT_NE(err.find("IBV_EVENT_DEVICE_FATAL"), std::string::npos) << err;
    }
  });
}

}  // namespace
}  // namespace rdmx::test
