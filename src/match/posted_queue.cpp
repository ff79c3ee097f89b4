#include "match/posted_queue.h"

namespace rdmx {

void PostedQueue::post(PostedEntry& e, uint32_t cid, int32_t source, int32_t tag) {
  e.key = MatchKey::for_receive(cid, source, tag);
  e.post_seq = next_seq_++;
  e.node.owner = &e;
  e.node.push_back(index_.get(e.key));
  ++per_class_[uint32_t(e.key.wild)];
  ++size_;
}

PostedEntry* PostedQueue::match(uint32_t cid, int32_t source, int32_t tag) {
  if (!size_) return nullptr;
  if (size_ == per_class_[0]) {  // no wildcards posted: one lookup
    List* l = index_.find(MatchKey{cid, source, tag, Wild::None});
    if (!l || l->empty()) return nullptr;
    auto* e = static_cast<PostedEntry*>(l->first->owner);
    remove(*e);
    return e;
  }
  PostedEntry* best = nullptr;
  for (uint32_t w = 0; w < 4; ++w) {
    if (!per_class_[w]) continue;
    Wild wild = Wild(w);
    if ((wild == Wild::Tag || wild == Wild::Both) && !MatchKey::tag_wildcard_applies(tag)) continue;
    List* l = index_.find(MatchKey::of_message(cid, source, tag, wild));
    if (!l || l->empty()) continue;
    auto* e = static_cast<PostedEntry*>(l->first->owner);
    if (!best || e->post_seq < best->post_seq) best = e;
  }
  if (best) remove(*best);
  return best;
}

bool PostedQueue::remove(PostedEntry& e) {
  if (!e.node.linked()) return false;
  e.node.unlink();
  --per_class_[uint32_t(e.key.wild)];
  --size_;
  return true;
}

}  // namespace rdmx
