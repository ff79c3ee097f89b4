#include "fabric/fabric.h"

namespace rdmx::fabric {

const char* failure_name(Failure f) {
  switch (f) {
    case Failure::Flushed: return "request flushed: the connection is down";
    case Failure::RetryExceeded:
      return "transport retry count exceeded: the peer stopped answering";
    case Failure::RnrRetryExceeded:
      return "receiver not ready: the peer had no receive buffer posted";
    case Failure::RemoteAccess: return "remote access error: the peer refused the operation";
    case Failure::LocalLength: return "a received message was longer than the receive buffer";
    case Failure::Disconnected: return "the peer disconnected";
    case Failure::Unreachable: return "the peer is unreachable";
    case Failure::DeviceRemoved: return "the RDMA device was removed";
    case Failure::Other: return "fabric error";
  }
  return "fabric error";
}

}  // namespace rdmx::fabric
