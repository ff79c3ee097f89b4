// Context over Engine<F>: the one place where the API meets a concrete backend.
#pragma once

#include "api/context.h"
#include "engine/engine_impl.h"

namespace rdmx {

template <class F>
class EngineContext final : public Context {
  using E = engine::Engine<F>;
  using Req = typename E::Req;
  static Req* req(rdmx_request_t* h) { return static_cast<Req*>(engine::RequestBase::from(h)); }

 public:
  int init(int32_t rank, int32_t size, uint64_t job_key, const Settings& s,
           std::string& err) override {
    return e_.init(rank, size, job_key, s, err);
  }
  size_t address(uint8_t* buf, size_t cap) const override { return e_.address(buf, cap); }
  int add_peer(int32_t rank, const void* addr, size_t len) override {
    return e_.add_peer(rank, addr, len);
  }
  int isend(int32_t dest, uint32_t cid, int32_t tag, const void* buf, uint64_t len, uint32_t flags,
            rdmx_completion_fn cb, void* user, rdmx_request_t** out) override {
    Req* r = nullptr;
    int rc = e_.isend(dest, cid, tag, buf, len, flags, cb, user, &r);
    // No request: the send completed at once (RDMX_SEND_NO_REQUEST_IF_DONE).
    if (rc == RDMX_OK) *out = r ? r->handle() : nullptr;
    return rc;
  }
  int irecv(int32_t source, uint32_t cid, int32_t tag, void* buf, uint64_t len,
            rdmx_completion_fn cb, void* user, rdmx_request_t** out) override {
    Req* r = nullptr;
    int rc = e_.irecv(source, cid, tag, buf, len, cb, user, &r);
    if (rc == RDMX_OK) *out = r->handle();
    return rc;
  }
  int iprobe(int32_t source, uint32_t cid, int32_t tag, int* found,
             rdmx_status_info_t* st) override {
    return e_.iprobe(source, cid, tag, found, st);
  }
  int improbe(int32_t source, uint32_t cid, int32_t tag, int* found, rdmx_message_t** msg,
              rdmx_status_info_t* st) override {
    typename E::Unexp* u = nullptr;
    int rc = e_.improbe(source, cid, tag, found, &u, st);
    *msg = reinterpret_cast<rdmx_message_t*>(u);
    return rc;
  }
  int isend_tagged(int32_t dest, uint64_t tag, const void* buf, uint64_t len, uint32_t flags,
                   rdmx_completion_fn cb, void* user, rdmx_request_t** out) override {
    Req* r = nullptr;
    int rc = e_.isend_tagged(dest, tag, buf, len, flags, cb, user, &r);
    if (rc == RDMX_OK) *out = r ? r->handle() : nullptr;
    return rc;
  }
  int irecv_tagged(int32_t source, uint64_t tag, uint64_t ignore, void* buf, uint64_t len,
                   rdmx_completion_fn cb, void* user, rdmx_request_t** out) override {
    Req* r = nullptr;
    int rc = e_.irecv_tagged(source, tag, ignore, buf, len, cb, user, &r);
    if (rc == RDMX_OK) *out = r->handle();
    return rc;
  }
  int probe_tagged(int32_t source, uint64_t tag, uint64_t ignore, int* found, rdmx_message_t** msg,
                   rdmx_status_info_t* st) override {
    typename E::Unexp* u = nullptr;
    int rc = e_.probe_tagged(source, tag, ignore, found, msg ? &u : nullptr, st);
    if (msg) *msg = reinterpret_cast<rdmx_message_t*>(u);
    return rc;
  }
  int imrecv(rdmx_message_t* msg, void* buf, uint64_t len, rdmx_completion_fn cb, void* user,
             rdmx_request_t** out) override {
    Req* r = nullptr;
    int rc = e_.imrecv(reinterpret_cast<typename E::Unexp*>(msg), buf, len, cb, user, &r);
    if (rc == RDMX_OK) *out = r->handle();
    return rc;
  }
  int cancel(rdmx_request_t* r) override { return e_.cancel(req(r)); }
  void release(rdmx_request_t* r) override { e_.release(req(r)); }
  int set_request_release(int rule) override { return e_.set_request_release(rule); }
  int progress() override { return e_.progress(); }
  int wait_event(int timeout_ms) override { return e_.wait_event(timeout_ms); }
  bool sleeps_when_idle() const override { return e_.settings().idle == "sleep"; }
  void finalize() override { e_.finalize(); }
  const rdmx_stats_t& stats() const override { return e_.stats(); }
  const std::string& last_error() const override { return e_.last_error(); }
  const char* fabric_name() const override { return F::kName; }
  int set_job_secret(const uint8_t* secret, size_t len) override {
    return e_.set_job_secret(secret, len);
  }
  int32_t rank() const override { return e_.rank(); }
  int32_t size() const override { return e_.size(); }
  const char* peer_fabric(int32_t rank) const override {
    const std::vector<uint8_t>* a = e_.peer_address(rank);
    if (!a) return "";
    if (rank == e_.rank()) return "self";
    if (a->empty()) return "";
    // A context with several devices names the one a connection goes through.
    if constexpr (requires(const typename F::Conn* c) { e_.fabric().path_label(c); })
      if (const auto* c = e_.peer_conn(rank))
        if (const char* label = e_.fabric().path_label(c)) return label;
    if constexpr (requires { F::kNetName; })
      return e_.fabric().via_shm(a->data(), a->size()) ? "shm" : F::kNetName;
    return F::kName;
  }

  E& engine() { return e_; }

 private:
  E e_;
};

}  // namespace rdmx
