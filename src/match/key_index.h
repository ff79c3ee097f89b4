// An open-addressing hash index from MatchKey to a list L of waiting elements (List
// or Fifo). Lists live in stable chunks, so elements may point at them; a list stays
// in the index while it is empty (a key is usually reused), and empty lists are only
// dropped when the table grows past a few thousand keys. Lookups cost one hash and a
// short probe however many elements wait.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "container/fifo.h"
#include "container/intrusive_list.h"
#include "match/match_key.h"

namespace rdmx {

template <class L>
class KeyIndex {
 public:
  KeyIndex();
  KeyIndex(const KeyIndex&) = delete;
  KeyIndex& operator=(const KeyIndex&) = delete;

  // The list for key, or null if none was ever made. The last key looked up is
  // remembered: MPI programs often use the same (context, source, tag) over and over,
  // and then neither hash nor probe is needed.
  [[gnu::always_inline]] L* find(const MatchKey& key) {
    if (key == last_key_) {
      if (!last_list_) __builtin_unreachable();  // a remembered key has its list
      return last_list_;
    }
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return remember(key, s.list);
      if (!s.list) return nullptr;
    }
  }
  // The list for key, made empty if it did not exist.
  [[gnu::always_inline]] L& get(const MatchKey& key) {
    if (key == last_key_) return *last_list_;
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return *remember(key, s.list);
      if (!s.list) return *remember(key, &insert(key));
    }
  }
  // Calls fn(list) for every list in the index.
  template <class Fn>
  void for_each(Fn&& fn) {
    for (Slot& s : slots_)
      if (s.list) fn(*s.list);
  }

 private:
  struct Slot {
    MatchKey key = MatchKey::none();  // until a list is made for a key
    L* list = nullptr;
  };
  size_t slot_of(const MatchKey& key) const { return size_t(key.hash() >> shift_); }
  L* remember(const MatchKey& key, L* list) {
    last_key_ = key;
    last_list_ = list;
    return list;
  }
  L& insert(const MatchKey& key);
  L* new_list();
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 0;  // 64 - log2(slots)
  size_t used_ = 0;
  std::vector<std::unique_ptr<L[]>> chunks_;
  size_t chunk_used_ = 0;
  std::vector<L*> free_lists_;
  MatchKey last_key_ = MatchKey::none();  // none() until a key is looked up, and after grow()
  L* last_list_ = nullptr;                // the list of last_key_ (lists stay put until grow())
};

}  // namespace rdmx
