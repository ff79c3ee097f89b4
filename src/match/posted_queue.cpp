#include "match/posted_queue.h"

#include <algorithm>

namespace rdmx {

// Some receive with a wildcard is posted: the oldest of the candidates of each class.
PostedEntry* PostedQueue::match_wildcards(uint32_t cid, int32_t source, int32_t tag) {
  Fifo<PostedEntry>* best = nullptr;
  for (uint32_t w = 0; w < 4; ++w) {
    if (w && !per_class_[w]) continue;
    Wild wild = Wild(w);
    if ((wild == Wild::Tag || wild == Wild::Both) && !MatchKey::tag_wildcard_applies(tag)) continue;
    Fifo<PostedEntry>* l = index_.find(MatchKey::of_message(cid, source, tag, wild));
    if (!l || l->empty()) continue;
    if (!best || l->first->post_seq < best->first->post_seq) best = l;
  }
  if (!best) return nullptr;
  PostedEntry* e = best->pop();
  if (e->key.wild() != Wild::None) count_wildcard(e->key.wild(), -1);
  return e;
}

bool PostedQueue::remove(PostedEntry& e) {
  Fifo<PostedEntry>* l = index_.find(e.key);
  if (!l || !l->remove(&e)) return false;
  if (e.key.wild() != Wild::None) count_wildcard(e.key.wild(), -1);
  return true;
}

std::vector<PostedEntry*> PostedQueue::take_source(int32_t source) {
  std::vector<PostedEntry*> out;
  index_.for_each([&](Fifo<PostedEntry>& l) {
    Fifo<PostedEntry> keep;
    while (!l.empty()) {
      PostedEntry* e = l.pop();
      if (e->key.source() == source && (e->key.wild() == Wild::None || e->key.wild() == Wild::Tag))
        out.push_back(e);
      else
        keep.push(e);
    }
    l = keep;
  });
  std::sort(out.begin(), out.end(),
            [](const PostedEntry* a, const PostedEntry* b) { return a->post_seq < b->post_seq; });
  for (PostedEntry* e : out) {
    if (e->key.wild() != Wild::None) count_wildcard(e->key.wild(), -1);
  }
  return out;
}

size_t PostedQueue::size() {
  size_t n = 0;
  index_.for_each([&n](const Fifo<PostedEntry>& l) {
    for (const PostedEntry* e = l.first; e; e = e->fifo_next) ++n;
  });
  return n;
}

}  // namespace rdmx
