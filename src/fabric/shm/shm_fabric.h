// The shared-memory fabric: ranks on one host, each a process, connected pairwise.
//
// A SEND is one copy from the sender's buffers into a receive buffer the peer posted in
// its inbound segment (shm_layout.h), then an entry in the peer's arrivals queue; a
// message of up to 164 bytes rides in the entry itself and takes no buffer (a short one
// of up to 16 bytes of payload in half a cache line). No system call on the way. A READ
// is a cross-memory read of the peer's buffer (process_vm_readv) where the kernel
// allows it, else a pipelined copy through the segments' staging areas that the peer's
// progress serves. Connections are made over an abstract Unix socket that also passes
// each side's segment (shm_socket.h) and whose end tells that the peer went away.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "container/ring.h"
#include "core/copy.h"
#include "core/idle_poll.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_arrival.h"
#include "fabric/shm/shm_conn.h"
#include "fabric/shm/shm_host.h"
#include "fabric/shm/shm_socket.h"
#include "protocol/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx::shm {

// What a shm address carries: where to connect, and whose host it is.
struct Address {
  static constexpr uint32_t kMagic = 0x314d4853;  // "SHM1"
  uint32_t magic;
  uint32_t version;
  HostIdentity host;
  uint64_t domain;  // RDMX_SHM_DOMAIN, hashed: ranks share memory within one
  char name[kMaxSocketName];
};

// Reads and checks a peer's address (magic, layout version, socket name); false with
// err naming what was wrong.
bool decode_address(const uint8_t* addr, size_t len, Address& a, std::string& err);

struct Completion {
  enum Kind : uint8_t { SendDone, ReadDone, WrError };
  Kind kind;
  fabric::Failure failure;
  uint64_t wr;
  void* user;
};

struct CmEvent {
  enum Kind : uint8_t { ConnectRequest, Established, Rejected, ConnError };
  Kind kind;
  fabric::Failure failure = fabric::Failure::Other;
  void* user = nullptr;
  ConnRequest* request = nullptr;
  fabric::ConnAttrs attrs{};
  std::string text;
  uint32_t pdata_len = 0;
  uint8_t pdata[196] = {};
};

class Fabric {
 public:
  static constexpr const char* kName = "shm";
  using Conn = shm::Conn;
  using ConnRequest = shm::ConnRequest;

  class Region {
   public:
    const void* desc() const { return nullptr; }
    uint64_t key() const { return key_; }
    uint64_t remote_address(const void* p) const { return reinterpret_cast<uintptr_t>(p); }

   private:
    friend class Fabric;
    uint64_t key_ = 0;
    uintptr_t addr_ = 0;
  };

  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int open(const Settings& s, int32_t rank, std::string& err);
  size_t address(uint8_t* buf, size_t cap) const;
  size_t max_connect_data() const { return kConnectDataMax; }
  // Whether addr is a valid shm address of a process this one can reach through shared
  // memory.
  bool reachable(const uint8_t* addr, size_t len) const;

