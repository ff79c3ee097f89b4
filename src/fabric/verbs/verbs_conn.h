// One connection of the verbs backend (its rdma_cm id, the RC queue pair rdmx created
// for it, and the slots that map work completions back to the engine's ids), an
// incoming connection request, and the connection events handed to the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/fabric.h"
#include "fabric/verbs/verbs_resource.h"

namespace rdmx::verbs {

struct Conn;

// A posted work request: the work completion's wr_id points here.
struct Slot {
  enum Op : uint8_t { Recv, Send, Read, SharedRecv, Drain };
  Conn* conn = nullptr;  // null for receives posted to the shared queue
  uint64_t wr = 0;       // the engine's id
  Op op = Recv;
  uint32_t index = 0;

  // The work request's kind in words, for messages.
  static const char* name(Op op) {
    return op == Send || op == Drain ? "a SEND" : op == Read ? "an RDMA READ" : "a receive";
  }
};

// Fixed-size slots with a free list: posting takes one, the completion gives it back.
// Sized at creation; taking and giving never allocate.
class SlotPool {
 public:
  void init(uint32_t n, Conn* owner) {
    unsignaled_.conn = owner;
    unsignaled_.index = UINT32_MAX;
    drain_.conn = owner;
    drain_.op = Slot::Drain;
    drain_.index = UINT32_MAX;
    slots_.reset(new Slot[n]);
    free_.reserve(n);
    for (uint32_t i = n; i-- > 0;) {
      slots_[i].conn = owner;
      slots_[i].index = i;
      free_.push_back(i);
    }
    size_ = n;
  }
  Slot* take(Slot::Op op, uint64_t wr) {
    if (free_.empty()) return nullptr;
    Slot* s = &slots_[free_.back()];
    free_.pop_back();
    s->op = op;
    s->wr = wr;
    return s;
  }
  // The one slot every unsignaled send of the connection points at; never in use.
  Slot* unsignaled(uint64_t wr) {
    unsignaled_.op = Slot::Send;
    unsignaled_.wr = wr;
    return &unsignaled_;
  }
  // The signaled send posted behind the others once the queue pair is in error: its
  // flush comes back after every earlier send's, unsignaled ones included. In use until
  // it is back; never taken twice.
  Slot* drain() {
    if (draining_) return nullptr;
    draining_ = true;
    return &drain_;
  }
  void give(Slot* s) {
    if (s == &drain_)
      draining_ = false;
    else if (s != &unsignaled_)
      free_.push_back(s->index);
  }
  uint32_t in_use() const { return size_ - uint32_t(free_.size()) + (draining_ ? 1 : 0); }

 private:
  std::unique_ptr<Slot[]> slots_;
  Slot unsignaled_;
  Slot drain_;
  bool draining_ = false;
  std::vector<uint32_t> free_;
  uint32_t size_ = 0;
};

struct Conn {
  enum class State : uint8_t {
    Resolving,   // active: address and route resolution
    Connecting,  // active: request sent
    Open,        // established (passive: accepted, the engine may use it)
    Closed,      // the engine has been told it ended, or ended it: no more events
  };

  void* user = nullptr;
  bool active = false;
  State state = State::Resolving;
  bool route_ready = false;     // active: the route is resolved
  bool connect_wanted = false;  // active: connect() came before the route
  bool confirmed = false;       // the CM reached ESTABLISHED (passive: the RTU arrived)
  bool dreq_deferred = false;   // passive: closed before the RTU; disconnect once it comes
  bool remote_gone = false;     // the peer disconnected: report once the queue is drained
  bool wr_failed = false;       // a work request has failed on it
  bool cause_seen = false;      // an error other than a flush has been polled on it
  bool reaped = false;          // QP and id destroyed
  bool in_setup = false;        // counted in Fabric::in_setup_
  bool unsettled = false;       // counted in Fabric::unsettled_
  fabric::Failure gone_failure = fabric::Failure::Disconnected;
  std::string gone_why;

  CmId id;
  Qp qp;
  SlotPool slots;
  uint32_t cq_entries = 0;  // reserved in the device's completion queue
  uint32_t qpn = 0;         // the queue pair's number, kept after it is destroyed
  // Unsignaled sends posted since the last signaled send or READ: a flush of each, if
  // the queue pair fails, is a completion no slot counts (to_error drains them).
  uint32_t unsignaled_tail = 0;

  // Active side: the private data and the read depths to ask for.
  uint8_t pdata[56] = {};
  uint8_t pdata_len = 0;
  uint32_t offer_initiator = 0;
  uint32_t offer_responder = 0;

  fabric::ConnAttrs attrs{};
  std::string peer;    // the peer's address in words
  char why[200] = {};  // the words for the last failed work request
};

// A connection request waiting for the engine's accept or reject.
struct ConnRequest {
  CmId id;                           // until a Conn takes it
  Conn* conn = nullptr;              // set by create_conn
  bool answered = false;             // accepted or rejected
  uint32_t initiator_depth = 0;      // READs the requester lets this side issue
  uint32_t responder_resources = 0;  // READs the requester wants to issue
  uint32_t qp_num = 0;
  bool flow_control = false;
  bool srq = false;
  std::string peer;
};

// A connection event for the engine.
struct CmOutcome {
  enum Kind : uint8_t { ConnectRequest, Established, Rejected, ConnError };
  Kind kind = ConnError;
  void* user = nullptr;
  fabric::ConnAttrs attrs{};
  fabric::Failure failure = fabric::Failure::Other;
  std::string why;
  uint32_t pdata_len = 0;
  uint8_t pdata[196] = {};
};

}  // namespace rdmx::verbs
