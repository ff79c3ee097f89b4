#include "match/unexpected_queue.h"

namespace rdmx {

void UnexpectedQueue::add(UnexpectedEntry& e, uint32_t cid, int32_t source, int32_t tag) {
  e.cid = cid;
  e.source = source;
  e.tag = tag;
  for (uint32_t w = 0; w < 4; ++w) {
    Wild wild = Wild(w);
    if ((wild == Wild::Tag || wild == Wild::Both) && !MatchKey::tag_wildcard_applies(tag)) continue;
    e.nodes[w].owner = &e;
    e.nodes[w].push_back(index_.get(MatchKey::of_message(cid, source, tag, wild)));
  }
  ++size_;
}

UnexpectedEntry* UnexpectedQueue::find(uint32_t cid, int32_t source, int32_t tag) {
  MatchKey k = MatchKey::for_receive(cid, source, tag);
  List* l = index_.find(k);
  if (!l || l->empty()) return nullptr;
  return static_cast<UnexpectedEntry*>(l->first->owner);
}

void UnexpectedQueue::remove(UnexpectedEntry& e) {
  for (ListNode& n : e.nodes) n.unlink();
  --size_;
}

}  // namespace rdmx