  int create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user, Conn** out,
                  std::string& err);
  uint32_t qp_num(const Conn* c) const { return c->serial; }
  // The receive buffers of c live in its inbound segment, where the peer writes: made
  // here, before the connection is offered, for count buffers of buf_size bytes.
  int recv_memory(Conn* c, uint32_t count, uint32_t buf_size, uint8_t** out, std::string& err);
  int connect(Conn* c, const void* pdata, size_t plen, std::string& err);
  int accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err);
  void reject(ConnRequest* req, const void* pdata, size_t plen);
  void disconnect(Conn* c);
  // Ended, and nothing about it waiting to be reported; release() closes its socket and
  // unmaps both its segments.
  bool settled(const Conn* c) const {
    return c->state == Conn::State::Broken && cq_.empty() && events_.empty();
  }
  void release(Conn* c);

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err);
  void dereg(Region& r);
  // Reads are cross-memory reads of virtual addresses when they happen: nothing is pinned.
  bool pins_memory() const { return false; }

  // A rank's first fabric::kRoomyConns connections get the roomy window below; the rest, a lean
  // one. Every connection has a segment of its own, and a sender fills its peer's
  // receive buffers in turn: with 32 credits, an alltoall among 32 ranks touched a new
  // page of shared memory at almost every message (1,700 page faults per rank in ten
  // 16 KiB alltoalls) and ran 3-4x slower than vader, whose buffers are per process.
  // Lean connections keep 8 credits and no mid-size segments (a message above the
  // eager limit goes by rendezvous, one cross-memory read): a quarter of the buffers,
  // whose pages stay warm (docs/scale.md). The first peers a rank talks to are, in most
  // programs, its busiest (a stencil's neighbours, a 2-rank benchmark's partner).
  static constexpr uint32_t kLeanCredits = 8;
  // Mid-size messages (RDMX_MIDSIZE_LIMIT=-1) on roomy connections: up to 32 KiB, a few
  // copies through the rings beat the rendezvous' request, cross-memory read and FIN
  // (16 KiB: 2.2 us against 5.2); at 64 KiB the read's single copy wins back the
  // bandwidth (docs/performance.md). The eager limit stays the default: receive buffers
  // are shared memory per local pair.
  uint64_t midsize_limit(const Conn* c) const { return c->roomy ? 32 * 1024 : 0; }
  // Credits (RDMX_CREDITS=-1) on roomy connections: 32. Windows of 64 sends carried
  // 8-20% more messages of 16 to 256 bytes with 32 in flight than with 64, as many
  // (within 5%) of 1 to 8 bytes and 1 MiB, 2-5% less from 16 to 64 KiB; the queue's size
  // was not what mattered (docs/performance.md). Segments are 0.58 MB per local peer,
  // where 64 make 0.84.
  uint32_t credit_window(const Conn* c) const { return c->roomy ? 32 : kLeanCredits; }
  // Rendezvous reads (RDMX_RNDV_CHUNK=-1) of 4 MiB: a cross-memory read has no packets to
  // lose, and 1 MiB chunks carried 4 MiB messages at 12.6-14.6 GB/s where whole ones took
  // 14.7-18.2 (vader: 15.3-16.8; docs/performance.md).
  uint64_t rndv_chunk(const Conn*) const { return 4 << 20; }

  // Its counters in the engine's statistics (rdmx_get_stats).
  void fill_stats(rdmx_stats_t& s) const {
    s.split_reads = split_reads_;
    s.split_halves_served = split_halves_served_;
  }

  int post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r);
  [[gnu::always_inline]] int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags,
                                  uint64_t wr);
  // send() of the engine's short header h and len bytes of payload, without the gather
  // list: most such messages take one queue slot, written straight from h and payload.
  [[gnu::always_inline]] int send_short(Conn* c, const wire::Header& h, const void* payload,
                                        uint32_t len, uint32_t flags, uint64_t wr);
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr);

  template <class Sink>
  int progress(Sink& sink);
  int wait(int timeout_ms);
  // A sleeper's first sleep, after which it looks at its queues again (wake_peer).
  static constexpr int kRecheckMs = 1;

  static constexpr size_t kConnectDataMax = 56;
  static constexpr size_t kAcceptDataMax = 196;

 private:
  // Whether a decoded address is of this host, user, network namespace and domain.
  bool local(const Address& a) const;
  struct MemRange {
    size_t len;
    uint64_t key;
  };

  void complete(Completion::Kind k, fabric::Failure f, uint64_t wr, void* user) {
    cq_.push({k, f, wr, user});
  }
  void event(CmEvent e) { events_.push(std::move(e)); }
  void wake_peer(Conn* c);
  // A sender that streams small messages to one peer (two sends or more in a row, with
  // no arrival from it in between) asks, after each, for the cache lines its next
  // kPrefetchEntries entries of the same size will take. The receiver read those lines
  // a lap ago, and a store to a line another core holds waits for it, holding up every
  // store behind it. Windows of 64 sends of 8 to 128 bytes carried 1.25-1.73x the
  // messages in this machine's usual phase, 1.08-1.12x in its fastest. Not after a
  // single send: in a ping-pong the receiver waits on those very lines, and 8 to 32
  // bytes took 13-37% longer each way. Not for messages in receive buffers (above
  // kInlineMax): 0.88-0.99x from 256 B to 2 KiB (docs/performance.md).
  static constexpr uint32_t kPrefetchEntries = 3;
  void prefetch_next(Conn* c, uint32_t slots);
  [[gnu::cold, gnu::noinline]] int send_error(Conn* c, fabric::Failure f, uint64_t wr,
                                              const char* why);
  // Small messages take no credit (ConnAttrs::uncredited_max): the arrivals queue's room
  // paces them. A send that finds it without room for its slots is refused with
  // RDMX_ERR_AGAIN, and progress tells the engine once the peer has taken enough
  // (offer_room).
  [[gnu::cold, gnu::noinline]] int queue_full(Conn* c, uint32_t slots);
  template <class Sink>
  [[gnu::noinline]] void offer_room(Sink& sink);
  void bind_queues(Conn* c);
  bool attach_peer(Conn* c, int fd, uint64_t probe_addr, std::string& err);
  void break_conn(Conn* c, fabric::Failure why, const std::string& text);
  void peer_gone(Conn* c);
  void finish_ends();

  // Connection management (shm_cm.cpp): runs the sockets, turns them into events.
  int poll_sockets();
  void on_listener();
  void on_request_readable(ConnRequest* r);
  void on_conn_readable(Conn* c, uint32_t epoll_events);
  void expire_requests();
  void drop_request(ConnRequest* r);

  // Reads (shm_read.cpp).
  bool cma_read(Conn* c, void* local, uint64_t len, uint64_t raddr, fabric::Failure& f);
  // A read not split with the peer: across memory where permitted, else by copies.
  int read_alone(Conn* c, void* local, uint64_t len, uint64_t raddr, uint64_t wr);
  bool reserve_staging(Conn* c, std::string& why);
  // Split reads (shm_split_read.cpp): a large cross-memory read whose copy the peer
  // shares. split_read returns false where it cannot start one (no free entry, no room
  // in the peer's queue, cross-memory reads refused): the caller reads alone.
  bool split_read(Conn* c, uint8_t* local, uint64_t len, uint64_t raddr, uint64_t wr);
  bool take_back(Conn* c, uint32_t entry);
  void split_failed(Conn* c, uint32_t entry, fabric::Failure f);
  void stop_peer_copy(Conn* c, uint32_t entry);
  void close_split(Conn* c, uint32_t entry);
  void serve_split(Conn* c, uint32_t entry);
  void finish_splits(Conn* c);
  void fail_splits(Conn* c, fabric::Failure f);
  void issue_pieces(Conn* c);
  void serve_reads(Conn* c);
  void on_piece(Conn* c, const Arrival& a);
  void fail_copy_reads(Conn* c, fabric::Failure f);
  bool readable(uint64_t addr, uint64_t len) const;

  // Every arrival but a small message or a message in a buffer (a pad, or one that is
  // not valid): out of line, so that the poll loop stays small.
  [[gnu::noinline]] void take_other(Conn* c, const Arrival* a);
  [[gnu::cold, gnu::noinline]] void bad_arrival(Conn* c, const Arrival& a);
  // A small message that is not in the engine's usual shape (a short header and its
  // payload).
  [[gnu::noinline]] void write_inline(Conn* c, Arrival& a, const fabric::Sge* sge, int n,
                                      uint32_t total);

  int32_t rank_ = -1;  // for the log
  int epfd_ = -1;
  int listener_ = -1;
  Watch listener_watch_{Watch::Listener};
  std::string name_;
  uint64_t domain_ = 0;
  uint32_t next_serial_ = 1;
  uint32_t rd_atomic_ = 16;
  bool cma_wanted_ = true;            // RDMX_SHM_READ is not "copy"
  uint64_t split_min_ = 0;            // RDMX_SHM_SPLIT_READ: the smallest read to split; 0: none
  uint64_t split_reads_ = 0;          // reads this side split with the peer
  uint64_t split_halves_served_ = 0;  // back halves this side wrote into a peer's buffer
  bool prefetch_ = false;             // the processor has prefetch_for_write (prefetch_next)
  IdlePoll<> idle_sockets_;           // when to look at the sockets with no handshake running
  bool sockets_due_ = false;          // run the sockets on the next progress
  uint32_t busy_ = 0;                 // handshakes in progress: run the sockets every call
  uint32_t waiting_room_ = 0;         // connections with a send refused for want of room

  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> live_;  // established connections, polled by progress
  std::vector<Conn*> ends_;  // connections whose peer went away (peer_gone)
  std::vector<std::unique_ptr<ConnRequest>> requests_;
  // What copy reads may read, by start address (a buffer may be registered more than
  // once while several sends of it are in flight).
  std::multimap<uintptr_t, MemRange> regions_;
  uint64_t next_key_ = 1;
  Ring<Completion> cq_{256};
  Ring<CmEvent> events_{16};
};

