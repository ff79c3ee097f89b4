// Runs one test body on N ranks of a backend, so that every suite is written once and
// instantiated per backend: "loopback" runs the ranks as threads of this process;
// multi-process backends run each rank in a child process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/setting_list.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {

class Rank {
 public:
  rdmx_context_t* ctx = nullptr;
  int rank = 0;
  int size = 0;

  // Waits for req with progress; fails the test (and returns false) after timeout_ms.
  bool wait(rdmx_request_t* req, rdmx_status_info_t* st = nullptr, int timeout_ms = 60000);
  // Waits and frees; returns the status.
  rdmx_status_info_t finish(rdmx_request_t* req, int timeout_ms = 60000);
  // All ranks arrive before any leaves; each keeps progressing meanwhile.
  void barrier();

  std::function<void()> barrier_fn;
};

// What a backend can do: tests ask for a capability instead of testing a backend's
// name (loopback, loopback-in-place, loopback-unbuffered, loopback-srq, ofi-tcp, ofi-tcp-srq,
// ofi-tcp+shm, ofi-tcp+shm-srq, ofi-verbs, ofi-verbs-srq, shm, shm-copy, verbs, verbs-srq).
struct Capabilities {
  enum class Speed : uint8_t { Low, Medium, High };
  bool in_process = false;          // the ranks are threads of this process, not processes
  bool shared_receive = false;      // receives come from a shared pool (credits: permission)
  Speed message_rate = Speed::Low;  // sizes the tests that send many messages
  Speed bandwidth = Speed::Low;     // sizes the tests that move large messages
  // Small messages ride in the fabric's own queue entries and take no receive buffer
  // (shared memory, the path between ranks of one host).
  bool small_unbuffered = false;
  // Receive buffers per connection when RDMX_CREDITS is left to the fabric.
  uint32_t credit_window = 64;
  // Bytes per rendezvous READ when RDMX_RNDV_CHUNK is left to the fabric (0: by the
  // device, as over verbs: fabric::kDefaultRndvChunk, or less on a software device).
  uint64_t read_chunk = 1 << 20;
  // The same for a message read while no other is (0: read_chunk).
  uint64_t lone_read_chunk = 0;
  // Small messages in the fabric's queue entries (small_unbuffered) take no credit: the
  // room in that queue paces them (ConnAttrs::uncredited_max).
  bool small_uncredited = false;
  // Some pairs talk through shared memory and others through the network fabric's
  // shared receive pool: connections differ in the receive memory they hold.
  bool mixed_paths = false;
  // The shared receive pool grows when the fabric reports it running low (verbs' shared
  // receive queue limit event).
  bool shared_receive_grows = false;
};

// The fabric (RDMX_FABRIC) and the settings a backend name stands for.
std::string backend_fabric(const std::string& backend);
SettingList backend_settings(const std::string& backend);

// The capabilities of a backend name (all false and Low for an unknown name).
Capabilities capabilities(const std::string& backend);

// Runs body on n ranks; settings: extra settings for every rank (and for one rank, from
// settings_for).
void run_world(const std::string& backend, int n, const std::function<void(Rank&)>& body,
               const SettingList& settings = {},
               const std::function<SettingList(int)>& settings_for = nullptr);

// The context's address, as rdmx_add_peer takes it.
std::vector<uint8_t> address_of(rdmx_context_t* ctx);

// Empty if rdmx_init(fabric, settings) succeeds for one rank, else the library's reason.
// Probed in a child process, so no device stays open in the caller.
std::string probe_init(const std::string& fabric, const SettingList& settings);

// Empty if the backend can run here, else why not (the test is skipped, loudly).
std::string backend_unavailable(const std::string& backend);

}  // namespace rdmx::test
