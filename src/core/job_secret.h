// The job secret in its text form: the hex digits of RDMX_JOB_SECRET, as rdmx_launch
// makes them for each job and every rank reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rdmx {

// The bytes of a secret written in hex (the setting's check has accepted its form).
std::vector<uint8_t> secret_from_hex(const std::string& hex);
// A fresh secret of `bytes` random bytes, in hex; "" if the system has no randomness.
std::string random_secret_hex(size_t bytes);

}  // namespace rdmx
