// A FIFO over a power-of-two circular buffer that grows by doubling: no allocation
// once it has reached its working size. A ring made with capacity 0 allocates nothing
// until its first push (then room for 8): for one per peer of a large job, most of
// which never queue anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rdmx {

template <class T>
class Ring {
 public:
  explicit Ring(size_t capacity = 16) {
    if (capacity == 0) return;
    size_t n = 1;
    while (n < capacity) n *= 2;
    buf_.resize(n);
  }
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  T& front() { return buf_[head_ & (buf_.size() - 1)]; }
  void push(T v) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & (buf_.size() - 1)] = std::move(v);
  }
  T pop() { return std::move(buf_[head_++ & (buf_.size() - 1)]); }
  // True if some queued element satisfies pred (a scan: not for the hot path).
  template <class Pred>
  bool any(Pred pred) const {
    for (uint32_t i = head_; i != tail_; ++i)
      if (pred(buf_[i & (buf_.size() - 1)])) return true;
    return false;
  }
  void clear() { head_ = tail_ = 0; }

 private:
  void grow() {
    std::vector<T> n(buf_.empty() ? 8 : buf_.size() * 2);
    uint32_t count = tail_ - head_;
    for (uint32_t i = 0; i < count; ++i) n[i] = std::move(buf_[(head_ + i) & (buf_.size() - 1)]);
    tail_ = count;
    head_ = 0;
    buf_.swap(n);
  }
  std::vector<T> buf_;
  uint32_t head_ = 0, tail_ = 0;  // wrap around: a ring never holds 2^32 elements
};

}  // namespace rdmx
