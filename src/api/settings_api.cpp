// The settings part of the C API: descriptors of every declared setting, the settings
// object rdmx_init takes, and the printable list.
#include <cstdio>
#include <new>
#include <string>

#include "api/context.h"
#include "api/settings_object.h"
#include "core/settings_registry.h"
#include "rdmx/rdmx.h"

namespace {

int invalid(const std::string& why) {
  rdmx::remember_init_error(why);
  return RDMX_ERR_INVALID;
}

}  // namespace

extern "C" {

size_t rdmx_setting_count(void) { return rdmx::all_settings().size(); }

int rdmx_setting_get(size_t i, rdmx_setting_desc_t* desc) {
  auto all = rdmx::all_settings();
  if (!desc || i >= all.size()) return RDMX_ERR_INVALID;
  *desc = all[i].desc;
  return RDMX_OK;
}

int rdmx_setting_find(const char* name, rdmx_setting_desc_t* desc) {
  const rdmx::SettingEntry* e = name ? rdmx::find_setting(name) : nullptr;
  if (!e || !desc) return RDMX_ERR_INVALID;
  *desc = e->desc;
  return RDMX_OK;
}

int rdmx_settings_create(rdmx_settings_t** settings) {
  if (!settings) return RDMX_ERR_INVALID;
  *settings = new (std::nothrow) rdmx_settings;
  return *settings ? RDMX_OK : RDMX_ERR_NO_MEMORY;
}

void rdmx_settings_free(rdmx_settings_t* settings) { delete settings; }

int rdmx_settings_set(rdmx_settings_t* settings, const char* name, const char* value) {
  if (!settings || !name || !value) return invalid("settings, name and value must not be NULL");
  try {
    rdmx::Settings scratch;
    std::string err;
    if (!scratch.set(name, value, err)) return invalid(err);
    settings->values.emplace_back(name, value);
    return RDMX_OK;
  } catch (const std::bad_alloc&) {
    return RDMX_ERR_NO_MEMORY;
  }
}

int rdmx_settings_set_int(rdmx_settings_t* settings, const char* name, int64_t value) {
  if (!settings || !name) return invalid("settings and name must not be NULL");
  const rdmx::SettingEntry* e = rdmx::find_setting(name);
  if (e && e->desc.type != RDMX_SETTING_INT)
    return invalid(std::string(name) + " takes text, not an integer: expected " + e->desc.accepted);
  return rdmx_settings_set(settings, name, std::to_string(value).c_str());
}

void rdmx_print_settings(void* file) {
  std::FILE* out = file ? static_cast<std::FILE*>(file) : stdout;
  for (const rdmx::SettingEntry& e : rdmx::all_settings()) {
    const rdmx_setting_desc_t& d = e.desc;
    std::fprintf(out, "%-28s default %-8s %s (%s)\n", d.name,
                 d.default_text[0] ? d.default_text : "\"\"", d.help, d.accepted);
  }
}

}  // extern "C"
