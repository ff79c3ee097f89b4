// One end of a single-producer single-consumer queue in shared memory (shm_layout.h).
// Each end keeps a private copy of the other end's index and reads the shared one only
// when that copy says the queue is full (producer) or empty (consumer): a poll of an
// empty queue reads one line that stays in this core's cache until the producer writes.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/prefetch.h"
#include "fabric/shm/shm_layout.h"

namespace rdmx::shm {

template <class T>
class Producer {
 public:
  void bind(QueueIndices* q, T* entries, uint32_t cap) {
    q_ = q;
    entries_ = entries;
    mask_ = cap - 1;
    tail_ = q->tail.load(std::memory_order_relaxed);
    head_ = q->head.load(std::memory_order_acquire);
  }
  bool full() {
    if (tail_ - head_ <= mask_) return false;
    head_ = q_->head.load(std::memory_order_acquire);
    return tail_ - head_ > mask_;
  }
  // The caller has checked !full().
  void push(const T& v) {
    entries_[tail_ & mask_] = v;
    q_->tail.store(++tail_, std::memory_order_release);
  }
  // Entries pushed and not yet taken (reads the consumer's index).
  uint32_t in_queue() {
    head_ = q_->head.load(std::memory_order_acquire);
    return tail_ - head_;
  }

 private:
  QueueIndices* q_ = nullptr;
  T* entries_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t tail_ = 0;
  uint32_t head_ = 0;
};

template <class T>
class Consumer {
 public:
  void bind(QueueIndices* q, T* entries, uint32_t cap) {
    q_ = q;
    entries_ = entries;
    mask_ = cap - 1;
    head_ = q->head.load(std::memory_order_relaxed);
    tail_ = q->tail.load(std::memory_order_acquire);
  }
  bool empty() {
    if (head_ != tail_) return false;
    tail_ = q_->tail.load(std::memory_order_acquire);
    return head_ == tail_;
  }
  // The caller has checked !empty(). The producer may have written anything: the
  // caller validates what it takes.
  T pop() {
    T v = entries_[head_ & mask_];
    q_->head.store(++head_, std::memory_order_release);
    return v;
  }

 private:
  QueueIndices* q_ = nullptr;
  T* entries_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
};

// The ends of a queue whose entries carry their sequence (T::seq: the producer's index
// + 1 once written): the consumer polls the next entry itself and the producer's index
// is never shared, so an entry costs the slots it takes and nothing more. The arrivals
// and posted-buffer queues are of this kind. An entry may take several slots; only its
// first carries the sequence (see ArrivalMore for what the others must hold).
template <class T>
class SeqProducer {
 public:
  void bind(QueueIndices* q, T* entries, uint32_t cap) {
    q_ = q;
    entries_ = entries;
    mask_ = cap - 1;
    head_ = q->head.load(std::memory_order_acquire);
    tail_ = head_;
  }
  // Whether an entry of n slots does not fit now.
  bool full(uint32_t n = 1) {
    if (tail_ - head_ + n <= mask_ + 1) return false;
    head_ = q_->head.load(std::memory_order_acquire);
    return tail_ - head_ + n > mask_ + 1;
  }
  // The caller has checked !full(n): fill the entry's slots, then commit() it.
  T& next() { return entries_[tail_ & mask_]; }
  // Slot k of the entry being written, and its index.
  template <class U>
  U& slot(uint32_t k) {
    return *reinterpret_cast<U*>(&entries_[(tail_ + k) & mask_]);
  }
  uint32_t index(uint32_t k) const { return tail_ + k; }
  // Fetches for writing the cache lines of the n slots from the tail's k-th on, so that
  // the consumer gives them up before they are written (core/prefetch.h).
  void prefetch(uint32_t k, uint32_t n) {
    constexpr uint32_t kPerLine = kCacheLine / sizeof(T);
    static_assert(kPerLine && (kPerLine & (kPerLine - 1)) == 0);
    uint32_t first = (tail_ + k) & ~(kPerLine - 1);
    uint32_t span = tail_ + k + n - first;  // from the first line's start: no wrap
    for (uint32_t j = 0; j < span; j += kPerLine)
      prefetch_for_write(&entries_[(first + j) & mask_]);
  }
  // Publishes the entry of n slots (a release store: no barrier; see Fabric::wake_peer).
  void commit(T& e, uint32_t n = 1) {
    uint32_t seq = tail_ + 1;
    tail_ += n;
    e.seq.store(seq, std::memory_order_release);
  }

 private:
  QueueIndices* q_ = nullptr;
  T* entries_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t tail_ = 0;
  uint32_t head_ = 0;
};

template <class T>
class SeqConsumer {
 public:
  void bind(QueueIndices* q, T* entries, uint32_t cap) {
    q_ = q;
    entries_ = entries;
    mask_ = cap - 1;
    head_ = q->head.load(std::memory_order_relaxed);
  }
  // The next entry if it is written, else null.
  [[gnu::always_inline]] T* peek() {
    T* e = &entries_[head_ & mask_];
    return e->seq.load(std::memory_order_acquire) == head_ + 1 ? e : nullptr;
  }
  bool empty() { return peek() == nullptr; }
  // Slot k of the peeked entry.
  template <class U>
  const U& slot(uint32_t k) const {
    return *reinterpret_cast<const U*>(&entries_[(head_ + k) & mask_]);
  }
  // Gives the peeked entry of n slots back to the producer (its fields are read by then).
  [[gnu::always_inline]] void pop(uint32_t n = 1) {
    head_ += n;
    q_->head.store(head_, std::memory_order_release);
  }

 private:
  QueueIndices* q_ = nullptr;
  T* entries_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;
};

}  // namespace rdmx::shm