inline int Fabric::send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += sge[i].len;
  bool small = total <= Arrival::kInlineMax;
  // The engine's short message (a short header and its payload), compacted to one slot.
  bool one_short = n == 2 && sge[0].len == wire::kShortBytes && goes_short(sge[0].addr, sge[1].len);
  uint32_t slots = one_short ? 1 : small ? Arrival::slots(uint32_t(total)) : Arrival::kRecvSlots;
  // An entry of several slots starts a cache line: a pad fills the slot before it if
  // need be.
  uint32_t pad = slots > 1 ? c->peer_arrivals.index(0) & 1 : 0;
  if (!c->established() || (!small && c->peer_posted.empty())) [[unlikely]]
    return send_error(c, fabric::Failure::RnrRetryExceeded, wr, "the peer has no receive posted");
  if (c->peer_arrivals.full(slots + pad)) [[unlikely]]
    return queue_full(c, slots + pad);
  if (pad) {
    Arrival& p = c->peer_arrivals.next();
    p.kind = Arrival::Pad;
    c->peer_arrivals.commit(p);
  }
  Arrival& a = c->peer_arrivals.next();
  if (one_short) [[likely]] {
    write_short(reinterpret_cast<ArrivalShort&>(a), sge[0].addr, sge[1].addr, uint32_t(sge[1].len));
  } else if (small) {
    // Small: the message rides in the entry and takes none of the peer's buffers.
    a.kind = Arrival::RecvInline;
    a.inline_len = uint16_t(total);
    if (n == 2 && sge[0].len == wire::kShortBytes) [[likely]] {
      // A short header and its payload: copies of known size, no call. Up to 8 bytes of
      // payload fit the first slot; the rest goes to the slots after it.
      constexpr uint32_t kFirst = Arrival::kFirstBytes - wire::kShortBytes;
      const auto* payload = static_cast<const uint8_t*>(sge[1].addr);
      __builtin_memcpy(a.data, sge[0].addr, wire::kShortBytes);
      if (slots == 1) {
        copy_bytes(a.data + wire::kShortBytes, payload, sge[1].len);
      } else {
        __builtin_memcpy(a.data + wire::kShortBytes, payload, kFirst);
        write_rest(c->peer_arrivals, payload + kFirst, uint32_t(sge[1].len) - kFirst);
      }
    } else {
      write_inline(c, a, sge, n, uint32_t(total));
    }
  } else {
    PostedRecv* p = c->peer_posted.peek();
    uint32_t offset = p->offset, plen = p->len;
    a.buf = {uint32_t(total), p->token};
    c->peer_posted.pop();
    const SegmentHeader& o = c->out_layout;
    if (offset < o.buffers_off || plen > o.buffers_len ||
        offset - o.buffers_off > o.buffers_len - plen || total > plen) [[unlikely]]
      return send_error(c, fabric::Failure::RemoteAccess, wr,
                        "the peer's receive buffer is outside its segment or too small");
    a.kind = Arrival::Recv;
    uint8_t* dst = c->out.base() + offset;
    for (int i = 0; i < n; ++i) {
      __builtin_memcpy(dst, sge[i].addr, sge[i].len);
      dst += sge[i].len;
    }
  }
  c->peer_arrivals.commit(a, slots);
  if (++c->sends_in_row > 1 && small && prefetch_) prefetch_next(c, slots);
  wake_peer(c);
  if (flags & fabric::kSendSignaled)
    complete(Completion::SendDone, fabric::Failure::Other, wr, c->user);
  return RDMX_OK;
}

