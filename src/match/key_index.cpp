#include "match/key_index.h"

#include "match/posted_queue.h"

namespace rdmx {
namespace {
constexpr size_t kChunk = 256;
constexpr size_t kMinSlots = 64;
constexpr size_t kKeepEmpty = 4096;  // keys kept in the index even while their list is empty

unsigned log2_of(size_t n) {
  unsigned b = 0;
  while ((size_t(1) << b) < n) ++b;
  return b;
}
}  // namespace

template <class L>
KeyIndex<L>::KeyIndex()
    : slots_(kMinSlots), mask_(kMinSlots - 1), shift_(64 - log2_of(kMinSlots)) {}

template <class L>
L* KeyIndex<L>::new_list() {
  if (!free_lists_.empty()) {
    L* l = free_lists_.back();
    free_lists_.pop_back();
    return l;
  }
  if (chunks_.empty() || chunk_used_ == kChunk) {
    chunks_.emplace_back(new L[kChunk]);
    chunk_used_ = 0;
  }
  return &chunks_.back()[chunk_used_++];
}

// A key seen for the first time: a new list, in a table kept at most half full.
template <class L>
L& KeyIndex<L>::insert(const MatchKey& key) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  size_t i = slot_of(key);
  while (slots_[i].list) i = (i + 1) & mask_;
  slots_[i] = {key, new_list()};
  ++used_;
  return *slots_[i].list;
}

// Rehash into a larger table. Keys are usually reused (a program's tags and peers), so
// lists are kept even when empty while there are few keys; past kKeepEmpty keys the
// empty lists are recycled and the table is sized for the others.
template <class L>
void KeyIndex<L>::grow() {
  last_key_ = MatchKey::none();  // empty lists may be recycled below
  last_list_ = nullptr;
  std::vector<Slot> old;
  old.swap(slots_);
  bool drop_empty = used_ >= kKeepEmpty;
  size_t keep = 0;
  for (const Slot& s : old)
    if (s.list && (!drop_empty || !s.list->empty())) ++keep;
  size_t n = kMinSlots;
  while (n < (keep + 1) * 4) n *= 2;
  slots_.assign(n, Slot{});
  mask_ = n - 1;
  shift_ = 64 - log2_of(n);
  used_ = 0;
  for (const Slot& s : old) {
    if (!s.list) continue;
    if (drop_empty && s.list->empty()) {
      free_lists_.push_back(s.list);
      continue;
    }
    size_t i = slot_of(s.key);
    while (slots_[i].list) i = (i + 1) & mask_;
    slots_[i] = s;
    ++used_;
  }
}

// The two kinds of list in use: the unexpected queue's (doubly linked, an element in
// four lists) and the posted queue's (a FIFO per key).
template class KeyIndex<List>;
template class KeyIndex<Fifo<PostedEntry>>;

}  // namespace rdmx
