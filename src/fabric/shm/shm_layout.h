// What lies in a shared-memory segment, as both processes of a connection see it.
//
// Each side of a connection owns one segment, its inbound segment: the other side
// writes into it, the owner reads. It holds the owner's receive buffers, the queues the
// two sides pass work through, and a staging area for reads that cannot use
// cross-memory attach. Every queue has one producer and one consumer:
//
//   posted     owner -> peer   receive buffers the owner has posted
//   arrivals   peer  -> owner  a small SEND itself, a SEND that landed in a posted
//                              buffer, or a staged read piece
//   read_reqs  peer  -> owner  the peer asks for a piece of the owner's memory (copy reads)
//   splits     owner <-> peer  reads the owner shares with the peer (SplitRead), one each
//
// The offsets in the header are checked against the segment's size when it is attached:
// a segment is input from another process.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fabric/fabric.h"

namespace rdmx::shm {

constexpr uint32_t kSegmentMagic = 0x53584d52;  // "RMXS"
constexpr uint32_t kLayoutVersion = 6;
constexpr size_t kCacheLine = 64;

// A single-producer single-consumer queue's indices, each on its own cache line so that
// producer and consumer do not write the same line.
struct alignas(kCacheLine) QueueIndices {
  std::atomic<uint32_t> tail;  // written by the producer
  char pad0[kCacheLine - sizeof(std::atomic<uint32_t>)];
  std::atomic<uint32_t> head;  // written by the consumer
  char pad1[kCacheLine - sizeof(std::atomic<uint32_t>)];
};

// A receive buffer the owner posted. Like an arrival it carries its own sequence, so
// the peer polls the entry, not a shared index.
struct PostedRecv {
  std::atomic<uint32_t> seq;  // the producer's index + 1 once the entry is written
  uint32_t offset;            // of the buffer in the segment
  uint32_t len;
  uint32_t token;  // echoed in the arrival, checked against the owner's own table
};
static_assert(sizeof(PostedRecv) == 16);

// Arrivals come in 32-byte slots, two to a cache line, and the consumer polls the entry
// itself (seq says it is written). RecvShort is the engine's short message of up to 16
// bytes of payload in one slot, its header compacted (ArrivalShort), so that two such
// messages share a line. RecvInline carries any other message whole and takes no
// posted buffer: up to kFirstBytes (a short engine header and 8 bytes of payload) in
// one slot; up to kInlineMax in kMaxSlots, each slot after the first an ArrivalMore
// (shm_arrival.h writes and reads both kinds). Recv names the buffer it filled and
// takes two slots, a line of its own: two of them in one line cost more than they
// save, as the receiver reads the line while the sender writes its other half. An
// entry of more than one slot starts a line (a Pad entry fills the slot before it if
// need be). ReadPiece* names the staging slot; SplitRead the split entry in the
// sender's segment.
struct alignas(32) Arrival {
  enum Kind : uint8_t {
    Recv = 1,
    RecvInline = 2,
    ReadPiece = 3,
    ReadPieceFailed = 4,
    Pad = 5,
    RecvShort = 6,
    SplitRead = 7
  };
  struct BufRef {
    uint32_t len;
    uint32_t token;  // Recv: the posted buffer's token; ReadPiece*: the staging slot;
                     // SplitRead: the split entry
  };
  static constexpr uint32_t kFirstBytes = 24;
  static constexpr uint32_t kMoreBytes = 28;
  static constexpr uint32_t kMaxSlots = 6;
  static constexpr uint32_t kInlineMax = kFirstBytes + (kMaxSlots - 1) * kMoreBytes;
  static constexpr uint32_t kRecvSlots = 2;
  // Slots a message of len <= kInlineMax bytes takes inline.
  static uint32_t slots(uint32_t len) {
    return len <= kFirstBytes ? 1 : 1 + (len - kFirstBytes + kMoreBytes - 1) / kMoreBytes;
  }

