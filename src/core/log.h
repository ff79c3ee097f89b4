// Logging, tagged with the rank: to the host's handler (rdmx_set_log_handler) where one
// is set, else to stderr. An error is logged once, where it is first understood, with
// the peer and the cause in words.
#pragma once

#include <cstdint>

namespace rdmx {

enum class LogLevel : int { Error = 0, Warn = 1, Info = 2, Debug = 3 };

void set_log_level(int level);
bool log_enabled(LogLevel level);
void log_message(LogLevel level, int32_t rank, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define RDMX_LOG(level, rank, ...)                                                 \
  do {                                                                             \
    if (::rdmx::log_enabled(level)) ::rdmx::log_message(level, rank, __VA_ARGS__); \
  } while (0)

}  // namespace rdmx
