// Writes the seed inputs of every fuzz target into DIR/<target>/ (make fuzz-seeds: the
// checked-in tests/fuzz/corpus/), built with rdmx's own encoders so that they follow
// the wire formats when those change. Each seed is valid or nearly so: the fuzzer
// starts from the shapes the parsers accept and mutates from there. Files of other
// names in those directories (inputs that once found a bug) are left alone.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap_proof.h"
#include "bootstrap/bootstrap_socket.h"
#include "config.h"
#include "fuzz/engine_program.h"
#include "protocol/connect_msg.h"
#include "protocol/wire.h"
#if RDMX_BUILD_OFI
#include "fabric/ofi/ofi_util.h"
#endif

namespace rdmx::fuzz {
namespace {

using Bytes = std::vector<uint8_t>;

std::string g_dir;

void write(const std::string& target, const std::string& name, const Bytes& b) {
  std::string dir = g_dir + "/" + target;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    std::perror(dir.c_str());
    std::exit(1);
  }
  std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
}

template <class T>
Bytes bytes_of(const T& v) {
  Bytes b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes text(const char* s) { return Bytes(s, s + std::strlen(s)); }

void connect_msg() {
  using namespace protocol;
  auto offer = [](CmKind k) {
    CmMessage m = make_cm(k, 1, 0);
    fresh_nonce(m);
    seal(m, job_key_mac_key(0x1234), nullptr);
    m.credits = 64;
    m.ctrl_credits = 4;
    m.eager_limit = 8192;
    m.flags = kFlowControl;
    return m;
  };
  const char* t = "connect_msg";
  write(t, "connect", cat({0}, bytes_of(offer(CmKind::Connect))));
  write(t, "accept", cat({1}, bytes_of(offer(CmKind::Accept))));
  CmMessage r = make_cm(CmKind::Reject, 0, 1);
  r.reason = RejectReason::Duplicate;
  write(t, "reject", cat({2}, bytes_of(r)));
  Bytes padded = bytes_of(offer(CmKind::Connect));
  padded.resize(56);  // as rdma_cm delivers it
  write(t, "connect-padded", cat({0}, padded));
  Bytes cut = bytes_of(offer(CmKind::Connect));
  cut.resize(20);
  write(t, "connect-cut", cat({0}, cut));
  CmMessage m = offer(CmKind::Connect);
  m.length = 56;
  write(t, "connect-long", cat({0}, bytes_of(m)));
  m = offer(CmKind::Connect);
  m.version = 1;
  write(t, "connect-v1", cat({0}, bytes_of(m)));
  write(t, "foreign", cat({0}, text("GET / HTTP/1.1\r\n")));
}

void address() {
  const char* t = "address";
  const char* names[] = {"loopback", "shm", "ofi", "verbs", "composite"};
  for (uint8_t k = 0; k < 5; ++k) {
    std::string n = names[k];
    write(t, n + "-own", {k, 1});                              // the fabric's own address
    write(t, n + "-flipped", {k, 1, 0, 0, 0, 0, 0x01, 0x80});  // one with two bits changed
    write(t, n + "-junk", cat({k, 0}, text("not an address")));
  }
#if RDMX_BUILD_OFI
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(4711);
  sin6.sin6_addr = in6addr_loopback;
  write(t, "ofi-ipv6", cat({2, 0}, ofi::encode_address("tcp", &sin6, sizeof sin6)));
#endif
}

void settings() {
  const char* t = "settings";
  auto seed = [t](const char* name, int64_t number, const Bytes& pairs) {
    write(t, name, cat(bytes_of(number), pairs));
  };
  seed("eager-limit", 8192, Bytes{'R', 'D', 'M', 'X', '_', 'E', 'A', 'G', 'E', 'R', '_',
                                  'L', 'I', 'M', 'I', 'T', 0,   '6', '5', '5', '3', '6'});
  auto pairs = [](std::initializer_list<const char*> strings) {
    Bytes b;
    for (const char* s : strings) {
      if (!b.empty()) b.push_back(0);
      b = cat(b, text(s));
    }
    return b;
  };
  seed("fabric-and-shm", 0, pairs({"RDMX_FABRIC", "loopback", "RDMX_SHM", "off"}));
  seed("bootstrap", 0, pairs({"RDMX_BOOTSTRAP", "[::1]:4711", "RDMX_RANK", "3"}));
  seed("negative", -1, pairs({"RDMX_RNR_RETRY", "-1", "RDMX_CREDITS", "-4"}));
  seed("not-decimal", 4096, pairs({"RDMX_CREDITS", "0x10", "RDMX_VERBOSE", " 1"}));
  seed("misspelt", 1, pairs({"RDMX_EAGERLIMIT", "1", "RDMX_SRQQ", "1", "RDMX_VM_DIR", "/"}));
  seed("text", 0, pairs({"RDMX_SHM_DOMAIN", "a", "RDMX_OFI_PROVIDER", "verbs"}));
}

// The bytes send_frame puts on the wire for one frame.
Bytes frame(bootstrap::FrameType type, int32_t rank, int32_t size, const Bytes& payload) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::exit(1);
  std::string err;
  auto d = bootstrap::Clock::now() + std::chrono::seconds(1);
  if (!bootstrap::send_frame(sv[0], type, rank, size, payload.data(), payload.size(), d, err))
    std::exit(1);
  Bytes out(bootstrap::kJoinBytes + payload.size());
  if (::recv(sv[1], out.data(), out.size(), MSG_WAITALL) != ssize_t(out.size())) std::exit(1);
  ::close(sv[0]);
  ::close(sv[1]);
  return out;
}

void bootstrap_seeds() {
  using bootstrap::FrameType;
  const char* t = "bootstrap";
  // Lobby: byte 1 is the job size less 2.
  write(t, "lobby-steals-rank-1", cat({0, 0}, frame(FrameType::Join, 1, 2, {})));
  write(t, "lobby-wrong-size", cat({0, 1}, frame(FrameType::Join, 2, 4, {})));
  write(t, "lobby-rank-0", cat({0, 1}, frame(FrameType::Join, 0, 3, {})));
  write(t, "lobby-http", cat({0, 0}, text("GET / HTTP/1.1\r\n\r\n")));
  Bytes part = frame(FrameType::Join, 1, 2, {});
  part.resize(11);
  write(t, "lobby-partial", cat({0, 0}, part));
  // With bit 7 of that byte the job has a secret: the stranger has no proof, or a wrong
  // one, or the challenge's bytes back.
  write(t, "lobby-secret-no-proof", cat({0, 0x80}, frame(FrameType::Join, 1, 2, {})));
  write(t, "lobby-secret-wrong-proof",
        cat({0, 0x81}, frame(FrameType::Join, 1, 3, Bytes(bootstrap::kProofBytes, 7))));
  write(t, "lobby-secret-challenge-back",
        cat({0, 0x80}, frame(FrameType::Challenge, 0, 2, Bytes(bootstrap::kChallengeBytes, 1))));
  // Frames: byte 1 is the table's rank count less 1.
  uint64_t key = 0x0123456789abcdef;
  Bytes table = bootstrap::encode_table({text("addr-0"), text("address-1"), {}});
  write(t, "frames-key-table",
        cat(cat({1, 2}, frame(FrameType::Key, 0, 3, bytes_of(key))),
            frame(FrameType::Table, 0, 3, table)));
  Bytes cut = table;
  cut.resize(cut.size() - 3);
  write(t, "frames-table-cut", cat({1, 2}, frame(FrameType::Table, 0, 3, cut)));
  write(t, "frames-fail", cat({1, 0}, frame(FrameType::Fail, 0, 2, text("rank 3 gave up"))));
  Bytes big = frame(FrameType::Address, 1, 2, text("0123456789"));
  big.resize(big.size() - 4);  // ends inside the payload
  write(t, "frames-ends-early", cat({1, 0}, big));
  // host:port: then RDMX_RANK + 1 and RDMX_SIZE + 1 (0: unset).
  write(t, "host-port", cat({2, 1, 3}, text("node7:4711")));
  write(t, "host-port-v6", cat({2, 2, 3}, text("[fe80::1]:65535")));
  write(t, "host-port-bad", cat({2, 1, 3}, text("node7:0x10")));
  write(t, "host-port-unset", cat({2, 0, 0}, text("[::1")));
}

// A header from rank 1 (the fixes give it the right sequence number).
wire::Header header(wire::Type t, uint64_t len, int32_t tag, uint8_t flags = 0) {
  wire::Header h{};
  h.length = len;
  h.source = 1;
  h.tag = tag;
  h.version_type = wire::Header::make_vt(t);
  h.flags = flags;
  return h;
}

// A Short message from rank 1: the header's first 16 bytes, then the payload.
Bytes short_eager(int32_t tag, size_t n) {
  Bytes b = bytes_of(header(wire::Type::Short, 0, tag));
  b.resize(wire::kShortBytes + n, 0x5a);
  return b;
}

Bytes eager(int32_t tag, size_t n, uint8_t flags = 0) {
  Bytes b = bytes_of(header(wire::Type::Eager, n, tag, flags));
  if (flags & wire::kSync) b = cat(b, bytes_of(uint64_t(7)));
  b.resize(b.size() + n, 0x5a);
  return b;
}

void engine_recv() {
  const char* t = "engine_recv";
  constexpr uint8_t kFixAll = kFixSeq | kFixSource | kFixVersion;
  // Rank 1 connected, so it speaks first: until it has, the context sends nothing.
  const Bytes hello = bytes_of(header(wire::Type::Hello, 0, 0));
  constexpr uint8_t kTag0 = 2, kTag1 = 3;  // pick_tag
  constexpr uint8_t kFrom1 = 1, kAny = 0;  // pick_source
  Setup s;
  write(t, "eager-expected",
        ProgramWriter(s)
            .recv(kFrom1, 0, kTag0, 64)
            .raw_send(kFixAll | kFixLength, eager(0, 16))
            .simple(Op::Test)
            .bytes());
  write(t, "short-expected-and-unexpected",
        ProgramWriter(s)
            .recv(kFrom1, 0, kTag0, 64)
            .raw_send(kFixAll, short_eager(0, 8))
            .raw_send(kFixAll, short_eager(1, 36))
            .raw_send(kFixAll, short_eager(0, 0))
            .probe(kAny, 0, kTag1)
            .recv(kAny, 0, kTag0, 4)
            .simple(Op::Test)
            .bytes());
  write(t, "tagged-masks",
        ProgramWriter(s)
            .tagged(kAny, 0, kTag0, 1, 64)  // the low byte ignored: takes tag 1's message
            .raw_send(kFixAll, short_eager(1, 8))
            .raw_send(kFixAll, short_eager(0, 8))
            .raw_send(kFixAll | kFixLength, eager(1, 40))
            .tagged(kFrom1, 0, kTag0, 0, 8)                // exact: tag 0
            .tagged(kAny, 0, kTag0, 3 | kTaggedProbe, 64)  // anything: tag 1's eager one
            .simple(Op::Test)
            .bytes());
  write(t, "eager-unexpected-probe",
        ProgramWriter(s)
            .raw_send(kFixAll, eager(1, 40))
            .probe(kAny, 0, kTag1)
            .simple(Op::Test)
            .bytes());
  write(t, "eager-sync",
        ProgramWriter(s)
            .raw_send(kFixAll, eager(0, 8, wire::kSync))
            .recv(kAny, 0, kTag0, 8)
            .progress(4)
            .simple(Op::Test)
            .bytes());
  wire::RtsBody rts{0, 0, 99};
  Bytes rts_msg = cat(bytes_of(header(wire::Type::Rts, 3000, 0)), bytes_of(rts));
  write(t, "rts-expected",
        ProgramWriter(s)
            .recv(kFrom1, 0, kTag0, 4096)
            .raw_send(kFixAll | kFixRts, rts_msg)
            .progress(8)
            .simple(Op::Test)
            .bytes());
  write(t, "rts-unexpected-truncated",
        ProgramWriter(s)
            .raw_send(kFixAll | kFixRts, rts_msg)
            .recv(kAny, 0, kTag0, 1000)
            .progress(8)
            .simple(Op::Test)
            .bytes());
  write(
      t, "rts-bad-key",
      ProgramWriter(s).recv(kFrom1, 0, kTag0, 4096).raw_send(kFixAll, rts_msg).progress(4).bytes());
  Bytes fin = cat(bytes_of(header(wire::Type::Fin, 0, 0)), bytes_of(uint64_t(0)));
  write(t, "fin-for-rendezvous-send",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .send(0, 0, kTag0, 2000)
            .progress(2)
            .raw_send(kFixAll | kFixRef, fin)
            .simple(Op::Test)
            .bytes());
  write(t, "fin-unknown-request",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .send(0, 0, kTag0, 2000)
            .raw_send(kFixAll, fin)
            .bytes());
  Bytes ack = cat(bytes_of(header(wire::Type::SyncAck, 0, 0)), bytes_of(uint64_t(0)));
  write(t, "sync-ack",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .send(2, 0, kTag0, 16)
            .progress(2)
            .raw_send(kFixAll | kFixRef, ack)
            .simple(Op::Test)
            .bytes());
  wire::Header credit = header(wire::Type::Credit, 0, 0);
  credit.credits = 3;
  credit.ctrl_credits = 1;
  write(t, "hello-credit-eager",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .raw_send(kFixAll, bytes_of(credit))
            .send(0, 1, kTag1, 100)
            .raw_send(kFixAll | kFixLength, eager(1, 100))
            .recv(kAny, 1, 7, 200)
            .simple(Op::Test)
            .bytes());
  Bytes late = eager(0, 4);
  late[offsetof(wire::Header, seq)] = 5;
  write(t, "wrong-sequence", ProgramWriter(s).recv(kAny, 0, kTag0, 64).raw_send(0, late).bytes());
  write(t, "short-message",
        ProgramWriter(s).raw_send(0, Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).bytes());
  Bytes odd = bytes_of(header(wire::Type(uint8_t(wire::kLastType) + 1), 0, 0));
  write(t, "unknown-type", ProgramWriter(s).raw_send(kFixAll, odd).bytes());
  // Closing by agreement (engine_close.h): rank 1, the active side, proposes with the
  // count of messages it has received (the length field); the context agrees if that is
  // all it sent and nothing is in flight, then connects again for its next send.
  Bytes close = bytes_of(header(wire::Type::Close, 0, 0));
  write(t, "close-agreed",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .raw_send(kFixAll, close)
            .progress(2)
            .send(0, 0, kTag0, 16)
            .progress(4)
            .bytes());
  write(t, "close-overtaken",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .send(0, 0, kTag0, 16)
            .raw_send(kFixAll, close)
            .progress(2)
            .bytes());
  write(t, "close-ack-never-proposed",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .raw_send(kFixAll, bytes_of(header(wire::Type::CloseAck, 0, 0)))
            .bytes());
  Bytes lies = eager(0, 16);
  lies[offsetof(wire::Header, length)] = 20;
  write(t, "eager-length-lies",
        ProgramWriter(s).recv(kFrom1, 0, kTag0, 64).raw_send(kFixAll, lies).bytes());
  Setup srq = s;
  srq.srq = 1;
  srq.eager_limit = 1024;
  write(t, "shared-receive-queue",
        ProgramWriter(srq)
            .raw_send(kFixAll | kFixLength, eager(0, 700))
            .raw_send(kFixAll | kFixLength, eager(0, 5))
            .recv(kAny, 0, kTag0, 1024)
            .recv(kAny, 0, kTag0, 1024)
            .simple(Op::Test)
            .bytes());
  write(t, "peer-leaves",
        ProgramWriter(s)
            .raw_send(kFixAll, hello)
            .recv(kFrom1, 0, kTag0, 64)
            .send(0, 0, kTag0, 3000)
            .simple(Op::PeerLeaves)
            .simple(Op::Test)
            .bytes());
  write(t, "self-unexpected-cancel",
        ProgramWriter(s)
            .send(1, 0, kTag0, 32)
            .recv(kFrom1, 2, kTag1, 8)
            .simple(Op::Cancel)
            .simple(Op::Test)
            .bytes());
  Setup stingy = s;
  stingy.peer_credits = 2;
  stingy.peer_ctrl_credits = 1;
  stingy.peer_eager_limit = 64;
  write(t, "stingy-peer",
        ProgramWriter(stingy)
            .raw_send(kFixAll, hello)
            .send(0, 0, kTag0, 32)
            .send(0, 0, kTag0, 100)
            .send(0, 0, kTag0, 8)
            .progress(4)
            .simple(Op::Test)
            .bytes());
  Setup bad_offer = s;
  bad_offer.peer_credits = 1;
  write(t, "offer-rejected", ProgramWriter(bad_offer).recv(kAny, 0, kTag0, 8).bytes());
  // Small messages without receive buffers, as through shared memory: the first before
  // the context's connection is up, expected and unexpected, synchronous, and one byte
  // over the size that rides in the completion.
  Setup unbuffered = s;
  unbuffered.unbuffered = 1;
  write(t, "unbuffered-small",
        ProgramWriter(unbuffered)
            .raw_send(kFixAll, hello)
            .recv(kFrom1, 0, kTag0, 64)
            .raw_send(kFixAll | kFixLength, eager(0, 16))
            .raw_send(kFixAll, short_eager(1, 8))
            .raw_send(kFixAll, short_eager(0, 37))
            .raw_send(kFixAll, eager(0, 8, wire::kSync))
            .recv(kAny, 0, kTag1, 8)
            .recv(kAny, 0, kTag0, 64)
            .recv(kAny, 0, kTag0, 8)
            .progress(4)
            .simple(Op::Test)
            .bytes());
  Setup outsider = s;
  outsider.peer_flags |= kUnsealed;  // no proof of the job key: refused, then it sends anyway
  write(t, "offer-unsealed",
        ProgramWriter(outsider)
            .recv(kAny, 0, kTag0, 64)
            .raw_send(kFixAll | kFixLength, eager(0, 16))
            .simple(Op::Test)
            .bytes());
}

}  // namespace
}  // namespace rdmx::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS-DIR (one directory per target inside)\n", argv[0]);
    return 2;
  }
  rdmx::fuzz::g_dir = argv[1];
  if (::mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
    std::perror(argv[1]);
    return 1;
  }
  rdmx::fuzz::connect_msg();
  rdmx::fuzz::address();
  rdmx::fuzz::settings();
  rdmx::fuzz::bootstrap_seeds();
  rdmx::fuzz::engine_recv();
  return 0;
}
