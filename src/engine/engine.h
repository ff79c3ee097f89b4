// The messaging engine: MPI-style matching, the eager and rendezvous protocols and
// credit flow control, over any fabric F (fabric/fabric.h). One Engine is one rank's
// endpoint. It is single-threaded: the caller serialises calls.
//
// The member functions are defined by concept in engine_*.h and instantiated once per
// backend, above both engine and fabric (api/<backend>_context.cpp).
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "container/object_pool.h"
#include "container/payload_pool.h"
#include "core/aligned_buffer.h"
#include "core/idle_poll.h"
#include "core/settings.h"
#include "engine/link.h"
#include "engine/rcache.h"
#include "engine/request.h"
#include "engine/shared_pool.h"
#include "fabric/fabric.h"
#include "match/posted_queue.h"
#include "match/unexpected_queue.h"
#include "protocol/connect_msg.h"
#include "protocol/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx::engine {

template <fabric::Fabric F>
class Engine {
 public:
  using Req = Request<F>;
  using Unexp = Unexpected<F>;

  Engine() = default;
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Setup (engine_setup.h).
  int init(int32_t rank, int32_t size, uint64_t job_key, const Settings& s, std::string& err);
  size_t address(uint8_t* buf, size_t cap) const { return fabric_.address(buf, cap); }
  int add_peer(int32_t rank, const void* addr, size_t len);
  [[gnu::always_inline]] int progress();
  // The job secret (engine_connect.h): connections prove membership with it from now on;
  // requests and sends that waited for it go ahead.
  int set_job_secret(const uint8_t* secret, size_t len);
  // Sleeps until the fabric may have work for progress(), at most timeout_ms, and no
  // later than the next connect retry is due. While connections are being made or
  // upkeep is due, the next progress() does that work: it runs only every 64 calls,
  // which a sleeping caller makes seldom (a backoff of 10 ms took 400).
  int wait_event(int timeout_ms) {
    if (tick_due()) [[unlikely]] {
      upkeep_poll_.force();
      if (next_retry_ != std::chrono::steady_clock::time_point::max()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        next_retry_ - std::chrono::steady_clock::now())
                        .count();
        timeout_ms = int(std::clamp<int64_t>(left + 1, 0, timeout_ms));
      }
    }
    return fabric_.wait(timeout_ms);
  }
  void finalize();

  // Messaging (engine_send.h, engine_recv.h).
  // The per-message calls inline into their caller (the C API's one virtual call).
  [[gnu::always_inline]] int isend(int32_t dest, uint32_t cid, int32_t tag, const void* buf,
                                   uint64_t len, uint32_t flags, rdmx_completion_fn cb, void* user,
                                   Req** out);
  [[gnu::always_inline]] int irecv(int32_t source, uint32_t cid, int32_t tag, void* buf,
                                   uint64_t len, rdmx_completion_fn cb, void* user, Req** out);
  int iprobe(int32_t source, uint32_t cid, int32_t tag, int* found, rdmx_status_info_t* st);
  int improbe(int32_t source, uint32_t cid, int32_t tag, int* found, Unexp** msg,
              rdmx_status_info_t* st);
  // A 64-bit tag (cid in the high half) under an ignore mask (rdmx_irecv_tagged).
  int isend_tagged(int32_t dest, uint64_t tag, const void* buf, uint64_t len, uint32_t flags,
                   rdmx_completion_fn cb, void* user, Req** out) {
    auto [cid, t] = split_tag(tag);
    return send(dest, cid, t, buf, len, flags, cb, user, out);
  }
  int irecv_tagged(int32_t source, uint64_t tag, uint64_t ignore, void* buf, uint64_t len,
                   rdmx_completion_fn cb, void* user, Req** out);
  // msg null: a probe; else a matched probe that claims the message for imrecv.
  int probe_tagged(int32_t source, uint64_t tag, uint64_t ignore, int* found, Unexp** msg,
                   rdmx_status_info_t* st);
  int imrecv(Unexp* msg, void* buf, uint64_t len, rdmx_completion_fn cb, void* user, Req** out);
  int cancel(Req* r);
  [[gnu::always_inline]] void release(Req* r);

  const rdmx_stats_t& stats() const {
    stats_.requests_in_use = requests_.in_use();
    stats_.connections_live = live_links_;
    stats_.connections_held = graveyard_.size();
    for (const auto& p : peers_) stats_.connections_held += bool(p.link);
    stats_.receive_buffer_bytes = receive_bytes_;
    stats_.shared_receive_bytes = shared_.bytes();
    stats_.unexpected_bytes = unexpected_bytes_;
    if constexpr (requires { fabric_.fill_stats(stats_); }) fabric_.fill_stats(stats_);
    return stats_;
  }
  // Requests made from now on with a callback are recycled once it returns
  // (RDMX_RELEASE_AFTER_CALLBACK), or only by release() (RDMX_RELEASE_ON_FREE).
  int set_request_release(int rule);
  const std::string& last_error() const { return last_error_; }
  const Settings& settings() const { return settings_; }
  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  F& fabric() { return fabric_; }
  const F& fabric() const { return fabric_; }
  // What rdmx_add_peer gave for rank (empty if nothing), or null if rank is out of range.
  const std::vector<uint8_t>* peer_address(int32_t rank) const {
    return rank >= 0 && rank < size_ ? &peers_[size_t(rank)].address : nullptr;
  }
  // The fabric's connection to rank (made or being made), or null.
  const typename F::Conn* peer_conn(int32_t rank) const {
    if (rank < 0 || rank >= size_) return nullptr;
    const Link<F>* l = peers_[size_t(rank)].link.get();
    return l ? l->conn : nullptr;
  }

  // Fabric callbacks (engine_connect.h, engine_recv.h, engine_rndv.h, engine_failure.h,
  // engine_shared_receive.h).
  void on_connect_request(typename F::ConnRequest* req, const uint8_t* pdata, size_t len);
  void on_established(void* user, const fabric::ConnAttrs& attrs, const uint8_t* pdata, size_t len);
  void on_rejected(void* user, const uint8_t* pdata, size_t len, const char* why);
  void on_conn_error(void* user, fabric::Failure f, const char* why);
  [[gnu::always_inline]] void on_recv(void* user, uint64_t wr, uint32_t len);
  [[gnu::always_inline]] void on_recv_unbuffered(void* user, const uint8_t* msg, uint32_t len);
  [[gnu::always_inline]] void on_send_done(void* user, uint64_t wr);
  void on_send_room(void* user);
  void on_read_done(void* user, uint64_t wr);
  void on_wr_error(void* user, uint64_t wr, fabric::Failure f, const char* why);
  // The shared receive pool ran low (engine_shared_receive.h; verbs:
  // IBV_EVENT_SRQ_LIMIT_REACHED).
  void on_shared_receive_low();

 private:
  // Work request ids: the kind in the top byte, then an index or request id. A
  // connection's receive buffer is kind 0: its id is its index.
  enum WrKind : uint64_t {
    kWrRecv = 0,
    kWrInline = 2,
    kWrBounce = 3,
    kWrRead = 4,
    kWrShared = 5,  // a buffer of the shared receive queue
  };
  // A null buffer is fine for an empty message (tested as a branch: buffers are rarely
  // null).
  static bool null_with_length(const void* buf, uint64_t len) {
    if (__builtin_expect(buf != nullptr, 1)) return false;
    return len != 0;
  }
  static uint64_t wr_id(WrKind k, uint64_t v) { return uint64_t(k) << 56 | v; }
  static WrKind wr_kind(uint64_t wr) { return WrKind(wr >> 56); }
  static uint64_t wr_value(uint64_t wr) { return wr & ((uint64_t(1) << 56) - 1); }
  static constexpr uint32_t kCtrlCredits = 4;
  static constexpr uint64_t kMinSegment = 1024;       // no mid-size messages below this eager limit
  static constexpr uint32_t kMaxSignalInterval = 16;  // inline sends per signaled one
  static constexpr uint64_t kInPlaceMin = 2048;       // smallest payload sent in place

  // Connections (engine_connect.h).
  void connect_peer(Peer<F>& p);
  protocol::CmMessage offer(protocol::CmKind kind, Link<F>& l, const uint8_t* bound);
  bool proven(const protocol::CmMessage& m, const uint8_t* bound) const {
    return protocol::verify(m, mac_key_, bound);
  }
  void expire_secret_wait();
  void take_offer(Link<F>& l, const protocol::CmMessage& m);
  void agree_limits(Link<F>& l);
  bool setup_link(Link<F>& l, std::string& err);
  void retire(std::unique_ptr<Link<F>> l);
  void connect_later(Peer<F>& p, std::chrono::steady_clock::time_point at,
                     std::chrono::steady_clock::time_point started);
  void left_connecting(Link<F>& l);
  bool retry_refused(Link<F>& l, protocol::RejectReason reason);
  std::chrono::milliseconds backoff(uint32_t refusals);
  void check_connect_timeouts();

  // Releasing what ended connections hold (engine_release.h).
  static constexpr bool kReleasesConns = fabric::ReleasesConns<F>;
  void bury(std::unique_ptr<Link<F>> l);
  void release_buried();

  // The cap on live connections, and closing idle ones by agreement (engine_close.h).
  void note_live(Peer<F>& p);
  void note_gone(Link<F>& l);
  bool idle(const Link<F>& l) const;
  bool post_close_message(Link<F>& l, wire::Type t, uint64_t length);
  void enforce_cap();
  void propose_close(Link<F>& l);
  void close_overtaken(Link<F>& l, const uint8_t* b);
  void resume_open(Link<F>& l);
  void handle_close(Link<F>& l, const wire::Header& h);
  void close_agreed(Link<F>& l, bool disconnect);
  void check_closes();

  // Unexpected messages within RDMX_UNEXPECTED_LIMIT (engine_unexpected_bound.h).
  void hold_unexpected(Link<F>& l, uint64_t bytes);
  void drop_unexpected(uint64_t bytes);
  void ask_rendezvous(Link<F>& l);
  void stop_asking_rendezvous();
  void handle_rendezvous(Link<F>& l, const uint8_t* b, uint32_t len);

  // Shared receive pool (engine_shared_receive.h).
  static constexpr bool kHasSharedReceive = requires(F f, typename F::Region r) {
    f.enable_shared_receive();
    f.post_shared_recv(nullptr, uint32_t{}, r, uint64_t{});
  };
  // RDMX_SRQ=-1 turns the pool on in jobs of more than this many ranks: at 32 peers
  // per-connection buffers come to 18 MB over verbs and 120 MB of address space over
  // libfabric tcp, against a pool of 2 MB and at most 32 MiB (docs/scale.md).
  static constexpr int32_t kSharedReceiveRanks = 32;
  int setup_shared_receive(std::string& err);
  int post_shared(uint64_t index);
  void arm_shared_receive_limit();
  // Whether a link's receives come from the pool: with a pool, on every link the fabric
  // does not keep its own receives for (shared memory's, beside a network fabric).
  bool receives_shared(const Link<F>& l) const {
    if (!settings_.srq) return false;
    if constexpr (requires { fabric_.shared_receive(l.conn); })
      return fabric_.shared_receive(l.conn);
    return true;
  }
  uint8_t* recv_buffer(Link<F>& l, uint64_t wr) {
    uint64_t i = wr_value(wr);
    return wr_kind(wr) == kWrShared ? shared_.buffer(i) : l.recv_buf(i);
  }

  // A receive or bounce buffer for eager messages up to eager_limit bytes (and control
  // messages), in whole cache lines.
  static uint32_t buffer_size(uint64_t eager_limit) {
    uint64_t n = std::max<uint64_t>(sizeof(wire::Header) + sizeof(wire::ReqRef) + eager_limit,
                                    wire::kMaxControlBytes);
    return uint32_t((n + 63) & ~uint64_t(63));
  }
  uint64_t own_eager_limit(const Link<F>& l) const;
  uint32_t own_credit_window(const Link<F>& l) const;

  // Sending (engine_send.h).
  // A link is ready (Open and may send, link_state.h) until it closes; only then do the
  // per-message fast paths, or any send, apply.
  // (Such a send goes with the short header.)
  static uint64_t inline_eager_below(const Link<F>& l) {
    if (l.attrs.max_inline < wire::kShortBytes) return 0;
    uint64_t below = std::min<uint64_t>(l.attrs.max_inline - wire::kShortBytes, l.eager_limit) + 1;
    return l.peer_asks_rendezvous ? std::min(below, wire::kThrottledEager + 1) : below;
  }
  // A message of this many bytes (header included) takes no credit on l: the fabric
  // carries it in its own queue, whose room it tracks (ConnAttrs::uncredited_max).
  static bool uncredited(const Link<F>& l, uint64_t bytes) {
    return bytes <= l.attrs.uncredited_max;
  }
  // A credit message (a header alone) takes no credit on l.
  static bool credit_message_free(const Link<F>& l) { return uncredited(l, sizeof(wire::Header)); }
  // Something may go on l now (a message that needs a credit also needs one left: post()).
  bool can_send(const Link<F>& l) const {
    return l.state.ready() && (l.credits.available() > 0 || l.attrs.uncredited_max) &&
           l.sq.has_room();
  }
  [[gnu::always_inline]] int send(int32_t dest, uint32_t cid, int32_t tag, const void* buf,
                                  uint64_t len, uint32_t flags, rdmx_completion_fn cb, void* user,
                                  Req** out);
  [[gnu::noinline]] int isend_slow(Peer<F>& p, Req& r);
  [[gnu::noinline]] int register_send(Peer<F>& p, Req& r);
  [[gnu::cold, gnu::noinline]] int send_arg_error(int32_t dest, bool any_tag, const void* buf,
                                                  uint64_t len, uint32_t flags);
  [[gnu::always_inline]] bool transmit(Peer<F>& p, Req& r);
  [[gnu::always_inline]] bool post(Link<F>& l, wire::Header& h, const void* extra,
                                   uint32_t extra_len, const void* payload, uint64_t payload_len,
                                   bool ctrl, Req* owner = nullptr, bool completes = false);
  [[gnu::always_inline]] bool post_inline(Link<F>& l, wire::Header& h, const fabric::Sge* sge,
                                          int n, bool ctrl, bool uncredited);
  // post_inline of a short header and its payload (a fabric may send those without a
  // gather list: send_short).
  [[gnu::always_inline]] bool post_short(Link<F>& l, wire::Header& h, const void* payload,
                                         uint32_t len, bool uncredited);
  // The bookkeeping around one inline send, which send(flags, wr) posts.
  template <class Send>
  [[gnu::always_inline]] bool post_inline_by(Link<F>& l, wire::Header& h, bool ctrl,
                                             bool uncredited, Send send);
  [[gnu::noinline]] bool post_bounce(Link<F>& l, wire::Header& h, const void* extra,
                                     uint32_t extra_len, const void* payload, uint64_t payload_len,
                                     bool ctrl, bool uncredited, Req* owner, bool completes);
  // Whether r's payload goes from its own buffer on l rather than copied
  // (ConnAttrs::sends_unregistered): worth it from kInPlaceMin bytes, where the copy costs
  // more than waiting for the send's completion.
  static bool sends_in_place(const Link<F>& l, const Req& r) {
    return l.attrs.sends_unregistered && !r.sync && r.len >= kInPlaceMin;
  }
  void sent_in_place(uint32_t bounce);
  void forget_in_place(const Req& r);
  [[gnu::always_inline]] void posted(Link<F>& l, bool ctrl, bool uncredited);
  [[gnu::cold, gnu::noinline]] bool send_failed(Link<F>& l, int rc);
  // What a header says of the link at the moment it is posted: its sequence number and
  // the credits returned with it (posted() then counts them as paid).
  static void stamp(const Link<F>& l, wire::Header& h) {
    h.seq = l.send_seq;
    h.credits = uint16_t(l.credits.owed());
    h.ctrl_credits = uint8_t(l.credits.ctrl_owed());
  }
  // A header for a message of this rank (seq and credits are filled in when posted).
  wire::Header header(wire::Type t, uint32_t cid, int32_t tag, uint64_t len) const {
    wire::Header h{};
    h.length = len;
    h.context_id = cid;
    h.source = rank_;
    h.tag = tag;
    h.version_type = wire::Header::make_vt(t);
    return h;
  }
  // The header of an eager message without flags: only its first kShortBytes are sent.
  static wire::Header short_header(uint32_t cid, int32_t tag) {
    wire::Header h{};
    h.version_type = wire::Header::make_vt(wire::Type::Short);
    h.context_id = cid;
    h.tag = tag;
    return h;
  }
  // Sends what is waiting for p, if anything may be (the check is one flag: most calls
  // find nothing to do).
  void pump(Peer<F>& p) {
    if (p.pending && p.link) drain(p);
  }
  void drain(Peer<F>& p);
  bool flush_unsignaled(Link<F>& l);
  void queue_control(Peer<F>& p, wire::Type t, uint64_t sender_request);
  void send_to_self(Req& r);
  int take_bounce();

  // Receiving and matching (engine_recv.h).
  template <bool kTagged>
  [[gnu::always_inline]] int recv(int32_t source, uint32_t cid, int32_t tag, uint64_t ignore,
                                  void* buf, uint64_t len, rdmx_completion_fn cb, void* user,
                                  Req** out);
  int probe(const MatchKey& key, uint64_t ignore, int* found, Unexp** msg, rdmx_status_info_t* st);
  [[gnu::cold, gnu::noinline]] int recv_arg_error(int32_t source, const void* buf, uint64_t len);
  [[gnu::noinline]] void on_recv_other(Link<F>& l, uint64_t wr, uint32_t len);
  [[gnu::noinline]] void on_recv_unbuffered_other(Link<F>& l, const uint8_t* msg, uint32_t len);
  static bool takes_messages(const Link<F>& l);
  void owe_unbuffered(Link<F>& l, bool ctrl);
  [[gnu::always_inline]] void repost(Link<F>& l, uint8_t* buf, uint64_t wr, bool ctrl);
  [[gnu::noinline]] void repost_consumed(Link<F>& l);
  [[gnu::always_inline]] bool handle_message(Link<F>& l, const uint8_t* b, uint32_t len);
  [[gnu::noinline]] bool handle_any_message(Link<F>& l, const uint8_t* b, uint32_t len);
  [[gnu::cold, gnu::noinline]] void bad_message(Link<F>& l, const uint8_t* b, uint32_t len,
                                                uint32_t expected_seq);
  [[gnu::noinline]] bool handle_other(Link<F>& l, const uint8_t* b, uint32_t len);
  [[gnu::always_inline]] void handle_eager(Link<F>& l, const wire::Header& h, const uint8_t* b,
                                           uint32_t len, bool sync);
  [[gnu::always_inline]] void take_eager(Link<F>& l, uint32_t cid, int32_t tag,
                                         const uint8_t* payload, uint64_t len, bool sync,
                                         uint64_t sender_request);
  [[gnu::cold, gnu::noinline]] void bad_eager(Link<F>& l, uint64_t says, uint32_t len);
  [[gnu::noinline]] void unexpected_eager(Link<F>& l, uint32_t cid, int32_t tag,
                                          const uint8_t* payload, uint64_t len, bool sync,
                                          uint64_t sender_request);
  // A control message's fixed-size body, after its header: false, with the link failed
  // for a malformed `what`, unless exactly that many bytes arrived.
  template <class Body>
  bool read_body(Link<F>& l, const uint8_t* b, uint32_t len, Body& body, const char* what);
  void handle_rts(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len);
  void handle_done(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len);
  [[gnu::always_inline]] Req& new_request(typename Req::Kind kind, rdmx_completion_fn cb,
                                          void* user, void* buf, uint64_t len, int32_t peer,
                                          uint32_t cid, int32_t tag);
  [[gnu::always_inline]] Unexp& new_unexpected(uint64_t length, Link<F>* link);
  void consume(Req& r, Unexp& u);
  [[gnu::always_inline]] void deliver(Req& r, int32_t source, uint32_t cid, int32_t tag,
                                      const void* data, uint64_t len);
  [[gnu::always_inline]] void complete(Req& r);
  void fill_status(const Unexp& u, rdmx_status_info_t* st) const;

  // Mid-size messages in segments (engine_segment.h).
  static bool goes_in_segments(const Link<F>& l, const Req& r);
  uint64_t own_midsize_limit(const Link<F>& l) const;
  [[gnu::noinline]] bool transmit_segments(Peer<F>& p, Req& r);
  void handle_segment(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len);
  void start_segments(Link<F>& l, const wire::Header& h);
  void finish_segments(Link<F>& l);
  void drop_segments(Link<F>& l);
  [[gnu::cold, gnu::noinline]] void bad_segment(Link<F>& l, uint64_t length,
                                                const std::string& what);

  // Rendezvous (engine_rndv.h).
  void start_read(Req& r, Link<F>* l, int32_t source, uint32_t cid, int32_t tag, uint64_t msg_len,
                  const RemoteData& remote);
  void choose_reads(Link<F>& l) const;
  void schedule_reads(Link<F>& l);
  void finish_read(Req& r);
  // Rendezvous buffers through the registration cache (rcache.h).
  int register_buffer(Req& r, uint64_t len, uint32_t access, std::string& err);
  void unregister(Req& r) {
    if (!r.reg) return;
    rcache_.release(r.reg);
    r.reg = nullptr;
  }

  // Failures (engine_failure.h).
  void fail_link(Link<F>& l, int code, const std::string& why);
  void check_refusals();
  static constexpr auto kRefusalGrace = std::chrono::milliseconds(500);
  void fail_peer(Peer<F>& p, int code, const std::string& why);
  void fail_request(Req& r, int code);
  int error(int code, const std::string& what);

  int32_t rank_ = 0;
  int32_t size_ = 0;
  uint64_t job_key_ = 0;
  SipKey mac_key_{};       // what connections prove membership with (connect_msg.h)
  bool key_ready_ = true;  // false while RDMX_AUTH=secret waits for rdmx_set_job_secret
  std::chrono::steady_clock::time_point secret_wait_started_{};
  Settings settings_;
  uint64_t max_eager_limit_ = 0;  // the largest of any link's own (recv_buf_size_ holds it)
  uint32_t recv_buf_size_ = 0;
  // When progress does its upkeep while tick_due(): every 64 calls, or every call once
  // calls come a millisecond or more apart (oversubscribed ranks that yield their
  // processor), and at the next call after a wait or after a connect in flight ended
  // with others waiting for it.
  IdlePoll<64, false> upkeep_poll_;
  // Whether progress has work beyond the fabric's completions: connects in flight, and
  // upkeep (refused READs, proposed closes, links over the cap). One word, so that
  // progress tests both with one load.
  struct Tick {
    uint32_t connecting = 0;
    uint32_t upkeep = 0;  // updated wherever one of its causes changes (update_upkeep)
  } tick_;
  bool tick_due() const { return std::bit_cast<uint64_t>(tick_) != 0; }
  // This rank's own connects in flight (active links not yet established), at most
  // kMaxDialing: a first alltoall among thousands of ranks starts its connects in waves,
  // each holding its receive buffers only once it starts, and no listener sees more
  // than kMaxDialing requests from one rank at once. The rest wait (connect_later).
  static constexpr uint32_t kMaxDialing = 64;
  uint32_t dialing_ = 0;
  // The earliest retry_at of the peers to connect again (max: none due by time).
  std::chrono::steady_clock::time_point next_retry_ = std::chrono::steady_clock::time_point::max();
  uint64_t jitter_ = 0;         // state of the backoff's jitter (splitmix64)
  uint32_t failed_peers_ = 0;   // peers given up: receives from them fail at once
  uint32_t refused_links_ = 0;  // links whose peer refused a READ (engine_failure.h)
  // Live links (made or being made), the cap on them, and links this side proposed to
  // close (engine_close.h).
  uint32_t live_links_ = 0;
  uint32_t max_links_ = 0;
  uint32_t closing_ = 0;
  bool over_cap() const { return live_links_ > max_links_; }
  void update_upkeep() {
    tick_.upkeep = refused_links_ | closing_ | burying_ | uint32_t(over_cap());
  }
  uint32_t burying_ = 0;           // links in the graveyard to release (engine_release.h)
  uint64_t receive_bytes_ = 0;     // receive buffers held by links, live or not yet released
  uint64_t unexpected_bytes_ = 0;  // unexpected eager payloads held
  std::vector<int32_t> rendezvous_asked_;  // peers asked to send by rendezvous
  std::chrono::steady_clock::time_point next_cap_look_{};

  std::vector<Peer<F>> peers_;
  std::vector<std::unique_ptr<Link<F>>> graveyard_;  // closed links, kept for late completions
  PostedQueue posted_;
  UnexpectedQueue unexpected_;
  ObjectPool<Req> requests_;
  ObjectPool<Unexp> unexpected_pool_;
  PayloadPool payloads_;

  // The shared receive pool's buffers (RDMX_SRQ=1).
  SharedPool<F> shared_;

  // Bounce buffers for eager sends that are too large to go inline.
  AlignedBuffer bounce_mem_;
  Registration<F> bounce_reg_;
  std::vector<uint32_t> bounce_free_;
  std::vector<Peer<F>*> bounce_waiters_;
  // The send in place each bounce buffer's header belongs to, where its completion
  // completes a request (null: none, or the request failed meanwhile).
  std::vector<Req*> bounce_owner_;

  mutable rdmx_stats_t stats_{};  // requests_in_use is filled in when read
  bool release_after_cb_ = false;
  std::string last_error_;

  RegCache<F> rcache_;  // cleared by ~Engine, while the fabric is there

  F fabric_;  // last: destroyed first, before the memory it may still touch
};

}  // namespace rdmx::engine
