// A small message's slots in the arrivals queue (shm_layout.h): the bytes past its first
// slot go to the slots after it, kMoreBytes each behind a mark, and come out of them
// whole. The fabric and the queue's tests write and read entries through these.
#pragma once

#include <cstdint>

#include "core/copy.h"
#include "fabric/shm/shm_layout.h"
#include "fabric/shm/shm_queue.h"

namespace rdmx::shm {

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
