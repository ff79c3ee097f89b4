#include "fabric/shm/shm_fabric.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "core/prefetch.h"
#include "fabric/shm/shm_socket.h"

namespace rdmx::shm {
namespace {

// Copy reads go through this many staging slots per direction, each this large.
constexpr uint32_t kStagingSlots = 4;
constexpr uint32_t kStagingSlotLen = 64 * 1024;
// Split reads in flight per connection; a read beyond them is not split.
constexpr uint32_t kSplitEntries = 16;

}  // namespace

bool layout_valid(const SegmentHeader& h, size_t size) {
  auto inside = [size](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  auto pow2 = [](uint32_t v) { return v && !(v & (v - 1)); };
  return h.magic == kSegmentMagic && h.version == kLayoutVersion && h.size <= size &&
         pow2(h.posted_cap) && pow2(h.arrivals_cap) && h.arrivals_cap > Arrival::kMaxSlots &&
         pow2(h.read_reqs_cap) &&
         inside(h.posted_off, uint64_t(h.posted_cap) * sizeof(PostedRecv)) &&
         inside(h.arrivals_off, uint64_t(h.arrivals_cap) * sizeof(Arrival)) &&
         inside(h.read_reqs_off, uint64_t(h.read_reqs_cap) * sizeof(ReadRequest)) &&
         inside(h.buffers_off, h.buffers_len) &&
         inside(h.staging_off, uint64_t(h.staging_slots) * h.staging_slot_len) &&
         inside(h.splits_off, uint64_t(h.splits_cap) * sizeof(SplitRead)) &&
         h.splits_off % alignof(SplitRead) == 0 && h.posted_off % alignof(PostedRecv) == 0 &&
         h.arrivals_off % alignof(Arrival) == 0 && h.read_reqs_off % alignof(ReadRequest) == 0;
}

Fabric::~Fabric() {
  for (auto& c : conns_)
    if (c->sock >= 0) ::close(c->sock);
  for (auto& r : requests_)
    if (r->sock >= 0) ::close(r->sock);
  if (listener_ >= 0) ::close(listener_);
  if (epfd_ >= 0) ::close(epfd_);
}

int Fabric::open(const Settings& s, int32_t rank, std::string& err) {
  rank_ = rank;
  rd_atomic_ = uint32_t(s.max_rd_atomic);
  domain_ = std::hash<std::string>{}(s.shm_domain);
  cma_wanted_ = s.shm_read != "copy";
  split_min_ = s.shm_split_read;
  prefetch_ = prefetch_for_write_supported();
  if (s.shm_read == "cma") {
    std::string why;
    if (!cma_allowed(why)) {
      err = "RDMX_SHM_READ=cma, but " + why + "; RDMX_SHM_READ=auto falls back to copies";
      return RDMX_ERR_UNSUPPORTED;
    }
  }
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    err = std::string("epoll_create1 failed: ") + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  listener_ = listen_socket(name_, err);
  if (listener_ < 0) return RDMX_ERR_FABRIC;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listener_watch_;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, listener_, &ev) != 0) {
    err = std::string("epoll_ctl failed: ") + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  return RDMX_OK;
}

size_t Fabric::address(uint8_t* buf, size_t cap) const {
  Address a{};
  a.magic = Address::kMagic;
  a.version = kLayoutVersion;
  a.host = host_identity();
  a.domain = domain_;
  std::memcpy(a.name, name_.data(), std::min(name_.size(), sizeof a.name - 1));
  if (cap >= sizeof a) std::memcpy(buf, &a, sizeof a);
  return sizeof a;
}

bool decode_address(const uint8_t* addr, size_t len, Address& a, std::string& err) {
  if (!addr || len != sizeof a || (std::memcpy(&a, addr, sizeof a), a.magic != Address::kMagic)) {
    err = "not a shm address (" + std::to_string(len) + " bytes)";
    return false;
  }
  if (a.version != kLayoutVersion) {
    err = "a shm address of layout version " + std::to_string(a.version) + " (this side speaks " +
          std::to_string(kLayoutVersion) + ")";
    return false;
  }
  // The socket name is the peer's to give: it must end within its field (else it would
  // be cut short into another name) and not be empty (the abstract name "").
  size_t name_len = strnlen(a.name, sizeof a.name);
  if (name_len == 0 || name_len == sizeof a.name) {
    err = std::string("a shm address with ") +
          (name_len ? "a socket name not terminated within its " + std::to_string(sizeof a.name) +
                          " bytes"
                    : std::string("an empty socket name")) +
          " (1 to " + std::to_string(sizeof a.name - 1) + " characters accepted)";
    return false;
  }
  return true;
}

bool Fabric::reachable(const uint8_t* addr, size_t len) const {
  Address a;
  std::string ignored;
  return decode_address(addr, len, a, ignored) && local(a);
}

bool Fabric::local(const Address& a) const {
  return a.host == host_identity() && a.domain == domain_;
}

int Fabric::create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user,
                        Conn** out, std::string& err) {
  auto c = std::make_unique<Conn>();
  c->kind = Watch::Connection;
  c->user = user;
  c->serial = next_serial_++;
  c->active = req == nullptr;
  c->roomy = conns_.size() < fabric::kRoomyConns;
  if (c->active) {
    Address a;
    if (!decode_address(addr, addr_len, a, err)) return RDMX_ERR_INVALID;
    if (!local(a)) {
      err =
          "the peer is not on this host (or is another user's, in another network "
          "namespace or RDMX_SHM_DOMAIN): shared memory cannot reach it";
      return RDMX_ERR_UNREACHABLE;
    }
    size_t name_len = strnlen(a.name, sizeof a.name);
    c->peer_name.assign(a.name, name_len);
  } else {
    // The request's socket and segment become the connection's.
    c->sock = std::exchange(req->sock, -1);
    c->pid = req->pid;
    c->out = std::move(req->peer_segment);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = static_cast<Watch*>(c.get());
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->sock, &ev);
  }
  *out = c.get();
  conns_.push_back(std::move(c));
  return RDMX_OK;
}

