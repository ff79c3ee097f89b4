// One connection to a peer (a Link) and everything kept per peer rank (a Peer).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "container/intrusive_list.h"
#include "container/ring.h"
#include "core/aligned_buffer.h"
#include "fabric/fabric.h"

namespace rdmx::engine {

template <class F>
struct Peer;

template <class F>
struct Link {
  enum class State : uint8_t { Connecting, Open, Closed };

  Peer<F>* peer = nullptr;
  typename F::Conn* conn = nullptr;
  State state = State::Connecting;
  bool active = false;       // this side connected; it speaks first
  bool may_send = false;     // passive side: only after the active side's first message
  bool credit_due = false;   // an explicit credit message should go out
  bool peer_shared = false;  // the peer receives from a shared queue: no credits to count
  fabric::ConnAttrs attrs{};
  // Open and may_send: the per-message fast paths apply. Eager payloads shorter than
  // inline_eager_below may go inline on isend's fast path (0 unless ready). Both are
  // set by open_fast_path() and cleared by close_link().
  bool ready = false;
  uint64_t inline_eager_below = 0;
  // The smaller of the two sides' eager limits, agreed at connect: the peer's receive
  // buffers hold no more, and this side's bounce buffers no more than its own.
  uint64_t eager_limit = 0;
  std::chrono::steady_clock::time_point started{};

  // Flow control: what the peer lets this side send, and what this side owes it.
  uint32_t credits = 0;
  uint32_t ctrl_credits = 0;
  uint32_t to_return = 0;
  uint32_t ctrl_to_return = 0;
  uint32_t credit_window = 0;     // regular buffers posted here for the peer
  uint32_t credit_threshold = 1;  // to_return that calls for an explicit credit message
  // Consumed receive buffers go back to the fabric in batches of repost_batch (one
  // post for all of them); a credit message's buffer sends the batch at once.
  static constexpr uint32_t kMaxRepostBatch = 8;
  uint32_t repost_batch = 1;
  uint32_t consumed = 0;       // buffers in consumed_bufs, not yet posted again
  uint32_t consumed_ctrl = 0;  // of which held credit messages
  fabric::RecvBuf consumed_bufs[kMaxRepostBatch];

  uint32_t send_seq = 0;
  uint32_t recv_seq = 0;
  uint32_t sq_used = 0;  // SENDs + READs not yet known to be completed
  // Inline sends are signaled one in signal_every: the others are known complete only
  // when a later signaled send completes.
  uint32_t unsignaled = 0;  // inline sends since the last signaled one
  uint32_t signal_every = 1;
  uint32_t reads_outstanding = 0;
  List read_queue;  // receives with READs still to post

  // Receive buffers posted for this connection, registered once.
  AlignedBuffer recv_mem;
  typename F::Region recv_region{};
  bool recv_registered = false;
  uint32_t recv_buf_size = 0;
  uint32_t recv_bufs = 0;
  uint8_t* recv_buf(uint64_t i) { return recv_mem.get() + i * recv_buf_size; }
};

// A control message waiting for a credit: FIN or a synchronous-send ack.
struct Control {
  uint8_t type;
  uint64_t sender_request;
};

template <class F>
struct Peer {
  int32_t rank = 0;
  std::vector<uint8_t> address;
  std::unique_ptr<Link<F>> link;  // the connection in use (or being made)
  List backlog;                   // sends not yet on the wire, in order
  Ring<Control> control{8};
  List inflight;  // requests to fail if this peer is lost
  // Something may be waiting to go: a control message, the backlog or a credit return.
  // Set by whatever queues such work; drain() clears it once all of it has gone.
  bool pending = false;
  bool failed = false;
  int failure_code = 0;
  std::string failure;
};

}  // namespace rdmx::engine
