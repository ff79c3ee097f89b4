// The randomized stress of the engine suites (stress.cpp).
#pragma once

#include "harness/world.h"

namespace rdmx::test {

// Sends per_pair planned messages to every other rank and receives as many from each,
// through receives of random shape (wildcard source and tag among them), checking each
// message's source, tag, length, payload and order. sync: one message in eight is a
// synchronous send.
void stress(Rank& r, int per_pair, bool sync = false);

}  // namespace rdmx::test
