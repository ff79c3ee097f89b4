#include "core/settings_registry.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <vector>

namespace rdmx {
namespace {

const SettingGroup* const kGroups[] = {&kCoreSettings,     &kOfiSettings,      &kVerbsSettings,
                                       &kTopologySettings, &kLoopbackSettings, &kShmSettings,
                                       &kBootstrapSettings};

std::string accepted_text(const SettingDecl& d) {
  switch (d.type) {
    case RDMX_SETTING_INT:
      if (d.accepted) return d.accepted;
      return "an integer from " + std::to_string(d.min) + " to " + std::to_string(d.max);
    case RDMX_SETTING_CHOICE: {
      std::string s = "one of ";
      for (const char* const* c = d.choices; *c; ++c)
        s += (c == d.choices ? "" : "|") + std::string(*c);
      return s;
    }
    case RDMX_SETTING_TEXT: return d.accepted ? d.accepted : "any text";
  }
  return "";
}

struct Registry {
  std::deque<std::string> strings;  // stable addresses for the descriptors
  std::vector<SettingEntry> entries;

  const char* keep(std::string s) { return strings.emplace_back(std::move(s)).c_str(); }

  Registry() {
    for (const SettingGroup* g : kGroups) {
      for (const SettingDecl& d : g->decls) {
        std::string key = std::string(d.name).substr(5);  // after "RDMX_"
        for (char& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
        rdmx_setting_desc_t desc{};
        desc.name = d.name;
        desc.key = keep(key);
        desc.type = d.type;
        desc.default_int = d.type == RDMX_SETTING_INT ? d.def : 0;
        if (d.flags & RDMX_SETTING_NO_DEFAULT)
          desc.default_text = "";
        else if (d.type == RDMX_SETTING_INT)
          desc.default_text = keep(std::to_string(d.def));
        else
          desc.default_text = d.def_text;
        desc.min = d.min;
        desc.max = d.max;
        desc.choices = d.type == RDMX_SETTING_CHOICE ? d.choices : nullptr;
        desc.accepted = keep(accepted_text(d));
        desc.help = d.help;
        desc.owner = g->owner;
        desc.flags = d.flags;
        entries.push_back({&d, desc});
      }
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::span<const SettingEntry> all_settings() { return registry().entries; }

const SettingEntry* find_setting(const std::string& name) {
  for (const SettingEntry& e : all_settings())
    if (name == e.desc.name) return &e;
  return nullptr;
}

const SettingEntry* closest_setting(const std::string& name, size_t* distance) {
  const SettingEntry* best = nullptr;
  size_t best_d = SIZE_MAX;
  for (const SettingEntry& e : all_settings()) {
    size_t d = edit_distance(name, e.desc.name);
    if (d < best_d) best = &e, best_d = d;
  }
  if (distance) *distance = best_d;
  return best;
}

}  // namespace rdmx
