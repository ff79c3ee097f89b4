// What the bootstrap tests share: ranks run as threads of the test, and raw
// connections to rank 0 that say what a test wants them to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace rdmx::bootstrap {

uint16_t free_port();
Config config(int rank, int size, uint16_t port, uint64_t timeout_ms);

struct Outcome {
  int rc = -1;
  std::string err;
  uint64_t key = 0;
  std::vector<std::vector<uint8_t>> table;
};

// One rank: join, then exchange a blob that says who it is.
Outcome run_rank(const Config& c);

// A TCP connection to rank 0's port on this host (retried while it does not listen
// yet), or -1.
int raw_connect(uint16_t port);
// Sends a Join frame (magic "RXBS", type 1, rank, size) and payload after it.
void send_join(int fd, int32_t rank, int32_t size, uint32_t magic = 0x53425852,
               const std::vector<uint8_t>& payload = {});

}  // namespace rdmx::bootstrap
