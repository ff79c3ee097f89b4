// A shared-memory connection and a connection request, as this process keeps them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "container/ring.h"
#include "fabric/fabric.h"
#include "fabric/shm/shm_layout.h"
#include "fabric/shm/shm_queue.h"
#include "fabric/shm/shm_segment.h"

namespace rdmx::shm {

// What the fabric's epoll set points at: the listener, a request or a connection.
struct Watch {
  enum Kind : uint8_t { Listener, Request, Connection };
  Kind kind;
};

// The frames of the connection handshake, one per message on the socket.
struct Frame {
  enum Kind : uint32_t { Connect = 1, Accept = 2, Reject = 3 };
  static constexpr uint32_t kMagic = 0x464d5852;  // "RXMF"
  uint32_t magic;
  uint32_t kind;
  uint32_t version;
  uint32_t rd_atomic;  // Connect: the most READs the sender may have in flight; Accept: agreed
  uint32_t pdata_len;
  uint32_t reserved;
  uint64_t probe_addr;  // where the sender's segment starts in its own address space
  uint8_t pdata[196];
};

struct ConnRequest : Watch {
  int sock = -1;
  pid_t pid = 0;
  Segment peer_segment;  // the requester's inbound segment
  Frame frame{};
  bool received = false;  // the Connect frame has arrived
  std::chrono::steady_clock::time_point since;
};

// One receive buffer this side posted, until the peer fills it.
struct PostedBuf {
  uint64_t wr;
  uint8_t* buf;
  uint32_t len;
  bool live;
};

// A READ served by copies through the staging area (when cross-memory reads are not
// allowed): issued in pieces of one staging slot each.
struct CopyRead {
  uint8_t* local;
  uint64_t raddr;
  uint64_t len;
  uint64_t issued;
  uint64_t done;
  uint64_t wr;
  bool failed;
};

// A split read this side started (shm_split_read.cpp), by its entry in this side's
// segment: Open until both parts are copied, Closing until the peer lets go of the entry.
struct SplitState {
  enum Kind : uint8_t { Free, Open, Closing };
  Kind kind = Free;
  uint64_t wr = 0;
  uint64_t mine = 0;       // bytes this side copied
  uint64_t seq = 0;        // in the order the reads started
  bool back_mine = false;  // this side claimed the back half
};

struct Conn : Watch {
  enum class State : uint8_t { Idle, Connecting, Established, Broken };
  void* user = nullptr;
  State state = State::Idle;
  bool active = false;
  bool roomy = true;  // one of the first connections: the roomy window (Fabric::credit_window)
  bool cma = false;
  bool ending = false;  // the peer's socket ended: fail once its arrivals are taken  // READs by
                        // process_vm_readv; else by copies through the segments
  uint32_t serial = 0;
  int sock = -1;
  pid_t pid = 0;  // the peer, as this process's pid namespace numbers it
  fabric::ConnAttrs attrs{};
  std::string peer_name;  // active side: the listener to connect to

  Segment in;   // this side's inbound segment: the peer writes, this side reads
  Segment out;  // the peer's inbound segment: this side writes
  SegmentHeader* in_h = nullptr;
  SegmentHeader* out_h = nullptr;
  // The peer's layout, copied once it is checked (the peer could change its header).
  SegmentHeader out_layout{};

  SeqProducer<PostedRecv> posted;       // into in: buffers for the peer to fill
  SeqConsumer<Arrival> arrivals;        // from in
  Consumer<ReadRequest> read_reqs;      // from in: the peer reads this side's memory
  SeqConsumer<PostedRecv> peer_posted;  // from out
  SeqProducer<Arrival> peer_arrivals;   // into out
  Producer<ReadRequest> peer_reads;     // into out
  std::vector<PostedBuf> tokens;        // posted buffers by the token the peer echoes
  std::vector<uint32_t> free_tokens;

  // Copy reads: slots of this side's staging area, and the reads using them.
  std::vector<CopyRead> reads;  // by read id
  std::vector<uint32_t> free_reads;
  Ring<uint32_t> read_queue{16};   // reads with pieces still to issue
  std::vector<int64_t> slot_read;  // read id per staging slot, -1 if free
  std::vector<uint64_t> slot_offset;
  std::vector<uint32_t> free_slots;
  bool staging_reserved = false;  // the staging area's memory is allocated (reserve_staging)

  // Split reads: the entries in this side's segment (this side reads) and in the peer's
  // (the peer reads this side's memory).
  SplitRead* splits = nullptr;
  std::vector<SplitState> split_state;
  uint32_t splits_open = 0;
  uint64_t split_seq = 0;         // reads started
  uint64_t split_oldest = 0;      // the seq of the oldest open read, when last looked at
  uint64_t split_since_ns = 0;    // since when it has been the oldest
  bool split_peer_serves = true;  // the peer copied the last back part it could have
  SplitRead* peer_splits = nullptr;
  uint32_t peer_splits_cap = 0;

  // Sends since the last arrival from the peer: more than one, and this side is
  // streaming rather than answering.
  uint32_t sends_in_row = 0;
  // Slots a refused send needs in the peer's arrivals (Fabric::queue_full); 0: none.
  uint32_t room_wanted = 0;

  bool established() const { return state == State::Established; }
};

}  // namespace rdmx::shm