  std::atomic<uint32_t> seq;  // the producer's slot index + 1 once the entry is written
  uint8_t kind;
  uint8_t reserved;
  uint16_t inline_len;  // RecvInline: the message's bytes
  union {
    uint8_t data[kFirstBytes];  // RecvInline: the message's first bytes
    BufRef buf;                 // every other kind
  };
};
static_assert(sizeof(Arrival) == 32);
static_assert(Arrival::kInlineMax == fabric::kUnbufferedMax,
              "fabric::kUnbufferedMax names this size");

// A RecvShort entry: an engine message of type Short without control credits. Its
// sequence number is left out (the receiver hands it over as wire::kUnnumbered: the
// queue keeps the order), and what the engine's 16-byte short header leaves then
// (type, credits, context and tag) fits beside the entry's own fields in 16 bytes, and
// the payload in the other 16.
struct alignas(32) ArrivalShort {
  static constexpr uint32_t kPayloadMax = 16;
  std::atomic<uint32_t> seq;  // as Arrival::seq
  uint8_t kind;               // RecvShort
  uint8_t len;                // payload bytes, at most kPayloadMax
  uint16_t credits;           // the header's
  uint32_t context_id;
  int32_t tag;
  uint8_t payload[kPayloadMax];
};
static_assert(sizeof(ArrivalShort) == sizeof(Arrival) &&
              offsetof(ArrivalShort, kind) == offsetof(Arrival, kind) &&
              offsetof(ArrivalShort, credits) == 6 && offsetof(ArrivalShort, context_id) == 8);

// A slot of an entry after its first. Its first word is where a first slot's seq would
// be: nothing but a sequence number or a mark is ever written there. A RecvInline entry
// writes as mark the slot's own index, which is never the seq the consumer will look for
// in it (index + 1 plus a multiple of the queue's capacity), so payload can never pass
// for a new entry; a Recv entry leaves its second slot as an earlier lap left it.
struct alignas(32) ArrivalMore {
  uint32_t mark;
  uint8_t data[Arrival::kMoreBytes];
};
static_assert(sizeof(ArrivalMore) == sizeof(Arrival));

struct ReadRequest {
  uint64_t raddr;  // in the owner's address space
  uint32_t len;
  uint32_t slot;  // where in the requester's staging area the piece goes
};

// A cross-memory READ of a large buffer, shared between the two processes
// (shm_split_read.cpp): the reader, who owns the segment, copies the front part by
// process_vm_readv while the peer whose memory it reads copies the back part by
// process_vm_writev straight into the reader's buffer. Whichever side claims the back
// part first copies it: the reader claims it once its front part is done, so the read
// never waits on a peer that does not come.
struct alignas(kCacheLine) SplitRead {
  std::atomic<uint32_t> back_claimed;  // by either side, once
  std::atomic<uint32_t> failed;        // the peer could not copy the back part
  std::atomic<uint32_t> finished;      // the peer will not touch this entry again
  std::atomic<uint64_t> done;          // bytes the peer has copied (or failed to)
  uint64_t raddr;                      // the buffer, in the peer's address space
  uint64_t local;                      // the destination, in the reader's
  uint64_t len;
  uint64_t front;  // bytes of the front part; the back part is the rest
};

// The segment's first bytes. Sizes are fixed when the owner creates it.
struct alignas(kCacheLine) SegmentHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t size;
  uint32_t posted_off, posted_cap;
  uint32_t arrivals_off, arrivals_cap;
  uint32_t read_reqs_off, read_reqs_cap;
  uint32_t buffers_off, buffers_len;  // the owner's receive buffers
  uint32_t staging_off, staging_slots, staging_slot_len;
  uint32_t splits_off, splits_cap;
  alignas(kCacheLine) std::atomic<uint32_t> sleeping;  // the owner waits: wake it by socket
  // Of these two only head is used: the entries carry their own sequence.
  alignas(kCacheLine) QueueIndices posted;
  QueueIndices arrivals;
  QueueIndices read_reqs;
};

// The capacities a segment is made with.
struct SegmentShape {
  uint32_t buffers_len;  // bytes of receive buffers
  uint32_t posted_cap;   // receive buffers that may be posted at once
  uint32_t staging_slots;
  uint32_t staging_slot_len;
  uint32_t splits;  // split reads in flight at once
};

inline uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Lays out a segment of this shape; returns its size. Fills h's offsets (h may be null).
inline size_t lay_out(const SegmentShape& s, SegmentHeader* h) {
  auto align = [](size_t v, size_t a) { return (v + a - 1) & ~(a - 1); };
  uint32_t posted_cap = pow2_at_least(s.posted_cap);
  // In slots: a message takes at most kMaxSlots and a pad, a read piece one.
  uint32_t arrivals_cap =
      pow2_at_least((Arrival::kMaxSlots + 1) * s.posted_cap + s.staging_slots + 1);
  uint32_t read_reqs_cap = pow2_at_least(s.staging_slots + 1);
  size_t off = align(sizeof(SegmentHeader), kCacheLine);
  size_t posted = off;
  off = align(off + posted_cap * sizeof(PostedRecv), kCacheLine);
  size_t arrivals = off;
  off = align(off + arrivals_cap * sizeof(Arrival), kCacheLine);
  size_t reqs = off;
  off = align(off + read_reqs_cap * sizeof(ReadRequest), kCacheLine);
  size_t splits = off;
  off = align(off + size_t(s.splits) * sizeof(SplitRead), 4096);
  size_t buffers = off;
  off = align(off + s.buffers_len, 4096);
  size_t staging = off;
  off = align(off + size_t(s.staging_slots) * s.staging_slot_len, 4096);
  if (h) {
    h->magic = kSegmentMagic;
    h->version = kLayoutVersion;
    h->size = off;
    h->posted_off = uint32_t(posted);
    h->posted_cap = posted_cap;
    h->arrivals_off = uint32_t(arrivals);
    h->arrivals_cap = arrivals_cap;
    h->read_reqs_off = uint32_t(reqs);
    h->read_reqs_cap = read_reqs_cap;
    h->buffers_off = uint32_t(buffers);
    h->buffers_len = s.buffers_len;
    h->staging_off = uint32_t(staging);
    h->staging_slots = s.staging_slots;
    h->staging_slot_len = s.staging_slot_len;
    h->splits_off = uint32_t(splits);
    h->splits_cap = s.splits;
  }
  return off;
}

// Whether a header read from another process describes a segment of `size` bytes whose
// parts all lie inside it (and do not wrap).
bool layout_valid(const SegmentHeader& h, size_t size);

}  // namespace rdmx::shm
