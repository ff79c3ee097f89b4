// Where a link is in its life, Connecting -> Open -> Closed (or Connecting -> Closed),
// with Open -> Closing -> Open or Closed while an idle link is closed by agreement
// (engine_close.h), and what that allows: the per-message fast paths apply only while it
// is ready (Open, and this side may send: the passive side only after the active side's
// first message). A Closing link takes messages but sends none of its own.
#pragma once

#include <cstdint>

namespace rdmx::engine {

class LinkState {
 public:
  bool connecting() const { return phase_ == Phase::Connecting; }
  bool open() const { return phase_ == Phase::Open; }
  bool closing() const { return phase_ == Phase::Closing; }
  bool closed() const { return phase_ == Phase::Closed; }
  bool may_send() const { return may_send_; }
  // Open and may send: the fast paths apply.
  bool ready() const { return ready_; }
  // Eager payloads shorter than this may go inline on isend's fast path (0 unless ready).
  uint64_t inline_eager_below() const { return inline_eager_below_; }

  // Connecting -> Open; inline_below: what inline_eager_below() is once ready.
  void set_open(uint64_t inline_below) {
    phase_ = Phase::Open;
    inline_below_ = inline_below;
    update();
  }
  // The fast path's limit changes while open (the peer asked for rendezvous and stopped).
  void set_inline_below(uint64_t inline_below) {
    inline_below_ = inline_below;
    update();
  }
  // This side may send: the active side from the start, the passive side once the
  // active side has spoken.
  void allow_send() {
    may_send_ = true;
    update();
  }
  // Open -> Closing: this side proposed to close; nothing more goes on the link.
  void set_closing() {
    phase_ = Phase::Closing;
    ready_ = false;
    inline_eager_below_ = 0;
  }
  // Closing -> Open: the peer did not agree (or spoke first).
  void resume() {
    phase_ = Phase::Open;
    update();
  }
  // Any -> Closed, for good.
  void set_closed() {
    phase_ = Phase::Closed;
    ready_ = false;
    inline_eager_below_ = 0;
  }

 private:
  enum class Phase : uint8_t { Connecting, Open, Closing, Closed };
  void update() {
    ready_ = phase_ == Phase::Open && may_send_;
    if (ready_) inline_eager_below_ = inline_below_;
  }
  Phase phase_ = Phase::Connecting;
  bool may_send_ = false;
  bool ready_ = false;
  uint64_t inline_eager_below_ = 0;
  uint64_t inline_below_ = 0;
};

}  // namespace rdmx::engine
