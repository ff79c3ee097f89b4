// A send or receive in flight, and the record of a message that arrived unexpected.
#pragma once

#include <cstdint>

#include "container/object_pool.h"
#include "container/payload_pool.h"
#include "engine/rcache.h"
#include "match/posted_queue.h"
#include "match/unexpected_queue.h"
#include "rdmx/rdmx.h"

namespace rdmx::engine {

template <class F>
struct Link;

// Where a rendezvous message can be read from.
struct RemoteData {
  uint64_t address = 0;
  uint64_t key = 0;
  uint64_t sender_request = 0;
};

// What every request has, whatever the fabric: this is what rdmx_request_t points to.
struct RequestBase : PostedEntry {
  enum class Kind : uint8_t { Send, Recv };
  enum class State : uint8_t {
    Idle,
    Backlog,     // send: waiting for the connection, credits or a bounce buffer
    Posted,      // recv: in the posted queue
    Reading,     // recv: RDMA READs of a rendezvous message
    Assembling,  // recv: segments of a mid-size message arriving
    WaitFin,     // send: rendezvous RTS sent, waiting for the receiver's FIN
    WaitAck,     // send: synchronous eager message sent, waiting for the match ack
    WaitSent,    // send: sent from its own buffer, waiting for the fabric to finish with it
    Done,
  };

  Kind kind = Kind::Send;
  State state = State::Idle;
  bool sync = false;
  bool freed = false;             // the user let go; recycle on completion
  bool release_after_cb = false;  // recycle once the callback returns (rdmx_set_request_release)
  rdmx_completion_fn cb = nullptr;
  void* user = nullptr;
  rdmx_status_info_t status{};

  void* buf = nullptr;
  uint64_t len = 0;
  int32_t peer = 0;  // send: destination; recv: the source once matched
  uint32_t cid = 0;
  int32_t tag = 0;

  ListNode queue_node;  // a peer's backlog, or a link's read queue
  ListNode peer_node;   // sends and reads in flight, failed if the peer is lost

  uint64_t sent = 0;  // send: bytes of a mid-size message already in segments

  // Rendezvous.
  RemoteData remote{};
  uint64_t read_len = 0;     // bytes to read (the message, cut to the buffer)
  uint64_t read_chunk = 0;   // bytes per READ (the link's, chosen at its first READ)
  uint64_t read_posted = 0;  // bytes covered by posted READs
  uint32_t reads_in_flight = 0;

  rdmx_request_t* handle() { return reinterpret_cast<rdmx_request_t*>(this); }
  static RequestBase* from(rdmx_request_t* h) { return reinterpret_cast<RequestBase*>(h); }
};

template <class F>
struct Request : RequestBase, PoolLinks<Request<F>> {
  // Rendezvous: the registration held (never while the request is pooled).
  typename RegCache<F>::Entry* reg = nullptr;
  Link<F>* link = nullptr;  // recv: the link being read from
};

// A message that arrived before its receive was posted.
template <class F>
struct Unexpected : UnexpectedEntry, PoolLinks<Unexpected<F>> {
  bool rendezvous = false;
  bool sync = false;
  bool claimed = false;  // by improbe: out of the queue, waiting for imrecv
  uint64_t length = 0;
  PayloadPool::Buffer payload{};
  RemoteData remote{};              // rendezvous, or the sync-ack target
  Link<F>* link = nullptr;          // rendezvous: where to read from
  Request<F>* self_send = nullptr;  // a send to this rank, read in place when matched
};

}  // namespace rdmx::engine
