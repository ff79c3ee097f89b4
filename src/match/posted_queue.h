// Posted receives waiting for a message, indexed so that an arriving message finds
// the oldest matching receive in O(1): at most one lookup per wildcard class that
// has receives posted, and the post sequence number picks between the classes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/key_index.h"

namespace rdmx {

struct PostedEntry {
  ListNode node;
  MatchKey key{};
  uint64_t post_seq = 0;
};

class PostedQueue {
 public:
  [[gnu::always_inline]] void post(PostedEntry& e, uint32_t cid, int32_t source, int32_t tag) {
    e.key = MatchKey::for_receive(cid, source, tag);
    e.post_seq = next_seq_++;
    e.node.owner = &e;
    e.node.push_back(index_.get(e.key));
    ++per_class_[uint32_t(e.key.wild)];
    ++size_;
  }
  // Removes and returns the oldest receive matching the message, or null.
  [[gnu::always_inline]] PostedEntry* match(uint32_t cid, int32_t source, int32_t tag) {
    if (size_ != per_class_[0]) [[unlikely]]
      return match_wildcards(cid, source, tag);
    List* l = index_.find(MatchKey{cid, source, tag, Wild::None});  // one lookup
    if (!l || l->empty()) return nullptr;
    auto* e = static_cast<PostedEntry*>(l->first->owner);
    take(*e);
    return e;
  }
  // Removes a still-posted receive (cancel). False if it was not posted.
  bool remove(PostedEntry& e) {
    if (!e.node.linked()) return false;
    take(e);
    return true;
  }
  // Removes every receive posted for this source (not wildcard ones), oldest first.
  std::vector<PostedEntry*> take_source(int32_t source);
  size_t size() const { return size_; }

 private:
  [[gnu::always_inline]] void take(PostedEntry& e) {
    e.node.unlink();
    --per_class_[uint32_t(e.key.wild)];
    --size_;
  }
  PostedEntry* match_wildcards(uint32_t cid, int32_t source, int32_t tag);

  KeyIndex index_;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
  size_t per_class_[4] = {};
};

}  // namespace rdmx
