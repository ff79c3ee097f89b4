// A singly-linked FIFO threaded through its elements (T::fifo_next): push at the back
// and pop at the front in a few instructions, no allocation. Removing an element from
// the middle walks the list, so it is for rare events (cancel, a failed peer).
#pragma once

namespace rdmx {

template <class T>
struct Fifo {
  T* first = nullptr;
  T* last = nullptr;

  bool empty() const { return first == nullptr; }
  void push(T* e) {
    e->fifo_next = nullptr;
    if (last)
      last->fifo_next = e;
    else
      first = e;
    last = e;
  }
  T* pop() {
    T* e = first;
    first = e->fifo_next;
    if (!first) last = nullptr;
    return e;
  }
  // False if e is not in this list.
  bool remove(T* e) {
    T* prev = nullptr;
    for (T* x = first; x; prev = x, x = x->fifo_next) {
      if (x != e) continue;
      (prev ? prev->fifo_next : first) = e->fifo_next;
      if (last == e) last = prev;
      return true;
    }
    return false;
  }
};

}  // namespace rdmx