int Fabric::recv_memory(Conn* c, uint32_t count, uint32_t buf_size, uint8_t** out,
                        std::string& err) {
  SegmentShape shape{count * buf_size, count, kStagingSlots, kStagingSlotLen, kSplitEntries};
  if (uint64_t(count) * buf_size > (uint64_t(1) << 31)) {
    err = "receive buffers of " + std::to_string(uint64_t(count) * buf_size) +
          " bytes per connection exceed the shared-memory fabric's 2 GiB";
    return RDMX_ERR_INVALID;
  }
  // The staging area for copy reads is reserved only if this connection ever reads by
  // copies (Fabric::reserve_staging): across memory, the usual way, it is never used.
  SegmentHeader laid{};
  size_t bytes = lay_out(shape, &laid);
  if (int rc = c->in.create(bytes, laid.staging_off, err)) return rc;
  c->in_h = new (c->in.base()) SegmentHeader{};
  lay_out(shape, c->in_h);
  c->tokens.assign(c->in_h->posted_cap, PostedBuf{0, nullptr, 0, false});
  c->free_tokens.clear();
  for (uint32_t i = c->in_h->posted_cap; i-- > 0;) c->free_tokens.push_back(i);
  c->slot_read.assign(kStagingSlots, -1);
  c->slot_offset.assign(kStagingSlots, 0);
  for (uint32_t i = kStagingSlots; i-- > 0;) c->free_slots.push_back(i);
  auto* h = c->in_h;
  c->splits = reinterpret_cast<SplitRead*>(c->in.base() + h->splits_off);
  for (uint32_t i = 0; i < h->splits_cap; ++i) new (&c->splits[i]) SplitRead{};
  c->split_state.assign(h->splits_cap, SplitState{});
  c->posted.bind(&h->posted, reinterpret_cast<PostedRecv*>(c->in.base() + h->posted_off),
                 h->posted_cap);
  c->arrivals.bind(&h->arrivals, reinterpret_cast<Arrival*>(c->in.base() + h->arrivals_off),
                   h->arrivals_cap);
  c->read_reqs.bind(&h->read_reqs, reinterpret_cast<ReadRequest*>(c->in.base() + h->read_reqs_off),
                    h->read_reqs_cap);
  *out = c->in.base() + h->buffers_off;
  return RDMX_OK;
}

