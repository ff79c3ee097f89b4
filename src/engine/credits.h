// Credit flow control of one link: what the peer lets this side send, what this side
// owes the peer for the receive buffers it has given back, and the batching of those
// buffers back to the fabric. A message that goes out carries everything owed.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fabric/fabric.h"

namespace rdmx::engine {

class Credits {
 public:
  static constexpr uint32_t kMaxRepostBatch = 8;

  // This side posts window regular buffers for the peer. An explicit credit message is
  // due once half of them are owed; buffers go back in batches of at most a quarter, so
  // that a peer sending into a full window always gets credits back.
  void set_window(uint32_t window) {
    window_ = window;
    threshold_ = std::max(1u, window / 2);
    repost_batch_ = std::clamp(window / 4, 1u, kMaxRepostBatch);
  }
  // What the peer's offer lets this side send. A peer receiving from a shared pool offers
  // them all the same, as permission: it holds no buffer per connection, but a sender
  // that keeps to its window leaves the pool room for the others.
  void grant(uint32_t regular, uint32_t ctrl) {
    credits_ = regular;
    ctrl_credits_ = ctrl;
  }

  uint32_t window() const { return window_; }
  uint32_t available() const { return credits_; }
  uint32_t ctrl_available() const { return ctrl_credits_; }
  uint32_t owed() const { return to_return_; }
  uint32_t ctrl_owed() const { return ctrl_to_return_; }
  bool owes() const { return to_return_ || ctrl_to_return_; }
  // An explicit credit message should go out.
  bool due() const { return due_; }

  // Credits that came with a message from the peer.
  void receive(uint32_t regular, uint32_t ctrl) {
    credits_ += regular;
    ctrl_credits_ += ctrl;
  }
  // A message went out: it paid what was owed, and took a credit of its kind (ctrl: a
  // credit message, drawn from the control credits) unless it was uncredited (the
  // fabric's own queue paced it: ConnAttrs::uncredited_max).
  void spend(bool ctrl, bool uncredited) {
    to_return_ = 0;
    ctrl_to_return_ = 0;
    due_ = false;
    if (!uncredited) {
      if (ctrl)
        --ctrl_credits_;
      else
        --credits_;
    }
  }

  // A consumed receive buffer, held until a batch is full; true when the batch should
  // go back to the fabric now (at once for a credit message's buffer).
  bool hold(const fabric::RecvBuf& b, bool ctrl) {
    held_[held_count_++] = b;
    if (ctrl || held_count_ >= repost_batch_) [[unlikely]] {
      held_ctrl_ += ctrl;
      return true;
    }
    return false;
  }
  const fabric::RecvBuf* held() const { return held_; }
  uint32_t held_count() const { return held_count_; }
  // The held buffers were posted again: the peer is owed a credit for each. True if
  // that makes an explicit credit message due.
  bool reposted() {
    ctrl_to_return_ += held_ctrl_;
    to_return_ += held_count_ - held_ctrl_;
    held_count_ = held_ctrl_ = 0;
    return check_due();
  }
  // A message that took no receive buffer (the fabric carried it in its queue entry):
  // its credit is owed back at once. True if that makes an explicit credit message due.
  bool returned(bool ctrl) {
    if (ctrl)
      ++ctrl_to_return_;
    else
      ++to_return_;
    return check_due();
  }
  // The link broke: the held buffers are not posted again, nothing is owed for them.
  void drop_held() { held_count_ = held_ctrl_ = 0; }

 private:
  // Enough is owed for an explicit credit message: it is due.
  bool check_due() {
    if (to_return_ < threshold_) return false;
    due_ = true;
    return true;
  }

  uint32_t credits_ = 0;
  uint32_t ctrl_credits_ = 0;
  uint32_t to_return_ = 0;
  uint32_t ctrl_to_return_ = 0;
  uint32_t window_ = 0;     // regular buffers posted here for the peer
  uint32_t threshold_ = 1;  // to_return_ that calls for an explicit credit message
  uint32_t repost_batch_ = 1;
  uint32_t held_count_ = 0;  // buffers in held_, not yet posted again
  uint32_t held_ctrl_ = 0;   // of which held credit messages
  bool due_ = false;
  fabric::RecvBuf held_[kMaxRepostBatch];
};

}  // namespace rdmx::engine
