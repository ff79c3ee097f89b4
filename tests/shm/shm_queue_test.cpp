// The arrivals queue's slots (shm_layout.h, shm_queue.h), both ends in one process over
// plain memory: entries of one to Arrival::kMaxSlots slots, laps over the ring's end,
// what an earlier lap leaves behind, and the engine's short messages in one slot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "fabric/shm/shm_arrival.h"
#include "fabric/shm/shm_layout.h"
#include "fabric/shm/shm_queue.h"
#include "protocol/wire.h"

namespace rdmx::shm {
namespace {

class ArrivalSlots : public ::testing::Test {
 protected:
  static constexpr uint32_t kCap = 8;

  void SetUp() override {
    std::memset(static_cast<void*>(slots_), 0, sizeof slots_);
    indices_.tail.store(0);
    indices_.head.store(0);
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
    if (len > Arrival::kFirstBytes)
      write_rest(producer_, msg.data() + Arrival::kFirstBytes, len - Arrival::kFirstBytes);
    producer_.commit(a, n);
  }

  // Takes the next entry: its length and its bytes.
  std::vector<uint8_t> take() {
    const Arrival* a = consumer_.peek();
    if (!a) return {};
    std::vector<uint8_t> out(Arrival::kInlineMax);
    std::memcpy(out.data(), a->data, Arrival::kFirstBytes);
    uint32_t n = Arrival::slots(a->inline_len);
    if (n > 1) read_rest(consumer_, out.data() + Arrival::kFirstBytes, n);
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
  EXPECT_EQ(Arrival::slots(52), 2u);
  EXPECT_EQ(Arrival::slots(53), 3u);
  EXPECT_EQ(Arrival::slots(16 + 64), 3u);
  EXPECT_EQ(Arrival::slots(16 + 128), 6u);
  EXPECT_EQ(Arrival::slots(Arrival::kInlineMax), Arrival::kMaxSlots);
}

// Entries of every size in slots, over the ring's end many times (an entry then starts
// near the last slot and ends in the first ones): each comes out whole, in order.
TEST_F(ArrivalSlots, EntriesOfAnySizeLapTheRingWhole) {
  const uint32_t lens[] = {8, 52, 24, 25, 0, 40, 1, 53, Arrival::kInlineMax, 80, 144, 81, 109};
  for (int i = 0; i < 50; ++i) {
    uint32_t len = lens[size_t(i) % std::size(lens)];
    put(len, uint8_t(i));
    auto got = take();
    ASSERT_EQ(got.size(), len) << i;
    for (uint8_t b : got) ASSERT_EQ(b, uint8_t(i)) << i;
    EXPECT_TRUE(consumer_.empty()) << i;
  }
}

// The slots after an entry's first hold payload. When the consumer later reaches one of
// them as the start of an entry, what is left there must not read as written, whatever
// the payload was: here payload bytes that would read as exactly the sequence number
// the consumer then looks for, in every slot of the entry.
TEST_F(ArrivalSlots, WhatAnEarlierLapLeftIsNotANewEntry) {
  static_assert(Arrival::kMaxSlots < kCap);
  const uint32_t n = Arrival::kMaxSlots;
  for (uint32_t k = 1; k < n; ++k) {
    SetUp();
    // Slot k of this entry is ring slot k + 1; after one lap the consumer looks there
    // for sequence kCap + k + 2. Every word of the payload is that number.
    uint32_t seq = kCap + k + 2;
    uint32_t words[Arrival::kInlineMax / 4];
    std::fill(std::begin(words), std::end(words), seq);
    put(8, 0);                           // slot 0
    put(Arrival::kInlineMax, 0, words);  // slots 1 to n
    ASSERT_FALSE(take().empty());
    ASSERT_EQ(take().size(), Arrival::kInlineMax);
    // One-slot entries up to ring slot k (the next lap), then the consumer looks at
    // slot k + 1 for seq: the slot's first word is its mark (k + 1), not the payload.
    for (uint32_t i = n + 1; i < kCap + k + 1; ++i) {
      put(8, 2);
      ASSERT_EQ(take().size(), 8u) << k << " " << i;
    }
    EXPECT_EQ(slots_[k + 1].seq.load(), k + 1) << "slot " << k << " carries its own index";
    EXPECT_TRUE(consumer_.empty()) << k;
    put(8, 1);
    auto got = take();
    ASSERT_EQ(got.size(), 8u);
    EXPECT_EQ(got[0], 1);
  }
}

// The producer takes an entry only where all its slots are free.
TEST_F(ArrivalSlots, AFullQueueRefusesWhatDoesNotFit) {
  put(8, 1);
  put(24, 2);
  put(52, 3);
  put(80, 4);  // 7 slots taken
  EXPECT_FALSE(producer_.full(1));
  put(8, 5);  // 8 slots taken
  EXPECT_TRUE(producer_.full(1));
  ASSERT_EQ(take().size(), 8u);
  EXPECT_FALSE(producer_.full(1));
  EXPECT_TRUE(producer_.full(2));
  ASSERT_EQ(take().size(), 24u);
  EXPECT_FALSE(producer_.full(2));
}

// The engine's short header as it sends it: 16 bytes.
std::vector<uint8_t> short_header(uint8_t ctrl_credits, uint16_t credits, uint32_t seq,
                                  uint32_t cid, int32_t tag, wire::Type type = wire::Type::Short) {
  wire::Header h{};
  h.version_type = wire::Header::make_vt(type);
  h.ctrl_credits = ctrl_credits;
  h.credits = credits;
  h.seq = seq;
  h.context_id = cid;
  h.tag = tag;
  std::vector<uint8_t> b(wire::kShortBytes);
  std::memcpy(b.data(), &h, b.size());
  return b;
}

// A short message of up to 16 bytes of payload takes one slot, without its sequence
// number, and comes out as the engine sent it but unnumbered (wire::kUnnumbered): each
// length from 0 to 16, credits and a negative tag kept, two entries to a cache line.
TEST_F(ArrivalSlots, AShortMessageOfUpTo16BytesTakesOneSlotAndComesOutWhole) {
  static_assert(sizeof(ArrivalShort) * 2 == kCacheLine);
  for (uint32_t len = 0; len <= ArrivalShort::kPayloadMax; ++len) {
    auto hdr =
        short_header(0, uint16_t(1000 + len), 77 + len, 0xabcd0000u + len, -int32_t(len) - 5);
    std::vector<uint8_t> payload(len);
    for (uint32_t i = 0; i < len; ++i) payload[i] = uint8_t(len * 16 + i + 1);
    ASSERT_TRUE(goes_short(hdr.data(), len)) << len;
    ASSERT_FALSE(producer_.full(1));
    Arrival& a = producer_.next();
    write_short(reinterpret_cast<ArrivalShort&>(a), hdr.data(), payload.data(), len);
    producer_.commit(a, 1);

    const Arrival* got = consumer_.peek();
    ASSERT_NE(got, nullptr);
    const auto& e = *reinterpret_cast<const ArrivalShort*>(got);
    EXPECT_EQ(e.kind, Arrival::RecvShort);
    EXPECT_EQ(e.len, len);
    uint8_t msg[wire::kShortBytes + ArrivalShort::kPayloadMax];
    ASSERT_EQ(read_short(e, msg), wire::kShortBytes + len);
    consumer_.pop(1);
    auto want = short_header(0, uint16_t(1000 + len), wire::kUnnumbered, 0xabcd0000u + len,
                             -int32_t(len) - 5);
    EXPECT_EQ(std::vector<uint8_t>(msg, msg + wire::kShortBytes), want) << len;
    EXPECT_EQ(std::vector<uint8_t>(msg + wire::kShortBytes, msg + wire::kShortBytes + len), payload)
        << len;
  }
}

// What does not go in one slot: more than 16 bytes of payload, control credits to
// return, another message type.
TEST_F(ArrivalSlots, OnlyAShortMessageWithoutControlCreditsGoesInOneSlot) {
  EXPECT_TRUE(goes_short(short_header(0, 65535, 7, 1, 2).data(), 16));
  EXPECT_TRUE(goes_short(short_header(0, 0, 7, 1, 2).data(), 0));
  EXPECT_FALSE(goes_short(short_header(0, 0, 7, 1, 2).data(), 17));
  EXPECT_FALSE(goes_short(short_header(1, 0, 7, 1, 2).data(), 8));
  EXPECT_FALSE(goes_short(short_header(0, 0, 7, 1, 2, wire::Type::Eager).data(), 8));
  EXPECT_FALSE(goes_short(short_header(0, 0, 7, 1, 2, wire::Type::Credit).data(), 0));
}

}  // namespace
}  // namespace rdmx::shm
