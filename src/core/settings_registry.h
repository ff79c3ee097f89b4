// Every declared setting, in one list built from the owners' groups, with what the C API
// and the error messages need: the descriptor, the accepted values in words, the
// closest name to a misspelt one.
#pragma once

#include <span>
#include <string>

#include "core/setting_decl.h"
#include "rdmx/rdmx.h"

namespace rdmx {

struct SettingEntry {
  const SettingDecl* decl;
  rdmx_setting_desc_t desc;  // strings owned by the registry, valid for the process
};

// All settings: core first, then each owner's, in declaration order.
std::span<const SettingEntry> all_settings();
// The setting called name, or null.
const SettingEntry* find_setting(const std::string& name);
// The declared name nearest to name by edit distance, and that distance.
const SettingEntry* closest_setting(const std::string& name, size_t* distance);

}  // namespace rdmx
