// What a receive asks for and what a message carries: (context id, source, tag). The
// context id and the tag together are also one 64-bit tag (the context id in the high
// half), matched under an ignore mask (libfabric's tagged matching: rdmx_irecv_tagged).
#pragma once

#include <cstdint>

#include "rdmx/rdmx.h"

namespace rdmx {

// Which index a receive lives in, by its wildcards.
enum class Wild : uint32_t {
  None = 0,    // exact (cid, source, tag)
  Tag = 1,     // (cid, source, ANY_TAG): messages with tag >= 0 from source
  Source = 2,  // (cid, ANY_SOURCE, tag)
  Both = 3,    // (cid, ANY_SOURCE, ANY_TAG): messages with tag >= 0
  Mask = 4,    // a 64-bit tag under an ignore mask, source or ANY_SOURCE: not hashed
};
constexpr uint32_t kHashedClasses = 4;  // None..Both live in hash indexes, Mask in a list

// Stored as two words, (cid, source) and (tag, wild), so that copying and comparing
// a key is two moves or two compares.
struct MatchKey {
  uint64_t lo = 0;
  uint64_t hi = 0;

  MatchKey() = default;
  constexpr explicit MatchKey(uint64_t hi_word) : hi(hi_word) {}
  MatchKey(uint32_t cid, int32_t source, int32_t tag, Wild wild)
      : lo(uint64_t(cid) | uint64_t(uint32_t(source)) << 32),
        hi(uint64_t(uint32_t(tag)) | uint64_t(wild) << 32) {}

  uint32_t cid() const { return uint32_t(lo); }
  int32_t source() const { return int32_t(uint32_t(lo >> 32)); }
  int32_t tag() const { return int32_t(uint32_t(hi)); }
  Wild wild() const { return Wild(hi >> 32); }

  // The tag word first: keys looked up one after the other differ most often there.
  bool operator==(const MatchKey& o) const { return hi == o.hi && lo == o.lo; }

  // A key no receive or message has (its class is none of Wild's): what an empty slot
  // of an index holds, so that a lookup needs no second test to tell it from a key.
  static constexpr MatchKey none() { return MatchKey(~0ull); }

  // The key under which a receive (source/tag possibly wildcards) is filed.
  static MatchKey for_receive(uint32_t cid, int32_t source, int32_t tag) {
    bool any_src = source == RDMX_ANY_SOURCE, any_tag = tag == RDMX_ANY_TAG;
    Wild w = any_src ? (any_tag ? Wild::Both : Wild::Source) : (any_tag ? Wild::Tag : Wild::None);
    return {cid, any_src ? 0 : source, any_tag ? 0 : tag, w};
  }
  // The key of a tagged receive (rdmx_irecv_tagged): every tag is exact, even
  // RDMX_ANY_TAG's value; a non-zero ignore mask makes it a Mask key, source kept.
  static MatchKey for_tagged(uint32_t cid, int32_t source, int32_t tag, uint64_t ignore) {
    if (ignore) return {cid, source, tag, Wild::Mask};
    bool any_src = source == RDMX_ANY_SOURCE;
    return {cid, any_src ? 0 : source, tag, any_src ? Wild::Source : Wild::None};
  }
  // Whether a message (cid, source, tag) matches the Mask key k with its ignore mask.
  static bool mask_matches(const MatchKey& k, uint64_t ignore, uint32_t cid, int32_t source,
                           int32_t tag) {
    uint64_t want = uint64_t(k.cid()) << 32 | uint32_t(k.tag());
    uint64_t got = uint64_t(cid) << 32 | uint32_t(tag);
    return (k.source() == RDMX_ANY_SOURCE || k.source() == source) && ((want ^ got) & ~ignore) == 0;
  }
  // The key of the given wildcard class that a message (cid, source, tag) falls under.
  static MatchKey of_message(uint32_t cid, int32_t source, int32_t tag, Wild w) {
    switch (w) {
      case Wild::None: return {cid, source, tag, w};
      case Wild::Tag: return {cid, source, 0, w};
      case Wild::Source: return {cid, 0, tag, w};
      case Wild::Both: return {cid, 0, 0, w};
      case Wild::Mask: break;  // not hashed
    }
    return {cid, source, tag, w};
  }
  // ANY_TAG never matches a negative tag.
  static bool tag_wildcard_applies(int32_t tag) { return tag >= 0; }

  // Multiplicative (Fibonacci) hashing of the two words folded into one: take the top
  // bits of the product, which spread consecutive tags and ranks evenly over the table.
  uint64_t hash() const { return (lo ^ hi) * 0x9E3779B97F4A7C15ull; }
};

// A 64-bit tag's halves: the context id (high) and the tag (low).
struct SplitTag {
  uint32_t cid;
  int32_t tag;
};
inline SplitTag split_tag(uint64_t tag) { return {uint32_t(tag >> 32), int32_t(uint32_t(tag))}; }

}  // namespace rdmx