// Maps the peer's inbound segment (fd) as this side's outbound one, checks it, and
// decides how READs go: across memory if the kernel lets this process read the peer's
// (probed on the peer's own segment address), else by copies.
bool Fabric::attach_peer(Conn* c, int fd, uint64_t probe_addr, std::string& err) {
  if (fd >= 0 && c->out.attach(fd, sizeof(SegmentHeader), err)) return false;
  if (!c->out.base()) {
    err = "the peer sent no shared-memory segment";
    return false;
  }
  c->out_h = reinterpret_cast<SegmentHeader*>(c->out.base());
  std::memcpy(static_cast<void*>(&c->out_layout), c->out_h, offsetof(SegmentHeader, sleeping));
  if (!layout_valid(c->out_layout, c->out.size())) {
    err = "the peer's shared-memory segment has a layout this rdmx does not know";
    return false;
  }
  const SegmentHeader& o = c->out_layout;
  // Mapped now rather than a page fault at a time as messages first touch them (it
  // made an alltoall of 32 ranks 3-4x slower than vader's); the peer reserved them.
  c->out.populate(0, o.staging_off);
  uint8_t* b = c->out.base();
  c->peer_posted.bind(&c->out_h->posted, reinterpret_cast<PostedRecv*>(b + o.posted_off),
                      o.posted_cap);
  c->peer_arrivals.bind(&c->out_h->arrivals, reinterpret_cast<Arrival*>(b + o.arrivals_off),
                        o.arrivals_cap);
  c->peer_reads.bind(&c->out_h->read_reqs, reinterpret_cast<ReadRequest*>(b + o.read_reqs_off),
                     o.read_reqs_cap);
  c->peer_splits = reinterpret_cast<SplitRead*>(b + o.splits_off);
  c->peer_splits_cap = o.splits_cap;
  c->cma = false;
  if (cma_wanted_ && c->pid > 0) {
    uint32_t magic = 0;
    iovec l{&magic, sizeof magic}, r{reinterpret_cast<void*>(probe_addr), sizeof magic};
    c->cma = ::process_vm_readv(c->pid, &l, 1, &r, 1, 0) == ssize_t(sizeof magic) &&
             magic == kSegmentMagic;
  }
  return true;
}

void Fabric::bind_queues(Conn* c) {
  c->state = Conn::State::Established;
  live_.push_back(c);
}

int Fabric::reg(void* addr, size_t len, uint32_t access, Region& out, std::string&) {
  out.key_ = next_key_++;
  out.addr_ = reinterpret_cast<uintptr_t>(addr);
  if (access & fabric::kRemoteRead) regions_.insert({out.addr_, {len, out.key_}});
  return RDMX_OK;
}

void Fabric::dereg(Region& r) {
  auto [b, e] = regions_.equal_range(r.addr_);
  for (auto it = b; it != e; ++it)
    if (it->second.key == r.key_) {
      regions_.erase(it);
      break;
    }
  r.key_ = 0;
}

int Fabric::post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region&) {
  if (!c->in_h) return RDMX_ERR_INVALID;  // recv_memory() makes the buffers
  for (int i = 0; i < n; ++i) {
    const fabric::RecvBuf& b = bufs[i];
    auto* base = c->in.base();
    if (!c->in.contains(b.addr, b.len) ||
        static_cast<uint8_t*>(b.addr) < base + c->in_h->buffers_off)
      return RDMX_ERR_INVALID;
    if (c->state == Conn::State::Broken) continue;  // the connection's buffers are gone
    if (c->free_tokens.empty() || c->posted.full()) return RDMX_ERR_NO_MEMORY;
    uint32_t t = c->free_tokens.back();
    c->free_tokens.pop_back();
    c->tokens[t] = {b.wr, static_cast<uint8_t*>(b.addr), b.len, true};
    PostedRecv& e = c->posted.next();
    e.offset = uint32_t(static_cast<uint8_t*>(b.addr) - base);
    e.len = b.len;
    e.token = t;
    c->posted.commit(e);  // the peer polls for these only when it sends
  }
  return RDMX_OK;
}

