#include "match/unexpected_queue.h"

namespace rdmx {

void UnexpectedQueue::add(UnexpectedEntry& e, uint32_t cid, int32_t source, int32_t tag) {
  e.cid = cid;
  e.source = source;
  e.tag = tag;
  for (uint32_t w = 0; w < kHashedClasses; ++w) {
    Wild wild = Wild(w);
    if ((wild == Wild::Tag || wild == Wild::Both) && !MatchKey::tag_wildcard_applies(tag)) continue;
    e.nodes[w].owner = &e;
    e.nodes[w].push_back(index_.get(MatchKey::of_message(cid, source, tag, wild)));
  }
  ListNode& all = e.nodes[uint32_t(Wild::Mask)];
  all.owner = &e;
  all.push_back(arrivals_);
  ++size_;
}

UnexpectedEntry* UnexpectedQueue::find(const MatchKey& k, uint64_t ignore) {
  if (k.wild() == Wild::Mask) [[unlikely]] {
    for (ListNode* n = arrivals_.first; n; n = n->next) {
      auto* e = static_cast<UnexpectedEntry*>(n->owner);
      if (MatchKey::mask_matches(k, ignore, e->cid, e->source, e->tag)) return e;
    }
    return nullptr;
  }
  List* l = index_.find(k);
  if (!l || l->empty()) return nullptr;
  return static_cast<UnexpectedEntry*>(l->first->owner);
}

void UnexpectedQueue::remove(UnexpectedEntry& e) {
  for (ListNode& n : e.nodes) n.unlink();
  --size_;
}

}  // namespace rdmx
