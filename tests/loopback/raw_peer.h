// A raw loopback endpoint that connects to an rdmx context with whatever private data a
// test gives it: how the engine answers requests it did not make itself.
#pragma once

#include <cstddef>

#include "protocol/connect_msg.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {

struct RawOutcome {
  bool rejected = false;
  bool established = false;
  protocol::CmMessage reply{};  // a reject's private data, parsed
};

// Connects a fresh raw endpoint to target with pdata and progresses both until the
// request is answered; the raw endpoint is closed on return.
RawOutcome raw_connect_outcome(rdmx_context_t* target, const void* pdata, size_t len);

}  // namespace rdmx::test
