// Messages that arrived before a matching receive, in arrival order. Each message is
// filed under every wildcard class it can satisfy, so a receive or probe of any
// shape finds the oldest matching message with one lookup. A receive under an ignore
// mask walks them all in arrival order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "match/key_index.h"

namespace rdmx {

struct UnexpectedEntry {
  ListNode nodes[5];  // indexed by Wild; [Wild::Mask]: every message, in arrival order
  uint32_t cid = 0;
  int32_t source = 0;
  int32_t tag = 0;
};

class UnexpectedQueue {
 public:
  void add(UnexpectedEntry& e, uint32_t cid, int32_t source, int32_t tag);
  // The oldest message a receive (source/tag may be wildcards) would match, or null.
  UnexpectedEntry* find(uint32_t cid, int32_t source, int32_t tag) {
    return find(MatchKey::for_receive(cid, source, tag), 0);
  }
  // The same for a key made already (MatchKey::for_tagged, ignore its mask).
  UnexpectedEntry* find(const MatchKey& key, uint64_t ignore);
  void remove(UnexpectedEntry& e);
  size_t size() const { return size_; }

 private:
  KeyIndex<List> index_;
  List arrivals_;  // every message, oldest first
  size_t size_ = 0;
};

}  // namespace rdmx
