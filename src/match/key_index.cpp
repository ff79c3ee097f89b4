#include "match/key_index.h"

namespace rdmx {
namespace {
constexpr size_t kChunk = 256;
}

KeyIndex::KeyIndex() : slots_(64) {}

List* KeyIndex::new_list() {
  if (!free_lists_.empty()) {
    List* l = free_lists_.back();
    free_lists_.pop_back();
    return l;
  }
  if (chunks_.empty() || chunk_used_ == kChunk) {
    chunks_.emplace_back(new List[kChunk]);
    chunk_used_ = 0;
  }
  return &chunks_.back()[chunk_used_++];
}

List& KeyIndex::get(const MatchKey& key) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  size_t mask = slots_.size() - 1;
  for (size_t i = key.hash() & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (!s.list) {
      s.key = key;
      s.list = new_list();
      ++used_;
      return *s.list;
    }
    if (s.key == key) return *s.list;
  }
}

// Rehash into a table sized for the non-empty lists; empty ones are recycled.
void KeyIndex::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  size_t live = 0;
  for (const Slot& s : old)
    if (s.list && !s.list->empty()) ++live;
  size_t n = 64;
  while (n < (live + 1) * 4) n *= 2;
  slots_.assign(n, Slot{});
  used_ = 0;
  size_t mask = n - 1;
  for (const Slot& s : old) {
    if (!s.list) continue;
    if (s.list->empty()) {
      free_lists_.push_back(s.list);
      continue;
    }
    size_t i = s.key.hash() & mask;
    while (slots_[i].list) i = (i + 1) & mask;
    slots_[i] = s;
    ++used_;
  }
}

}  // namespace rdmx
