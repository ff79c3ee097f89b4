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
#include "engine/credits.h"
#include "engine/link_state.h"
#include "engine/read_pacer.h"
#include "engine/registration.h"
#include "engine/send_slots.h"
#include "fabric/fabric.h"
#include "protocol/connect_msg.h"

namespace rdmx::engine {

template <class F>
struct Peer;

template <class F>
struct Request;
template <class F>
struct Unexpected;

// A mid-size message whose segments are arriving: into the receive it matched, or into
// an unexpected record that joins the unexpected queue once it is whole. A link carries
// one at a time: a sender sends a message's segments back to back.
template <class F>
struct Reassembly {
  Request<F>* recv = nullptr;
  Unexpected<F>* unexp = nullptr;
  uint64_t total = 0;    // the message's length
  uint64_t arrived = 0;  // bytes received so far
  uint32_t cid = 0;
  int32_t tag = 0;
  bool active() const { return total != 0; }  // a mid-size message is never empty
};

template <class F>
struct Link {
  Peer<F>* peer = nullptr;
  typename F::Conn* conn = nullptr;
  LinkState state;
  bool active = false;  // this side connected; it speaks first
  fabric::ConnAttrs attrs{};
  // The smaller of the two sides' eager limits, agreed from the peer's offer: the peer's
  // receive buffers hold no more, and this side's bounce buffers no more than its own.
  uint64_t eager_limit = 0;
  uint64_t own_eager_limit = 0;   // this side's, which sized its receive buffers
  uint64_t peer_eager_limit = 0;  // the peer's, from its connect or accept message
  // Messages above eager_limit and up to this go in segments (engine_segment.h): the
  // smaller of the two sides' limits, 0 when either sends none.
  uint64_t midsize_limit = 0;
  uint64_t peer_midsize_limit = 0;  // the peer's own, from its connect or accept message
  Reassembly<F> reassembly;         // the mid-size message arriving on this link, if any
  std::chrono::steady_clock::time_point started{};
  // Closing by agreement (engine_close.h): in the count of live links; the messages
  // counted at the last look for idle links and how many looks found no new one; when
  // this side proposed or asked for a close, and when its last proposal failed (only a
  // link's active side proposes).
  bool live = false;
  bool closed_by_agreement = false;
  bool buried = false;  // released once its connection settles (engine_release.h)
  uint64_t activity = 0;
  uint32_t quiet_looks = 0;
  std::chrono::steady_clock::time_point close_asked{};
  std::chrono::steady_clock::time_point close_failed{};
  uint8_t request_nonce[protocol::kNonceBytes] = {};  // active side: what the accept must cover

  Credits credits;
  uint32_t send_seq = 0;
  uint32_t recv_seq = 0;
  SendSlots sq;
  uint32_t reads_outstanding = 0;
  // This side's READs (engine_rndv.h): bytes per READ, and how many in flight (at most
  // the negotiated initiator depth, fewer while READs are retransmitted); a message that
  // has the link's READs to itself when it starts is read in lone_read_chunk pieces.
  uint64_t read_chunk = 0;
  uint64_t lone_read_chunk = 0;
  ReadPacer read_pacer;
  List read_queue;  // receives with READs still to post
  // The peer refused a READ (engine_failure.h): failed as a protocol error unless the
  // connection turns out, within a grace, to have gone with the peer.
  bool refused = false;
  std::chrono::steady_clock::time_point refused_at{};
  std::string refusal;
  // Unexpected messages over the receiver's bound (engine_unexpected_bound.h): the peer
  // asked this side to send by rendezvous; this side asked the peer.
  bool peer_asks_rendezvous = false;
  bool asked_peer_rendezvous = false;

  // Receive buffers posted for this connection, registered once: in recv_mem, or where
  // the fabric placed them (a shared-memory segment the peer writes into).
  AlignedBuffer recv_mem;
  uint8_t* recv_base = nullptr;
  Registration<F> recv_reg;
  uint32_t recv_buf_size = 0;
  uint32_t recv_bufs = 0;
  uint8_t* recv_buf(uint64_t i) { return recv_base + i * recv_buf_size; }
  uint64_t receive_bytes() const { return recv_base ? uint64_t(recv_bufs) * recv_buf_size : 0; }
};

// A control message waiting for a credit: FIN or a synchronous-send ack.
struct Control {
  uint8_t type;
  uint64_t sender_request;
};

// What a peer's connection set-up remembers between attempts: the connect requests it
// has proven (a replay is refused), and, while the peer had no job secret yet, when to
// ask again. Made at the peer's first connect request or retry.
struct ConnectHistory {
  std::vector<uint64_t> nonces_seen;  // connect requests proven to come from this rank
  // Connect again at retry_at (the peer had no secret yet, or no resources; a close was
  // agreed with a send waiting), the attempt's time limit counting from retry_started,
  // or, when dial_wait, from when it starts: it waits for one of this rank's connects in
  // flight to end (Engine::kMaxDialing).
  bool retry_pending = false;
  bool dial_wait = false;
  uint32_t refusals = 0;  // the peer's refusals for want of resources in a row
  std::chrono::steady_clock::time_point retry_at{}, retry_started{};
};

// One entry of the peer table, one per rank of the job. A peer this rank has not talked
// to costs its bytes here and nothing on the heap (docs/scale.md): the control ring
// allocates at its first message, the address is set by rdmx_add_peer, the rest comes
// with the first connection.
template <class F>
struct Peer {
  std::unique_ptr<Link<F>> link;  // the connection in use (or being made)
  List backlog;                   // sends not yet on the wire, in order
  List inflight;                  // requests to fail if this peer is lost
  Ring<Control> control{0};
  std::vector<uint8_t> address;
  std::unique_ptr<ConnectHistory> history;
  int32_t rank = 0;
  int32_t failure_code = 0;
  // Something may be waiting to go: a control message, the backlog or a credit return.
  // Set by whatever queues such work; drain() clears it once all of it has gone.
  bool pending = false;
  bool failed = false;
  bool awaiting_secret = false;  // a send waits to connect until the job secret is given
  bool was_closed = false;       // a connection with this peer was closed by agreement
  uint8_t close_epoch = 0;       // how many were (mod 256): connect_msg.h's epoch
  ConnectHistory& connect_history() {
    if (!history) history = std::make_unique<ConnectHistory>();
    return *history;
  }
};

}  // namespace rdmx::engine
