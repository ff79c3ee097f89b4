// A doubly-linked list threaded through its elements: O(1) push, pop and unlink,
// no allocation. A node knows its list, so an element can leave from anywhere.
#pragma once

namespace rdmx {

struct ListNode;

struct List {
  ListNode* first = nullptr;
  ListNode* last = nullptr;
  bool empty() const { return first == nullptr; }
};

struct ListNode {
  ListNode* prev = nullptr;
  ListNode* next = nullptr;
  List* list = nullptr;   // null when the node is in no list
  void* owner = nullptr;  // the element this node belongs to

  bool linked() const { return list != nullptr; }

  [[gnu::always_inline]] void push_back(List& l) {
    list = &l;
    next = nullptr;
    prev = l.last;
    if (l.last)
      l.last->next = this;
    else
      l.first = this;
    l.last = this;
  }

  [[gnu::always_inline]] void unlink() {
    if (!list) return;
    if (prev)
      prev->next = next;
    else
      list->first = next;
    if (next)
      next->prev = prev;
    else
      list->last = prev;
    prev = next = nullptr;
    list = nullptr;
  }
};

}  // namespace rdmx
