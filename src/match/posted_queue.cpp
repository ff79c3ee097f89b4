#include "match/posted_queue.h"

#include <algorithm>

namespace rdmx {

// Some receive with a wildcard is posted: the oldest of the candidates of each class.
PostedEntry* PostedQueue::match_wildcards(uint32_t cid, int32_t source, int32_t tag) {
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
  if (best) take(*best);
  return best;
}

std::vector<PostedEntry*> PostedQueue::take_source(int32_t source) {
  std::vector<PostedEntry*> out;
  if (size_ == 0) return out;
  index_.for_each([&](const List& l) {
    for (ListNode* n = l.first; n; n = n->next) {
      auto* e = static_cast<PostedEntry*>(n->owner);
      if (e->key.source == source && (e->key.wild == Wild::None || e->key.wild == Wild::Tag))
        out.push_back(e);
    }
  });
  std::sort(out.begin(), out.end(),
            [](const PostedEntry* a, const PostedEntry* b) { return a->post_seq < b->post_seq; });
  for (PostedEntry* e : out) take(*e);
  return out;
}

}  // namespace rdmx
