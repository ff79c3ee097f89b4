// An open-addressing hash index from MatchKey to a List of waiting elements.
// Lists live in stable chunks, so elements may point at them; a list stays in the
// index while it is empty (a key is usually reused) and is dropped when the table
// grows. Lookups cost one hash and a short probe however many elements wait.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "match/intrusive_list.h"
#include "match/match_key.h"

namespace rdmx {

class KeyIndex {
 public:
  KeyIndex();
  KeyIndex(const KeyIndex&) = delete;
  KeyIndex& operator=(const KeyIndex&) = delete;

  // The list for key, or null if none was ever made.
  List* find(const MatchKey& key) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = key.hash() & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (!s.list) return nullptr;
      if (s.key == key) return s.list;
    }
  }
  // The list for key, made empty if it did not exist.
  List& get(const MatchKey& key);

  size_t keys() const { return used_; }

 private:
  struct Slot {
    MatchKey key{};
    List* list = nullptr;
  };
  List* new_list();
  void grow();

  std::vector<Slot> slots_;
  size_t used_ = 0;
  std::vector<std::unique_ptr<List[]>> chunks_;
  size_t chunk_used_ = 0;
  std::vector<List*> free_lists_;
};

}  // namespace rdmx
