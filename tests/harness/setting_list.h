// Settings for test ranks as (RDMX_* name, value) pairs, and the rdmx_settings_t that
// holds them for rdmx_init.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rdmx/rdmx.h"

namespace rdmx::test {

using SettingList = std::vector<std::pair<std::string, std::string>>;

inline SettingList operator+(SettingList a, const SettingList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An rdmx_settings_t filled from a list; error() says why a value was refused.
class OwnedSettings {
 public:
  explicit OwnedSettings(const SettingList& list) {
    rdmx_settings_create(&s_);
    for (const auto& [name, value] : list)
      if (rdmx_settings_set(s_, name.c_str(), value.c_str()) != RDMX_OK && error_.empty())
        error_ = rdmx_last_error(nullptr);
  }
  ~OwnedSettings() { rdmx_settings_free(s_); }
  OwnedSettings(const OwnedSettings&) = delete;
  OwnedSettings& operator=(const OwnedSettings&) = delete;

  const rdmx_settings_t* get() const { return s_; }
  const std::string& error() const { return error_; }

 private:
  rdmx_settings_t* s_ = nullptr;
  std::string error_;
};

}  // namespace rdmx::test
