#include "core/settings.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <set>

#include "core/log.h"
#include "core/settings_registry.h"

namespace rdmx {
namespace {

// Plain decimal digits, with a leading '-' only where the range has negative values:
// no spaces, signs, hexadecimal or suffixes.
bool parse_int(const std::string& v, int64_t min, int64_t max, int64_t& out) {
  if (v.empty()) return false;
  size_t i = v[0] == '-' && min < 0 ? 1 : 0;
  if (i == v.size()) return false;
  for (size_t k = i; k < v.size(); ++k)
    if (v[k] < '0' || v[k] > '9') return false;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return false;
  if (n < min || n > max) return false;
  out = n;
  return true;
}

bool in_choices(const char* const* choices, const std::string& v) {
  for (const char* const* c = choices; *c; ++c)
    if (v == *c) return true;
  return false;
}

bool apply(const SettingEntry& e, Settings& s, const std::string& v, std::string& err) {
  const SettingDecl& d = *e.decl;
  bool ok = false;
  switch (d.type) {
    case RDMX_SETTING_INT: {
      int64_t n = 0;
      ok = parse_int(v, d.min, d.max, n) && (!d.check_int || d.check_int(n));
      if (ok) d.store_int(s, n);
      break;
    }
    case RDMX_SETTING_CHOICE:
      ok = in_choices(d.choices, v);
      if (ok) d.store_text(s, v);
      break;
    case RDMX_SETTING_TEXT:
      ok = !d.check || d.check(v);
      if (ok) d.store_text(s, v);
      break;
  }
  if (!ok)
    err = std::string(d.name) +
          (d.flags & RDMX_SETTING_SECRET ? " (its value not shown)" : "='" + v + "'") +
          " is not accepted: expected " + e.desc.accepted;
  return ok;
}

// The setting a misspelt name most likely meant: of those whose name starts with it or
// that it starts with ("RDMX_EAGER", "RDMX_BOOTSTRAP_TIMEOUT"), the nearest; else the
// nearest of all if within three edits.
const SettingEntry* meant(const std::string& name) {
  size_t distance = 0;
  const SettingEntry* near = closest_setting(name, &distance);
  const SettingEntry* best = nullptr;
  size_t best_d = SIZE_MAX;
  for (const SettingEntry& e : all_settings()) {
    std::string known = e.desc.name;
    if (name.size() <= 5 || !(known.starts_with(name) || name.starts_with(known))) continue;
    size_t d = known.size() > name.size() ? known.size() - name.size() : name.size() - known.size();
    if (d < best_d) best = &e, best_d = d;
  }
  if (best) return best;
  // Up to three edits, fewer for short names: RDMX_VM (the VM tier's) is not RDMX_SHM.
  size_t allowed = std::max<size_t>(1, std::min<size_t>(3, (name.size() - 5) / 3));
  return distance <= allowed ? near : nullptr;
}

void warn_misspelt_once() {
  static std::mutex mu;
  static std::set<std::string> warned;
  for (const std::string& w : misspelt_settings(environ)) {
    std::lock_guard<std::mutex> g(mu);
    if (warned.insert(w).second) log_message(LogLevel::Warn, -1, "%s", w.c_str());
  }
}

}  // namespace

Settings::Settings() {
  for (const SettingEntry& e : all_settings()) {
    const SettingDecl& d = *e.decl;
    if (d.type == RDMX_SETTING_INT)
      d.store_int(*this, d.def);
    else
      d.store_text(*this, d.def_text);
  }
}

bool Settings::set(const std::string& name, const std::string& value, std::string& err) {
  if (const SettingEntry* e = find_setting(name)) return apply(*e, *this, value, err);
  err = "unknown setting '" + name + "'";
  if (const SettingEntry* e = meant(name))
    err += std::string(" (did you mean ") + e->desc.name + "?)";
  return false;
}

bool Settings::load_from_env(std::string& err) {
  warn_misspelt_once();
  for (const SettingEntry& e : all_settings()) {
    const char* v = std::getenv(e.desc.name);
    if (v && !apply(e, *this, v, err)) return false;
  }
  return true;
}

std::vector<std::string> misspelt_settings(const char* const* env) {
  std::vector<std::string> out;
  for (const char* const* p = env; p && *p; ++p) {
    std::string item = *p;
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (!name.starts_with("RDMX_") || find_setting(name)) continue;
    if (const SettingEntry* e = meant(name))
      out.push_back(name + " is set but is not an rdmx setting; did you mean " + e->desc.name +
                    "?");
  }
  return out;
}

}  // namespace rdmx
