// One setting's declaration: name, type, default, range or choices, help, and where its
// value is kept. Each part of rdmx declares its own settings next to the code that reads
// them (a SettingGroup); src/core/settings_registry.cpp lists the groups.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/settings.h"
#include "rdmx/rdmx.h"

namespace rdmx {

struct SettingDecl {
  const char* name;  // RDMX_*
  rdmx_setting_type_t type;
  int64_t def = 0;                       // INT: the default
  int64_t min = 0, max = 0;              // INT: accepted range, inclusive
  const char* def_text = "";             // CHOICE and TEXT: the default
  const char* const* choices = nullptr;  // CHOICE: NULL-terminated
  const char* help = "";
  uint32_t flags = 0;  // RDMX_SETTING_*
  // Where the value lives: store_int for INT, store_text for CHOICE and TEXT.
  void (*store_int)(Settings&, int64_t) = nullptr;
  void (*store_text)(Settings&, const std::string&) = nullptr;
  // TEXT: the owner's check of a value's form (null: any text), and what it accepts.
  bool (*check)(const std::string& value) = nullptr;
  // INT: a check beyond the range (null: the whole range), said in accepted.
  bool (*check_int)(int64_t value) = nullptr;
  const char* accepted = nullptr;
};

struct SettingGroup {
  const char* owner;
  std::span<const SettingDecl> decls;
};

template <auto Member>
void store_int(Settings& s, int64_t v) {
  using T = std::remove_reference_t<decltype(s.*Member)>;
  s.*Member = static_cast<T>(v);
}

template <auto Member>
void store_text(Settings& s, const std::string& v) {
  s.*Member = v;
}

}  // namespace rdmx

// The groups, each defined by its owner. Verbs and ofi declare theirs in files built
// whether or not the backend is, so every build describes the same settings.
namespace rdmx {
extern const SettingGroup kCoreSettings;       // src/core/core_settings.cpp
extern const SettingGroup kOfiSettings;        // src/fabric/ofi/ofi_settings.cpp
extern const SettingGroup kVerbsSettings;      // src/fabric/verbs/verbs_settings.cpp
extern const SettingGroup kLoopbackSettings;   // src/fabric/loopback/loopback_settings.cpp
extern const SettingGroup kShmSettings;        // src/fabric/shm/shm_settings.cpp
extern const SettingGroup kBootstrapSettings;  // src/bootstrap/bootstrap_settings.cpp
extern const SettingGroup kTopologySettings;   // src/topology/topology_settings.cpp
}  // namespace rdmx
