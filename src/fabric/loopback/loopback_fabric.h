// The loopback fabric: every endpoint lives in this process, SENDs and RDMA READs are
// real byte copies between registered buffers, and connection setup carries real
// private data with rdma_cm's limits (56 bytes on connect, zero-padded). Endpoints may
// be driven from different threads. Faults can be injected (loopback_faults.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/copy.h"
#include "fabric/fabric.h"
#include "fabric/loopback/loopback_state.h"
#include "rdmx/rdmx.h"

namespace rdmx::loopback {

class Fabric {
 public:
  static constexpr const char* kName = "loopback";
  using Conn = loopback::Conn;
  using ConnRequest = loopback::ConnRequest;

  class Region {
   public:
    const void* desc() const { return this; }
    uint64_t key() const { return key_; }
    uint64_t remote_address(const void* p) const { return reinterpret_cast<uintptr_t>(p); }

   private:
    friend class Fabric;
    uint64_t key_ = 0;
  };

  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int open(const Settings& s, int32_t rank, std::string& err);
  size_t address(uint8_t* buf, size_t cap) const;
  size_t max_connect_data() const { return kConnectDataMax; }

  int create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user, Conn** out,
                  std::string& err);
  uint32_t qp_num(const Conn* c) const { return c->serial; }
  int connect(Conn* c, const void* pdata, size_t plen, std::string& err);
  int accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err);
  void reject(ConnRequest* req, const void* pdata, size_t plen);
  void disconnect(Conn* c);
  // Ended, and everything about c reported. A released connection keeps its few bytes
  // (its peer's thread may still look at it until it sees it broken): its receives go.
  bool settled(const Conn* c) const;
  void release(Conn* c);

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err);
  void dereg(Region& r);
  // Reads copy from the peer's virtual addresses when they happen: nothing is pinned.
  bool pins_memory() const { return false; }

  int post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r);
  int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr);
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr);

  template <class Sink>
  int progress(Sink& sink);
  int wait(int timeout_ms) {
    ep_->wait(timeout_ms);
    return RDMX_OK;
  }

  // Shared receive queue (RDMX_SRQ=1): declared before open(); receives are then posted
  // with post_shared_recv() and serve every connection.
  void enable_shared_receive() { shared_receive_ok_ = true; }
  int post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr);

  // Connect private data is padded to this size, as rdma_cm does for RDMA_PS_TCP.
  static constexpr size_t kConnectDataMax = 56;
  static constexpr size_t kAcceptDataMax = 196;

 private:
  std::shared_ptr<EpState> ep_;
  uint32_t max_rd_atomic_ = 16;
  bool shared_receive_ok_ = false;
};

template <class Sink>
int Fabric::progress(Sink& sink) {
  int handled = 0;
  if (ep_->may_have_events()) {
    CmEvent ev;
    while (ep_->take_event(ev)) {
      ++handled;
      switch (ev.kind) {
        case CmEvent::ConnectRequest:
          sink.on_connect_request(ev.request, ev.pdata, ev.pdata_len);
          break;
        case CmEvent::Established:
          sink.on_established(ev.user, ev.attrs, ev.pdata, ev.pdata_len);
          break;
        case CmEvent::Rejected:
          sink.on_rejected(ev.user, ev.pdata, ev.pdata_len, "rejected by the peer");
          break;
        case CmEvent::ConnError: sink.on_conn_error(ev.user, ev.failure, ev.text); break;
      }
    }
  }
  Completion batch[32];
  int n = ep_->take_completions(batch, 32);
  for (int i = 0; i < n; ++i) {
    const Completion& c = batch[i];
    switch (c.kind) {
      case Completion::Recv: sink.on_recv(c.user, c.wr, c.len); break;
      case Completion::RecvUnbuffered:
        sink.on_recv_unbuffered(c.user, hide_bounds(c.data), c.len);
        break;
      case Completion::SendDone: sink.on_send_done(c.user, c.wr); break;
      case Completion::ReadDone: sink.on_read_done(c.user, c.wr); break;
      case Completion::WrError:
        sink.on_wr_error(c.user, c.wr, c.failure, fabric::failure_name(c.failure));
        break;
    }
  }
  return handled + n;
}

}  // namespace rdmx::loopback
