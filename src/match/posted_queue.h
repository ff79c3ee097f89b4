// Posted receives waiting for a message, indexed so that an arriving message finds
// the oldest matching receive in O(1): one FIFO per (context, source, tag) key, at
// most one lookup per wildcard class that has receives posted, and the post sequence
// number picks between the classes. Receives under an ignore mask (rdmx_irecv_tagged)
// wait in one list in post order, walked only while some are posted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/key_index.h"

namespace rdmx {

struct PostedEntry {
  PostedEntry* fifo_next = nullptr;
  MatchKey key{};
  uint64_t post_seq = 0;
  uint64_t ignore = 0;  // Wild::Mask: the tag bits that need not match
};

class PostedQueue {
 public:
  [[gnu::always_inline]] void post(PostedEntry& e, uint32_t cid, int32_t source, int32_t tag) {
    post(e, MatchKey::for_receive(cid, source, tag));
  }
  // A receive under a key made already (MatchKey::for_tagged), not a Wild::Mask one.
  [[gnu::always_inline]] void post(PostedEntry& e, const MatchKey& key) {
    e.key = key;
    e.post_seq = next_seq_++;
    index_.get(key).push(&e);
    if (key.wild() != Wild::None) [[unlikely]]
      count_wildcard(key.wild(), +1);
  }
  // A Wild::Mask receive: ignore is its mask.
  void post_masked(PostedEntry& e, const MatchKey& key, uint64_t ignore) {
    e.key = key;
    e.post_seq = next_seq_++;
    e.ignore = ignore;
    masked_.push(&e);
    count_wildcard(Wild::Mask, +1);
  }
  // Removes and returns the oldest receive matching the message, or null.
  [[gnu::always_inline]] PostedEntry* match(uint32_t cid, int32_t source, int32_t tag) {
    if (wildcards_) [[unlikely]]
      return match_wildcards(cid, source, tag);
    Fifo<PostedEntry>* l = index_.find(MatchKey{cid, source, tag, Wild::None});  // one lookup
    if (!l || l->empty()) return nullptr;
    PostedEntry* e = l->pop();
    return e;
  }
  // Removes a still-posted receive (cancel). False if it was not posted. (Walks the
  // receives posted under its key.)
  bool remove(PostedEntry& e);
  // Removes every receive posted for this source (not wildcard ones), oldest first.
  std::vector<PostedEntry*> take_source(int32_t source);
  // How many receives are posted (a walk over the index: for tests and diagnostics).
  size_t size();

 private:
  void count_wildcard(Wild w, int d) {
    per_class_[uint32_t(w)] += size_t(d);
    wildcards_ += size_t(d);
  }
  PostedEntry* match_wildcards(uint32_t cid, int32_t source, int32_t tag);
  PostedEntry* oldest_masked(uint32_t cid, int32_t source, int32_t tag);

  KeyIndex<Fifo<PostedEntry>> index_;
  Fifo<PostedEntry> masked_;  // Wild::Mask receives, in post order
  uint64_t next_seq_ = 0;
  size_t wildcards_ = 0;      // receives posted with a wildcard or an ignore mask
  size_t per_class_[5] = {};  // by Wild (per_class_[0] unused)
};

}  // namespace rdmx