void Fabric::take_other(Conn* c, const Arrival* a) {
  if (a->kind == Arrival::Pad) {
    c->arrivals.pop();
    return;
  }
  if (a->kind == Arrival::SplitRead) {
    uint32_t entry = a->buf.token;
    c->arrivals.pop();
    serve_split(c, entry);
    return;
  }
  Arrival copy;
  __builtin_memcpy(static_cast<void*>(&copy), a, sizeof copy);
  c->arrivals.pop();
  bad_arrival(c, copy);
}

// Any other small message (not a short header and its payload): gathered, then
// written to the entry's slots.
void Fabric::write_inline(Conn* c, Arrival& a, const fabric::Sge* sge, int n, uint32_t total) {
  uint8_t msg[Arrival::kInlineMax] = {};
  uint32_t off = 0;
  for (int i = 0; i < n; ++i) {
    std::memcpy(msg + off, sge[i].addr, sge[i].len);
    off += sge[i].len;
  }
  std::memcpy(a.data, msg, Arrival::kFirstBytes);
  if (total > Arrival::kFirstBytes)
    write_rest(c->peer_arrivals, msg + Arrival::kFirstBytes, total - Arrival::kFirstBytes);
}

int Fabric::send_error(Conn* c, fabric::Failure f, uint64_t wr, const char* why) {
  if (!c->established()) f = fabric::Failure::Flushed;
  complete(Completion::WrError, f, wr, c->user);
  if (f != fabric::Failure::Flushed) break_conn(c, f, why);
  return RDMX_OK;
}

int Fabric::queue_full(Conn* c, uint32_t slots) {
  if (!c->room_wanted) ++waiting_room_;
  c->room_wanted = slots;
  return RDMX_ERR_AGAIN;
}

void Fabric::break_conn(Conn* c, fabric::Failure why, const std::string& text) {
  if (c->state == Conn::State::Broken) return;
  c->state = Conn::State::Broken;
  std::erase(live_, c);
  std::erase(ends_, c);
  fail_copy_reads(c, fabric::Failure::Flushed);
  fail_splits(c, fabric::Failure::Flushed);
  if (c->sock >= 0) {
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->sock, nullptr);
    ::shutdown(c->sock, SHUT_RDWR);  // the peer sees the end
  }
  CmEvent e;
  e.kind = CmEvent::ConnError;
  e.failure = why;
  e.user = c->user;
  e.text = text;
  event(std::move(e));
}

void Fabric::disconnect(Conn* c) {
  break_conn(c, fabric::Failure::Disconnected, "disconnected locally");
}

void Fabric::release(Conn* c) {
  if (c->sock >= 0) ::close(c->sock);
  std::erase_if(conns_, [c](auto& p) { return p.get() == c; });
}

int Fabric::wait(int timeout_ms) {
  if (timeout_ms <= 0 || !cq_.empty() || !events_.empty()) return RDMX_OK;
  for (Conn* c : live_) c->in_h->sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto idle = [this] {
    for (Conn* c : live_)
      if (!c->arrivals.empty() || !c->read_reqs.empty() || c->splits_open ||
          (c->room_wanted && !c->peer_arrivals.full(c->room_wanted)))
        return false;
    return true;
  };
  // Senders look at `sleeping` without a barrier after their entry (wake_peer): one
  // that looked just before the flag was seen may not wake this side, but its entry is
  // visible by the end of the first, short sleep, when the queues are looked at again.
  // A side waiting for room in a peer's queue (queue_full) is not woken when the peer
  // takes from it: it looks again after every short sleep.
  for (int slept = 0; slept < timeout_ms && idle();) {
    int slice =
        slept == 0 || waiting_room_ ? std::min(timeout_ms - slept, kRecheckMs) : timeout_ms - slept;
    epoll_event evs[1];
    if (::epoll_wait(epfd_, evs, 1, slice) > 0) {
      sockets_due_ = true;
      break;
    }
    slept += slice;
  }
  for (Conn* c : live_) c->in_h->sleeping.store(0, std::memory_order_relaxed);
  return RDMX_OK;
}

}  // namespace rdmx::shm
