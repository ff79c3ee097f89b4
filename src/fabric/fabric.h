// The backend interface: what the engine needs from a fabric, and nothing else.
//
// A backend is a concrete class F satisfying the Fabric concept below. The engine is a
// template over F, so the data path (post_recv, send, read, progress) is resolved at
// compile time: no virtual call per message. Connection management and completions
// flow back through a Sink, the engine itself, whose handlers F calls from progress().
//
// Backends live in one folder each: fabric/loopback/, fabric/verbs/, fabric/ofi/.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/settings.h"

namespace rdmx::fabric {

// Attributes of one established connection, as negotiated by both sides.
// The eager limit and mid-size limit (RDMX_EAGER_LIMIT, RDMX_MIDSIZE_LIMIT) where a fabric
// suggests none of its own: the crossover measured on loopback (docs/performance.md), and
// no mid-size messages. A fabric may suggest its own per connection, with
// eager_limit(conn), midsize_limit(conn) and the largest it would, max_eager_limit().
inline constexpr uint64_t kDefaultEagerLimit = 8192;
// The credit window (RDMX_CREDITS: receive buffers per connection) where a fabric
// suggests none; a fabric may suggest a smaller one per connection with
// credit_window(conn). What is sized before any connection (receive queues, the shared
// receive pool) takes the largest window a connection may get.
inline constexpr uint32_t kDefaultCredits = 64;
inline uint32_t max_credits(const Settings& s) {
  return s.credits >= 0 ? uint32_t(s.credits) : kDefaultCredits;
}
// A rank's first kRoomyConns connections get a fabric's roomy shape (deep queues, more
// buffers); later ones, of a rank that talks to many peers, a lean one, whose memory
// per peer is what a large job pays for each (docs/scale.md). The first peers a rank
// talks to are, in most programs, its busiest.
inline constexpr size_t kRoomyConns = 8;
// The largest message a fabric that carries small messages in its own queue entries
// hands over without a receive buffer (Sink::on_recv_unbuffered): shared memory's
// largest inline arrival (shm_layout.h), which the loopback fabric mirrors for the tests.
inline constexpr uint32_t kUnbufferedMax = 164;
// The bytes per rendezvous READ (RDMX_RNDV_CHUNK) where a fabric suggests none, with as
// many in flight as negotiated. A fabric may suggest its own per connection, with
// rndv_chunk(conn), a cap on the READs in flight, with max_reads(conn), and smaller
// pieces for a message that has the connection's READs to itself, with
// lone_rndv_chunk(conn).
inline constexpr uint64_t kDefaultRndvChunk = 1 << 20;
// What a fabric suggests on a software RDMA device (rxe, siw; topology/software_device.h):
// such a device resends a whole READ response after a lost packet, so its bursts stay
// within what a path's queues hold (docs/performance.md).
inline constexpr uint64_t kSoftwareDeviceRndvChunk = 64 * 1024;
inline constexpr uint32_t kSoftwareDeviceMaxReads = 4;

struct ConnAttrs {
  uint32_t initiator_depth = 1;      // RDMA READs this side may have outstanding
  uint32_t responder_resources = 1;  // RDMA READs the peer may have outstanding here
  uint32_t max_inline = 0;           // largest SEND payload that may be posted inline
  uint64_t max_msg_size = 1u << 30;  // largest single SEND or READ
  uint32_t max_sge = 1;              // scatter/gather entries per work request
  uint32_t max_send_wr = 256;        // send-queue slots (SENDs + READs in flight)
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 0;
  // The local ACK timeout's exponent: an unacknowledged packet is resent after
  // 4.096 us x 2^ack_timeout; 0: no timeout (or the fabric does not say).
  uint8_t ack_timeout = 0;
  uint64_t retransmit_ns() const {
    return ack_timeout && ack_timeout < 32 ? uint64_t(4096) << ack_timeout : 0;
  }
  bool flow_control = true;
  bool srq = false;  // receives come from a shared queue
  // This side may SEND from memory it did not register (no local descriptor, as libfabric
  // tcp): the data is read when the send goes, so it must stay until the send completes.
  bool sends_unregistered = false;
  // This side may hand over Short messages whose sequence number is wire::kUnnumbered:
  // the fabric keeps the connection's messages in order and left the number out.
  bool unnumbered_shorts = false;
  // Messages of at most this many bytes (header included) ride in the fabric's own queue
  // entries (Sink::on_recv_unbuffered), whose room the fabric tracks itself: they take
  // no credit and none is owed back for them. Such a send that finds the queue full gets
  // RDMX_ERR_AGAIN, and the fabric calls Sink::on_send_room once there is room again.
  // The same on both sides of a connection; 0: every message takes a credit.
  uint32_t uncredited_max = 0;
};

enum Access : uint32_t {
  kLocalWrite = 1,  // the fabric may write into it (receives, READ targets)
  kRemoteRead = 2,  // the peer may RDMA READ from it
};

// One receive buffer of a batch posted with post_recvs().
struct RecvBuf {
  void* addr;
  uint32_t len;
  uint64_t wr;
};

// One piece of a SEND. desc is the backend's registration descriptor for addr
// (null for inline sends, which need none).
struct Sge {
  const void* addr;
  uint32_t len;
  const void* desc;
};

// How a SEND is posted. kSendInline: the data is copied at post time (no registration,
// the buffers are free again on return). kSendSignaled: report the send's completion.
// An unsignaled send need not be reported (a backend may report it anyway, with the
// wr it was given); its failure always is. Sends on a connection complete in order, so
// the completion of a signaled send means every send posted before it has completed.
enum SendFlags : uint32_t {
  kSendInline = 1,
  kSendSignaled = 2,
};

// Why a work request or connection failed, for the engine's messages.
enum class Failure {
  Flushed,           // the connection went down with the request posted
  RetryExceeded,     // transport retries exhausted: the peer stopped answering
  RnrRetryExceeded,  // the peer had no receive posted
  RemoteAccess,      // the peer refused the READ (bad key or range)
  LocalLength,       // a received message was longer than the posted buffer
  Disconnected,      // the peer disconnected
  Unreachable,       // address or route resolution failed, or nobody listens
  DeviceRemoved,
  Other,
};
const char* failure_name(Failure f);

// Callbacks a backend makes from progress(). `user` is the engine's pointer for the
// connection, given at connect()/accept().
// Setting up a connection takes three steps, so that receives are posted before the
// peer can send: create_conn() (active: with the peer's address; passive: with the
// request), post_recvs(), then connect() or accept().
//
// A backend's connection request (F::ConnRequest) is handed to the passive side, which
// accept()s or reject()s it.
struct SinkArchetype {
  template <class Request>
  void on_connect_request(Request*, const uint8_t* pdata, size_t len);
  void on_established(void* user, const ConnAttrs&, const uint8_t* pdata, size_t len);
  void on_rejected(void* user, const uint8_t* pdata, size_t len, const char* why);
  void on_conn_error(void* user, Failure, const char* why);
  void on_recv(void* user, uint64_t wr, uint32_t len);
  // A message that took no posted receive buffer (a backend that carries small messages
  // in its own queue entries: shm): msg is valid for the call only. It took a credit
  // like any other message, unless the connection has ConnAttrs::uncredited_max.
  void on_recv_unbuffered(void* user, const uint8_t* msg, uint32_t len);
  void on_send_done(void* user, uint64_t wr);
  // A send refused with RDMX_ERR_AGAIN for want of room in the fabric's queue
  // (ConnAttrs::uncredited_max) may be posted again.
  void on_send_room(void* user);
  void on_read_done(void* user, uint64_t wr);
  void on_wr_error(void* user, uint64_t wr, Failure, const char* why);
};

// Releasing a connection (optional; a backend without it keeps every connection's
// resources until it is destroyed): bool settled(const Conn*) const is true once c has
// ended (disconnected from either side, or rejected) and progress() has reported
// everything it will for c: no callback names c's user again, and no memory posted on c
// is touched again. void release(Conn*) then frees what c holds (its queue pair, socket,
// segments, slots); the engine names c no more. Called only on a settled connection.
template <class F>
concept ReleasesConns = requires(F f, const F cf, typename F::Conn* c) {
  { cf.settled(c) } -> std::same_as<bool>;
  f.release(c);
};

// Registrations: a region covers [addr, addr + len) as it was mapped when registered.
// Optionally, bool pins_memory() const says whether that matters: true (the default when
// a backend says nothing) if the device holds the pages the range mapped then, so that a
// registration outliving an munmap reads or writes the wrong pages; false if reads go
// through the virtual addresses when they happen (the registration cache, engine/rcache.h,
// is then safe without being told of released memory).

// Blocking until there is work: wait(timeout_ms) returns once progress() may find a
// completion or a connection event, or after timeout_ms (0: do not block), whichever
// comes first; it may return early, and never blocks longer. A backend whose wakeup
// must be armed first (verbs' completion channel) arms it on one call and returns, so
// that the caller polls once more before the next call blocks. Returns RDMX_OK or an
// error.

template <class F>
concept Fabric = requires(F f, const F cf, typename F::Conn* c, typename F::Region r,
                          typename F::ConnRequest* req, SinkArchetype& sink, const Settings& s,
                          std::string& err, uint8_t* buf, const Sge* sge, const RecvBuf* rb,
                          void* p) {
  { F::kName } -> std::convertible_to<const char*>;
  { f.open(s, int32_t{}, err) } -> std::same_as<int>;
  { cf.address(buf, size_t{}) } -> std::same_as<size_t>;
  { cf.max_connect_data() } -> std::same_as<size_t>;
  { f.create_conn(buf, size_t{}, req, p, &c, err) } -> std::same_as<int>;
  { cf.qp_num(c) } -> std::same_as<uint32_t>;
  { f.connect(c, p, size_t{}, err) } -> std::same_as<int>;
  { f.accept(c, req, p, size_t{}, err) } -> std::same_as<int>;
  { f.reject(req, p, size_t{}) } -> std::same_as<void>;
  { f.disconnect(c) } -> std::same_as<void>;
  { f.reg(p, size_t{}, uint32_t{}, r, err) } -> std::same_as<int>;
  { f.dereg(r) } -> std::same_as<void>;
  { r.desc() } -> std::convertible_to<const void*>;
  { r.key() } -> std::same_as<uint64_t>;
  { r.remote_address(p) } -> std::same_as<uint64_t>;
  { f.post_recvs(c, rb, int{}, r) } -> std::same_as<int>;
  { f.send(c, sge, int{}, uint32_t{}, uint64_t{}) } -> std::same_as<int>;
  { f.read(c, p, uint64_t{}, r, uint64_t{}, uint64_t{}, uint64_t{}) } -> std::same_as<int>;
  { f.progress(sink) } -> std::same_as<int>;
  { f.wait(int{}) } -> std::same_as<int>;
};

}  // namespace rdmx::fabric
