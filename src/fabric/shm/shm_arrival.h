// A small message's slots in the arrivals queue (shm_layout.h). A short message of up to
// 16 bytes of payload goes in one slot, its header compacted; any other small message's
// bytes past its first slot go to the slots after it, kMoreBytes each behind a mark, and
// come out of them whole. The fabric and the queue's tests write and read entries
// through these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/copy.h"
#include "fabric/shm/shm_layout.h"
#include "fabric/shm/shm_queue.h"
#include "protocol/wire.h"

namespace rdmx::shm {

// A RecvShort entry's bytes 4 to 16 are the engine's short header but its sequence
// number: its first word with the entry's kind and payload length in place of the
// message type and control credits (which must be Short and 0), then context and tag.
// The header's words are handled whole; rdmx runs between same-endian hosts.
inline constexpr uint16_t kShortVt = wire::Header::make_vt(wire::Type::Short);
static_assert(offsetof(wire::Header, credits) == 2 && offsetof(wire::Header, seq) == 4 &&
              offsetof(wire::Header, context_id) == 8);

// Whether a message of the engine's short header hdr (wire::kShortBytes) and len bytes
// of payload goes as a RecvShort entry: type Short and no control credits, one compare.
[[gnu::always_inline]] inline bool goes_short(const void* hdr, uint64_t len) {
  uint16_t w;
  __builtin_memcpy(&w, hdr, 2);
  return len <= ArrivalShort::kPayloadMax && w == kShortVt;
}

// Fills a RecvShort entry (but its seq) from such a header and its payload.
[[gnu::always_inline]] inline void write_short(ArrivalShort& e, const void* hdr,
                                               const void* payload, uint32_t len) {
  uint32_t w;
  __builtin_memcpy(&w, hdr, 4);
  w = (w & 0xffff0000u) | Arrival::RecvShort | len << 8;
  __builtin_memcpy(&e.kind, &w, 4);
  __builtin_memcpy(&e.context_id, static_cast<const uint8_t*>(hdr) + 8, 8);
  copy_upto16(e.payload, payload, len);
}

// The message of a RecvShort entry (still in the queue, its length checked): the short
// header, its sequence number wire::kUnnumbered (the queue keeps the order), and the
// payload slot into msg (wire::kShortBytes + kPayloadMax bytes). Returns the message's
// length.
[[gnu::always_inline]] inline uint32_t read_short(const ArrivalShort& e, uint8_t* msg) {
  uint32_t w;
  __builtin_memcpy(&w, &e.kind, 4);
  uint32_t len = (w >> 8) & 0xff;
  uint64_t lo = uint64_t(wire::kUnnumbered) << 32 | (w & 0xffff0000u) | kShortVt;
  __builtin_memcpy(msg, &lo, 8);
  __builtin_memcpy(msg + 8, &e.context_id, 8);
  __builtin_memcpy(msg + wire::kShortBytes, e.payload, ArrivalShort::kPayloadMax);
  return wire::kShortBytes + len;
}

// Writes len (at least 1) bytes from p to the slots after the first of the entry being
// written, marking each with its own index (ArrivalMore). Reads no byte past p + len: p
// may be the end of the caller's buffer.
[[gnu::always_inline]] inline void write_rest(SeqProducer<Arrival>& q, const uint8_t* p,
                                              uint32_t len) {
  uint32_t k = 1;
  for (; len > Arrival::kMoreBytes; ++k) {
    auto& more = q.slot<ArrivalMore>(k);
    more.mark = q.index(k);
    __builtin_memcpy(more.data, p, Arrival::kMoreBytes);
    p += Arrival::kMoreBytes;
    len -= Arrival::kMoreBytes;
  }
  auto& last = q.slot<ArrivalMore>(k);
  last.mark = q.index(k);
  copy_bytes(last.data, p, len);
}

// Copies the peeked entry's slots after its first (slots - 1 of them, at least one) to
// msg, kMoreBytes for each, whole (msg holds kInlineMax - kFirstBytes bytes).
[[gnu::always_inline]] inline void read_rest(const SeqConsumer<Arrival>& q, uint8_t* msg,
                                             uint32_t slots) {
  __builtin_memcpy(msg, q.slot<ArrivalMore>(1).data, Arrival::kMoreBytes);
  for (uint32_t k = 2; k < slots; ++k)
    __builtin_memcpy(msg + (k - 1) * Arrival::kMoreBytes, q.slot<ArrivalMore>(k).data,
                     Arrival::kMoreBytes);
}

}  // namespace rdmx::shm
