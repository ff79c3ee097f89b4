#include "match/posted_queue.h"

#include <algorithm>

namespace rdmx {

// Some receive with a wildcard is posted: the oldest of the candidates of each class.
PostedEntry* PostedQueue::match_wildcards(uint32_t cid, int32_t source, int32_t tag) {
  Fifo<PostedEntry>* best = nullptr;
  for (uint32_t w = 0; w < kHashedClasses; ++w) {
    if (w && !per_class_[w]) continue;
    Wild wild = Wild(w);
    if ((wild == Wild::Tag || wild == Wild::Both) && !MatchKey::tag_wildcard_applies(tag)) continue;
    Fifo<PostedEntry>* l = index_.find(MatchKey::of_message(cid, source, tag, wild));
    if (!l || l->empty()) continue;
    if (!best || l->first->post_seq < best->first->post_seq) best = l;
  }
  PostedEntry* m = per_class_[uint32_t(Wild::Mask)] ? oldest_masked(cid, source, tag) : nullptr;
  PostedEntry* e = nullptr;
  if (m && (!best || m->post_seq < best->first->post_seq)) {
    masked_.remove(m);
    // The receive's status reports what matched: the message's own context id and tag.
    m->key = MatchKey(cid, source, tag, Wild::Mask);
    e = m;
  } else if (best) {
    e = best->pop();
  } else {
    return nullptr;
  }
  if (e->key.wild() != Wild::None) count_wildcard(e->key.wild(), -1);
  return e;
}

// The oldest receive under an ignore mask that takes the message (a walk: masks are
// not hashed).
PostedEntry* PostedQueue::oldest_masked(uint32_t cid, int32_t source, int32_t tag) {
  for (PostedEntry* e = masked_.first; e; e = e->fifo_next)
    if (MatchKey::mask_matches(e->key, e->ignore, cid, source, tag)) return e;
  return nullptr;
}

bool PostedQueue::remove(PostedEntry& e) {
  Fifo<PostedEntry>* l = e.key.wild() == Wild::Mask ? &masked_ : index_.find(e.key);
  if (!l || !l->remove(&e)) return false;
  if (e.key.wild() != Wild::None) count_wildcard(e.key.wild(), -1);
  return true;
}

std::vector<PostedEntry*> PostedQueue::take_source(int32_t source) {
  std::vector<PostedEntry*> out;
  auto take = [&](Fifo<PostedEntry>& l) {
    Fifo<PostedEntry> keep;
    while (!l.empty()) {
      PostedEntry* e = l.pop();
      Wild w = e->key.wild();
      if (e->key.source() == source && (w == Wild::None || w == Wild::Tag || w == Wild::Mask))
        out.push_back(e);
      else
        keep.push(e);
    }
    l = keep;
  };
  index_.for_each(take);
  take(masked_);
  std::sort(out.begin(), out.end(),
            [](const PostedEntry* a, const PostedEntry* b) { return a->post_seq < b->post_seq; });
  for (PostedEntry* e : out) {
    if (e->key.wild() != Wild::None) count_wildcard(e->key.wild(), -1);
  }
  return out;
}

size_t PostedQueue::size() {
  size_t n = 0;
  auto count = [&n](const Fifo<PostedEntry>& l) {
    for (const PostedEntry* e = l.first; e; e = e->fifo_next) ++n;
  };
  index_.for_each(count);
  count(masked_);
  return n;
}

}  // namespace rdmx
