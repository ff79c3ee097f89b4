// What an rdmx_settings_t is: values checked when set, applied by rdmx_init over the
// environment in the order they were set.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/settings.h"

struct rdmx_settings {
  std::vector<std::pair<std::string, std::string>> values;  // name, value as text

  bool apply_to(rdmx::Settings& s, std::string& err) const {
    for (const auto& [name, value] : values)
      if (!s.set(name, value, err)) return false;
    return true;
  }
};
