// The settings part of the C API: descriptors of every declared setting, and the
// settings object rdmx_init takes.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rdmx/rdmx.h"

namespace {

TEST(SettingDescriptors, DescribeEverySettingOnce) {
  size_t n = rdmx_setting_count();
  ASSERT_GE(n, 19u);
  std::set<std::string> names, keys;
  for (size_t i = 0; i < n; ++i) {
    rdmx_setting_desc_t d;
    ASSERT_EQ(rdmx_setting_get(i, &d), RDMX_OK);
    EXPECT_TRUE(names.insert(d.name).second) << d.name << " is declared twice";
    EXPECT_TRUE(keys.insert(d.key).second) << d.key;
    std::string up = d.key;
    for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ("RDMX_" + up, d.name);
    EXPECT_NE(std::string(d.help), "") << d.name;
    EXPECT_NE(std::string(d.accepted), "") << d.name;
    EXPECT_NE(std::string(d.owner), "") << d.name;
    if (d.type == RDMX_SETTING_INT && !(d.flags & RDMX_SETTING_NO_DEFAULT)) {
      EXPECT_EQ(std::to_string(d.default_int), d.default_text) << d.name;
      EXPECT_LE(d.min, d.default_int) << d.name;
      EXPECT_GE(d.max, d.default_int) << d.name;
    }
    EXPECT_EQ(d.choices != nullptr, d.type == RDMX_SETTING_CHOICE) << d.name;
  }
  rdmx_setting_desc_t d;
  EXPECT_EQ(rdmx_setting_get(n, &d), RDMX_ERR_INVALID);
}

TEST(SettingDescriptors, CarryTypedDefaultsRangesAndChoices) {
  rdmx_setting_desc_t d;
  ASSERT_EQ(rdmx_setting_find("RDMX_EAGER_LIMIT", &d), RDMX_OK);
  EXPECT_EQ(d.type, RDMX_SETTING_INT);
  EXPECT_EQ(d.default_int, -1);  // the fabric's choice
  EXPECT_STREQ(d.default_text, "-1");
  EXPECT_EQ(d.min, -1);
  EXPECT_EQ(d.max, 1 << 20);
  EXPECT_STREQ(d.key, "eager_limit");
  EXPECT_STREQ(d.owner, "core");

  ASSERT_EQ(rdmx_setting_find("RDMX_FABRIC", &d), RDMX_OK);
  EXPECT_EQ(d.type, RDMX_SETTING_CHOICE);
  EXPECT_STREQ(d.default_text, "auto");
  std::string all;
  for (const char* const* c = d.choices; *c; ++c) all += std::string(*c) + " ";
  EXPECT_EQ(all, "auto loopback verbs ofi shm ");

  ASSERT_EQ(rdmx_setting_find("RDMX_BOOTSTRAP", &d), RDMX_OK);
  EXPECT_EQ(d.type, RDMX_SETTING_TEXT);
  EXPECT_STREQ(d.owner, "bootstrap");
  EXPECT_TRUE(d.flags & RDMX_SETTING_STANDALONE);
  EXPECT_STREQ(d.default_text, "");

  ASSERT_EQ(rdmx_setting_find("RDMX_VERBS_DEVICE", &d), RDMX_OK);  // in every build
  EXPECT_STREQ(d.owner, "verbs");
  EXPECT_EQ(rdmx_setting_find("RDMX_NO_SUCH", &d), RDMX_ERR_INVALID);
}

TEST(SettingsObject, ChecksEachValueWhenSet) {
  rdmx_settings_t* s = nullptr;
  ASSERT_EQ(rdmx_settings_create(&s), RDMX_OK);
  EXPECT_EQ(rdmx_settings_set(s, "RDMX_SRQ", "2"), RDMX_ERR_INVALID);
  EXPECT_STREQ(rdmx_last_error(nullptr),
               "RDMX_SRQ='2' is not accepted: expected an integer from -1 to 1");
  EXPECT_EQ(rdmx_settings_set_int(s, "RDMX_CREDITS", 3), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("RDMX_CREDITS='3'"), std::string::npos);
  EXPECT_EQ(rdmx_settings_set_int(s, "RDMX_FABRIC", 1), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("takes text"), std::string::npos);
  EXPECT_EQ(rdmx_settings_set(s, "RDMX_CREDIT", "8"), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("did you mean RDMX_CREDITS?"),
            std::string::npos);
  EXPECT_EQ(rdmx_settings_set(s, "RDMX_FABRIC", "infiniband"), RDMX_ERR_INVALID);
  EXPECT_EQ(rdmx_settings_set(s, nullptr, "1"), RDMX_ERR_INVALID);
  rdmx_settings_free(s);
}

TEST(SettingsObject, AppliesOverTheEnvironmentAtInit) {
  setenv("RDMX_SRQ", "1", 1);
  rdmx_settings_t* s = nullptr;
  ASSERT_EQ(rdmx_settings_create(&s), RDMX_OK);
  ASSERT_EQ(rdmx_settings_set(s, "RDMX_SRQ", "0"), RDMX_OK);  // the object wins
  ASSERT_EQ(rdmx_settings_set_int(s, "RDMX_CREDITS", 8), RDMX_OK);
  ASSERT_EQ(rdmx_settings_set(s, "RDMX_FABRIC", "verbs"), RDMX_OK);
  rdmx_init_params_t p{0, 1, "loopback", 0, s};  // params.fabric wins over the object
  rdmx_context_t* c = nullptr;
  ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK) << rdmx_last_error(nullptr);
  EXPECT_STREQ(rdmx_fabric_name(c), "loopback");
  rdmx_finalize(c);
  unsetenv("RDMX_SRQ");
  rdmx_settings_free(s);
}

}  // namespace
