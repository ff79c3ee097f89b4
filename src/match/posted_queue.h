// Posted receives waiting for a message, indexed so that an arriving message finds
// the oldest matching receive in O(1): at most one lookup per wildcard class that
// has receives posted, and the post sequence number picks between the classes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "match/key_index.h"

namespace rdmx {

struct PostedEntry {
  ListNode node;
  MatchKey key{};
  uint64_t post_seq = 0;
};

class PostedQueue {
 public:
  void post(PostedEntry& e, uint32_t cid, int32_t source, int32_t tag);
  // Removes and returns the oldest receive matching the message, or null.
  PostedEntry* match(uint32_t cid, int32_t source, int32_t tag);
  // Removes a still-posted receive (cancel). False if it was not posted.
  bool remove(PostedEntry& e);
  size_t size() const { return size_; }

 private:
  KeyIndex index_;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
  size_t per_class_[4] = {};
};

}  // namespace rdmx