inline int Fabric::send_short(Conn* c, const wire::Header& h, const void* payload, uint32_t len,
                              uint32_t flags, uint64_t wr) {
  if (!goes_short(&h, len)) [[unlikely]] {
    fabric::Sge sge[2] = {{&h, wire::kShortBytes, nullptr}, {payload, len, nullptr}};
    return send(c, sge, len ? 2 : 1, flags, wr);
  }
  if (!c->established()) [[unlikely]]
    return send_error(c, fabric::Failure::RnrRetryExceeded, wr, "the connection is not open");
  if (c->peer_arrivals.full(1)) [[unlikely]]
    return queue_full(c, 1);
  Arrival& a = c->peer_arrivals.next();
  write_short(reinterpret_cast<ArrivalShort&>(a), &h, payload, len);
  c->peer_arrivals.commit(a);
  if (++c->sends_in_row > 1 && prefetch_) prefetch_next(c, 1);
  wake_peer(c);
  if (flags & fabric::kSendSignaled)
    complete(Completion::SendDone, fabric::Failure::Other, wr, c->user);
  return RDMX_OK;
}

inline void Fabric::prefetch_next(Conn* c, uint32_t slots) {
  // The lines the next three entries of this many slots will take, pads included.
  uint32_t pad = slots > 1 ? c->peer_arrivals.index(0) & 1 : 0;
  uint32_t each = slots == 1 ? 1 : slots + (slots & 1);
  c->peer_arrivals.prefetch(0, pad + kPrefetchEntries * each);
}

