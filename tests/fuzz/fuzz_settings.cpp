// The settings parser: Settings::set (what every RDMX_* variable and MCA parameter goes
// through), the C API's rdmx_settings_set and rdmx_settings_set_int, the values an
// rdmx_settings_t hands rdmx_init, and the misspelt-name warnings over an environment.
//
// Input: a 64-bit integer for rdmx_settings_set_int, then NUL-separated strings, the
// first eight taken in pairs as name and value (the last pair may lack its value);
// every string is also an environment entry for the misspelling check.
#include <cstring>
#include <string>
#include <vector>

#include "api/settings_object.h"
#include "core/settings.h"
#include "core/settings_registry.h"
#include "fuzz/fuzz_input.h"
#include "rdmx/rdmx.h"

namespace {

std::vector<std::string> split_on_nul(const std::vector<uint8_t>& b) {
  std::vector<std::string> out(1);
  for (uint8_t c : b) {
    if (c == 0)
      out.emplace_back();
    else
      out.back() += char(c);
  }
  return out;
}

// One name and value through every way a value comes in; they must agree.
void set_one(const std::string& name, const std::string& value, int64_t number) {
  rdmx::Settings s;
  std::string err;
  bool ok = s.set(name, value, err);
  FUZZ_CHECK(ok == err.empty());
  const rdmx::SettingEntry* e = rdmx::find_setting(name);
  if (!e) FUZZ_CHECK(!ok && err.find(name) != std::string::npos);

  rdmx_settings_t* so = nullptr;
  FUZZ_CHECK(rdmx_settings_create(&so) == RDMX_OK);
  int rc = rdmx_settings_set(so, name.c_str(), value.c_str());
  FUZZ_CHECK((rc == RDMX_OK) == ok);
  if (rc != RDMX_OK) FUZZ_CHECK(*rdmx_last_error(nullptr) != '\0');
  rc = rdmx_settings_set_int(so, name.c_str(), number);
  bool int_ok = rc == RDMX_OK;
  if (int_ok) {
    FUZZ_CHECK(e && e->desc.type == RDMX_SETTING_INT);
    FUZZ_CHECK(number >= e->desc.min && number <= e->desc.max);
    FUZZ_CHECK(!e->decl->check_int || e->decl->check_int(number));
  } else if (e && e->desc.type == RDMX_SETTING_INT) {
    // Refused: out of the range, or inside it and not what the declaration accepts
    // (RDMX_CREDITS: -1 or 4 to 4096).
    FUZZ_CHECK(number < e->desc.min || number > e->desc.max ||
               (e->decl->check_int && !e->decl->check_int(number)));
  }
  // What the object took, rdmx_init applies without complaint.
  rdmx::Settings applied;
  FUZZ_CHECK(so->apply_to(applied, err));
  rdmx_settings_free(so);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rdmx_set_log_handler([](int, int32_t, const char*, void*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Names and values are short: longer inputs only slow the misspelling check, whose
  // edit distances grow with the square of a name's length.
  if (size > 512) return 0;
  rdmx::fuzz::Input in(data, size);
  auto number = int64_t(in.u64());
  std::vector<std::string> strings = split_on_nul(in.rest());
  for (size_t i = 0; i < strings.size() && i < 8; i += 2)
    set_one(strings[i], i + 1 < strings.size() ? strings[i + 1] : "", number);
  std::vector<const char*> env;
  for (const std::string& s : strings) env.push_back(s.c_str());
  env.push_back(nullptr);
  for (const std::string& w : rdmx::misspelt_settings(env.data()))
    FUZZ_CHECK(w.find("did you mean RDMX_") != std::string::npos);
  return 0;
}
