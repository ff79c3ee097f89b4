// The arrivals queue's slots (shm_layout.h, shm_queue.h), both ends in one process over
// plain memory: entries of one and two slots, laps over the ring's end, and what an
// earlier lap leaves behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "fabric/shm/shm_layout.h"
#include "fabric/shm/shm_queue.h"

namespace rdmx::shm {
namespace {

class ArrivalSlots : public ::testing::Test {
 protected:
  static constexpr uint32_t kCap = 4;

  void SetUp() override {
    std::memset(static_cast<void*>(slots_), 0, sizeof slots_);
    producer_.bind(&indices_, slots_, kCap);
    consumer_.bind(&indices_, slots_, kCap);
  }

  // Writes a RecvInline entry of len bytes, each byte `fill`, or the words of `words`.
  void put(uint32_t len, uint8_t fill, const uint32_t* words = nullptr) {
    uint32_t n = Arrival::slots(len);
    ASSERT_FALSE(producer_.full(n));
    std::vector<uint8_t> msg(Arrival::kInlineMax, fill);
    if (words) std::memcpy(msg.data(), words, msg.size());
    Arrival& a = producer_.next();
    a.kind = Arrival::RecvInline;
    a.inline_len = uint16_t(len);
    std::memcpy(a.data, msg.data(), Arrival::kFirstBytes);
    if (n == 2) {
      auto& more = producer_.slot<ArrivalMore>(1);
      more.mark = producer_.index(1);
      std::memcpy(more.data, msg.data() + Arrival::kFirstBytes, Arrival::kMoreBytes);
    }
    producer_.commit(a, n);
  }

  // Takes the next entry: its length and its bytes.
  std::vector<uint8_t> take() {
    const Arrival* a = consumer_.peek();
    if (!a) return {};
    std::vector<uint8_t> out(a->data, a->data + Arrival::kFirstBytes);
    uint32_t n = Arrival::slots(a->inline_len);
    if (n == 2) {
      const auto& more = consumer_.slot<ArrivalMore>(1);
      out.insert(out.end(), more.data, more.data + Arrival::kMoreBytes);
    }
    out.resize(a->inline_len);
    consumer_.pop(n);
    return out;
  }

  alignas(kCacheLine) QueueIndices indices_{};
  alignas(kCacheLine) Arrival slots_[kCap];
  SeqProducer<Arrival> producer_;
  SeqConsumer<Arrival> consumer_;
};

TEST_F(ArrivalSlots, TwoSmallMessagesShareACacheLine) {
  static_assert(sizeof(Arrival) * 2 == kCacheLine);
  static_assert(Arrival::kFirstBytes >= 16 + 8, "a short header and 8 bytes of payload");
  EXPECT_EQ(Arrival::slots(24), 1u);
  EXPECT_EQ(Arrival::slots(25), 2u);
  EXPECT_EQ(Arrival::slots(Arrival::kInlineMax), 2u);
}

// Entries of one and two slots, over the ring's end many times (a two-slot entry then
// starts in the last slot and ends in the first): each comes out whole, in order.
TEST_F(ArrivalSlots, EntriesOfOneAndTwoSlotsLapTheRingWhole) {
  const uint32_t lens[] = {8, 52, 24, 25, 0, 40, 1};
  for (int i = 0; i < 50; ++i) {
    uint32_t len = lens[size_t(i) % std::size(lens)];
    put(len, uint8_t(i));
    auto got = take();
    ASSERT_EQ(got.size(), len) << i;
    for (uint8_t b : got) ASSERT_EQ(b, uint8_t(i)) << i;
    EXPECT_TRUE(consumer_.empty()) << i;
  }
}

// A two-slot entry's second slot holds payload. When the consumer later reaches that slot
// as the start of an entry, what is left there must not read as written, whatever the
// payload was: here payload bytes that would read as exactly the sequence number the
// consumer then looks for.
TEST_F(ArrivalSlots, WhatAnEarlierLapLeftIsNotANewEntry) {
  // Every word of this payload is 7: the sequence number the consumer will look for
  // in slot 2 after one lap, where this payload's second slot goes.
  uint32_t sevens[Arrival::kInlineMax / 4];
  std::fill(std::begin(sevens), std::end(sevens), 7u);
  put(8, 0);           // slot 0
  put(52, 0, sevens);  // slots 1-2: slot 2 is a second slot
  put(8, 0);           // slot 3
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(take().empty());
  put(52, 0);  // slots 4-5 (0-1)
  ASSERT_EQ(take().size(), 52u);
  // The consumer now looks at slot 6 (ring slot 2), for sequence 7: the slot's first
  // word is its mark (2), not the payload.
  EXPECT_EQ(slots_[2].seq.load(), 2u) << "a second slot carries its own index";
  EXPECT_TRUE(consumer_.empty());
  put(8, 1);  // slot 6 (2)
  auto got = take();
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[0], 1);
}

// The producer takes an entry only where all its slots are free.
TEST_F(ArrivalSlots, AFullQueueRefusesWhatDoesNotFit) {
  put(8, 1);
  put(24, 2);
  put(52, 3);  // 4 slots taken
  EXPECT_TRUE(producer_.full(1));
  ASSERT_EQ(take().size(), 8u);
  EXPECT_FALSE(producer_.full(1));
  EXPECT_TRUE(producer_.full(2));
  ASSERT_EQ(take().size(), 24u);
  EXPECT_FALSE(producer_.full(2));
}

}  // namespace
}  // namespace rdmx::shm
