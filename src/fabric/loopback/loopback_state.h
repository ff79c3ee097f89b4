// State shared between loopback endpoints: the endpoint's receive queues, its
// completion and connection-event queues, its connections, and the registered memory
// that peers may read. Whatever another thread may touch is under the endpoint's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include <unordered_map>
#include <vector>
#include "core/spinlock.h"

#include "container/ring.h"
#include "fabric/fabric.h"

namespace rdmx::loopback {

class EpState;
struct Conn;

// A data-path completion. RecvUnbuffered carries its message (RDMX_LOOPBACK_SMALL_UNBUFFERED).
// Its bytes are left uninitialised by default: progress takes completions into a batch
// of 32 on the stack every call, and zeroing it cost more than the rest of the fabric.
struct Completion {
  enum Kind : uint8_t { Recv, SendDone, ReadDone, WrError, RecvUnbuffered };
  static constexpr uint32_t kUnbufferedMax = fabric::kUnbufferedMax;
  Kind kind;
  bool is_read;
  fabric::Failure failure;
  uint32_t len;
  uint64_t wr;
  uint64_t ready_tick;
  void* user;
  Conn* conn;
  uint8_t data[kUnbufferedMax];
};

struct ConnRequest {
  std::shared_ptr<EpState> from;
  Conn* active = nullptr;
  fabric::ConnAttrs requested{};  // the active side's proposal, from its point of view
  uint8_t pdata[56] = {};
};

// A connection-management event.
struct CmEvent {
  enum Kind : uint8_t { ConnectRequest, Established, Rejected, ConnError };
  Kind kind;
  fabric::Failure failure = fabric::Failure::Other;
  void* user = nullptr;
  ConnRequest* request = nullptr;
  fabric::ConnAttrs attrs{};
  const char* text = "";
  Conn* held = nullptr;     // Established: held back until held reports a message,
  uint64_t ready_tick = 0;  //   or until this poll (Faults::established_late)
  uint32_t pdata_len = 0;
  uint8_t pdata[196] = {};
};

struct RecvWr {
  void* buf;
  uint32_t len;
  uint64_t wr;
};

struct Conn {
  EpState* ep = nullptr;             // owner
  std::shared_ptr<EpState> peer_ep;  // keeps the peer's memory alive while paired
  Conn* peer = nullptr;
  void* user = nullptr;
  bool active = false;
  bool established = false;
  bool broken = false;
  bool reported_recv = false;  // a message on it has been reported (under ep->mu)
  fabric::ConnAttrs attrs{};
  uint32_t serial = 0;     // stands in for a QP number
  uint32_t target_id = 0;  // active side: the endpoint to connect to
  uint32_t target_rd_atom = 0;
  Ring<RecvWr> recvs{64};        // under ep->mu
  uint32_t reads_in_flight = 0;  // under ep->mu
};

struct MemRange {
  uintptr_t addr;
  size_t len;
  uint32_t access;
};

class EpState {
 public:
  SpinLock mu;
  uint32_t id = 0;
  uint32_t device_rd_atom = 16;
  uint32_t max_inline = 128;
  bool sends_unregistered = false;
  bool small_unbuffered = false;  // small messages take no receive buffer
  bool closed = false;
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<std::unique_ptr<ConnRequest>> requests;
  std::unordered_map<uint64_t, MemRange> regions;
  uint64_t next_key = 1;
  uint32_t next_serial = 1;
  // Shared receive queue: receives for every connection, and messages that found it
  // empty, held and delivered when a buffer is posted (as rnr_retry 7 retries forever).
  bool shared = false;
  Ring<RecvWr> shared_recvs{64};
  struct Parked {
    Conn* conn;
    std::vector<uint8_t> data;
  };
  Ring<Parked> parked{4};

  // Queue a completion (ready after the injected delay) or an event. Caller holds mu.
  void complete(Completion c);
  void notify(CmEvent e) {
    events_.push(std::move(e));
    has_events_.store(true, std::memory_order_release);
    ring();
  }
  // Blocks until a completion or an event is queued here, or timeout_ms passes.
  void wait(int timeout_ms);
  // Whether an event may be waiting: read without the lock, so that polling an
  // endpoint with none costs no lock and no event to build.
  bool may_have_events() const { return has_events_.load(std::memory_order_acquire); }
  // The poll that comes `polls` after this one. Caller holds mu.
  uint64_t tick_after(uint32_t polls) const { return tick_ + polls; }
  // Moves up to max ready completions into out. Takes mu.
  int take_completions(Completion* out, int max);
  // Moves the next event into out. Takes mu.
  bool take_event(CmEvent& out);
  // Fails every posted receive of c with a flush error and marks it broken. Caller holds mu.
  void break_locked(Conn* c, fabric::Failure why, const char* text);
  // Whether nothing queued here names c (a completion or an event). Caller holds mu.
  bool quiet_locked(const Conn* c) const {
    return !cq_.any([c](const Completion& e) { return e.conn == c; }) &&
           !events_.any([c](const CmEvent& e) { return e.user == c->user; });
  }

 private:
  // Wakes a wait() if one sleeps: costs the producer one load when none does. The
  // sleeper announces itself before it looks at the queues under mu, and the producer
  // queues under mu before it looks, so one of them always sees the other.
  void ring() {
    if (sleeping_.load(std::memory_order_seq_cst)) [[unlikely]]
      wake();
  }
  void wake();

  Ring<Completion> cq_{256};
  Ring<CmEvent> events_{16};
  std::atomic<bool> has_events_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<uint32_t> doorbell_{0};  // a futex word, bumped by wake()
  uint64_t tick_ = 0;
};

// The process-wide registry of endpoints and the lock that orders connection setup and
// teardown (taken before any endpoint's mutex, never after).
struct World {
  std::mutex mu;
  std::unordered_map<uint32_t, std::weak_ptr<EpState>> endpoints;
  uint32_t next_id = 1;
  static World& get();
};

}  // namespace rdmx::loopback
