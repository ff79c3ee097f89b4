// Runs a test body on n ranks, one child process each (see world.h).
#pragma once

#include <functional>
#include <string>

#include "harness/world.h"

namespace rdmx::test {

// settings(rank): that rank's settings.
void run_processes(int n, const std::string& fabric,
                   const std::function<SettingList(int)>& settings,
                   const std::function<void(Rank&)>& body, int timeout_s = 300);

}  // namespace rdmx::test