inline void Fabric::wake_peer(Conn* c) {
  // After publishing an entry, without a barrier between (a full one would cost a
  // message about a tenth of its time): this look may pass the entry and miss a sleeper
  // that has just looked at the queue. Such an entry is visible a moment later, and the
  // sleeper looks again after its first short sleep (wait()).
  if (c->out_h->sleeping.load(std::memory_order_relaxed)) [[unlikely]]
    send_wake(c->sock);
}

template <class Sink>
int Fabric::progress(Sink& sink) {
  int handled = 0;
  if ((busy_ || sockets_due_ || idle_sockets_.due())) [[unlikely]]
    handled += poll_sockets();
  while (!events_.empty()) [[unlikely]] {
      CmEvent ev = events_.pop();
      ++handled;
      switch (ev.kind) {
        case CmEvent::ConnectRequest:
          sink.on_connect_request(ev.request, ev.request->frame.pdata, kConnectDataMax);
          break;
        case CmEvent::Established:
          sink.on_established(ev.user, ev.attrs, ev.pdata, ev.pdata_len);
          break;
        case CmEvent::Rejected:
          sink.on_rejected(ev.user, ev.pdata, ev.pdata_len, ev.text.c_str());
          break;
        case CmEvent::ConnError: sink.on_conn_error(ev.user, ev.failure, ev.text.c_str()); break;
      }
    }
  while (!cq_.empty()) {
    Completion c = cq_.pop();
    ++handled;
    switch (c.kind) {
      case Completion::SendDone: sink.on_send_done(c.user, c.wr); break;
      case Completion::ReadDone: sink.on_read_done(c.user, c.wr); break;
      case Completion::WrError:
        sink.on_wr_error(c.user, c.wr, c.failure, fabric::failure_name(c.failure));
        break;
    }
  }
  // Connections may be added or broken by the callbacks: by index, re-checked.
  for (size_t i = 0; i < live_.size(); ++i) {
    Conn* c = live_[i];
    int n = 0;
    for (Arrival* a; n < 32 && (a = c->arrivals.peek()); ++n) {
      uint32_t len = a->inline_len;
      if (const auto* e = reinterpret_cast<const ArrivalShort*>(a);
          e->kind == Arrival::RecvShort && e->len <= ArrivalShort::kPayloadMax) [[likely]] {
        // Made the engine's message again (unnumbered: the queue keeps the order), and
        // copied out before the entry goes back to the peer, which may then write it.
        alignas(8) uint8_t msg[wire::kShortBytes + ArrivalShort::kPayloadMax];
        uint32_t mlen = read_short(*e, msg);
        c->arrivals.pop();
        sink.on_recv_unbuffered(c->user, hide_bounds(msg), mlen);
      } else if (a->kind == Arrival::RecvInline && len <= Arrival::kFirstBytes) {
        // Copied out before the entry goes back to the peer, which may then write it
        // again: the whole slot, a copy of known size.
        alignas(8) uint8_t msg[Arrival::kFirstBytes];
        __builtin_memcpy(msg, a->data, sizeof msg);
        c->arrivals.pop();
        sink.on_recv_unbuffered(c->user, hide_bounds(msg), len);
      } else if (a->kind == Arrival::RecvInline && len <= Arrival::kInlineMax) {
        // Several slots, the same way, each whole.
        alignas(8) uint8_t msg[Arrival::kInlineMax];
        uint32_t slots = Arrival::slots(len);
        __builtin_memcpy(msg, a->data, Arrival::kFirstBytes);
        read_rest(c->arrivals, msg + Arrival::kFirstBytes, slots);
        c->arrivals.pop(slots);
        sink.on_recv_unbuffered(c->user, hide_bounds(msg), len);
      } else if (uint32_t t = a->buf.token, blen = a->buf.len;
                 a->kind == Arrival::Recv && t < c->tokens.size() && c->tokens[t].live &&
                 blen <= c->tokens[t].len) {
        PostedBuf& b = c->tokens[t];
        c->arrivals.pop(Arrival::kRecvSlots);
        b.live = false;
        c->free_tokens.push_back(t);
        sink.on_recv(c->user, b.wr, blen);
      } else {
        take_other(c, a);
      }
      if (!c->established()) break;
    }
    handled += n;
    if (n) c->sends_in_row = 0;
    if (c->established() && !c->read_reqs.empty()) [[unlikely]]
      serve_reads(c);
    if (c->splits_open) [[unlikely]]
      finish_splits(c);
  }
  if (waiting_room_) [[unlikely]]
    offer_room(sink);
  if (!ends_.empty()) [[unlikely]]
    finish_ends();
  return handled;
}

template <class Sink>
void Fabric::offer_room(Sink& sink) {
  // Counted again: a connection that broke meanwhile is no longer live, and one that
  // is told may be refused again at once.
  waiting_room_ = 0;
  for (size_t i = 0; i < live_.size(); ++i) {
    Conn* c = live_[i];
    if (!c->room_wanted) continue;
    if (c->peer_arrivals.full(c->room_wanted)) {
      ++waiting_room_;
      continue;
    }
    c->room_wanted = 0;
    sink.on_send_room(c->user);
  }
}

}  // namespace rdmx::shm
