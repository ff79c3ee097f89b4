// What a network fabric tells the rails fabric (rails_fabric.h) about the devices a
// context is to use: one entry per device, each with the settings that open the fabric
// on that device alone.
#pragma once

#include <string>

#include "core/settings.h"

namespace rdmx::rails {

struct RailSpec {
  Settings settings;      // the context's settings, narrowed to this one device
  std::string device;     // its name, for messages
  unsigned tier = 0;      // 0 = among the nearest to the rank's CPUs
  bool optional = false;  // skipped (with a log line) when it cannot be opened
};

// The most devices one context uses.
inline constexpr size_t kMaxRails = 8;

}  // namespace rdmx::rails
