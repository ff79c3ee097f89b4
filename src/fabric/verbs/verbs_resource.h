// Owners for every verbs and rdma_cm object the backend creates: each one is released
// exactly once, by the function that pairs with its constructor, in reverse order of
// declaration wherever they are members.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rdmx::verbs {

template <class T, auto Release>
struct Releaser {
  void operator()(T* p) const noexcept {
    if (p) Release(p);
  }
};

template <class T, auto Release>
using Owner = std::unique_ptr<T, Releaser<T, Release>>;

using EventChannel = Owner<rdma_event_channel, rdma_destroy_event_channel>;
using CmId = Owner<rdma_cm_id, rdma_destroy_id>;
using Pd = Owner<ibv_pd, ibv_dealloc_pd>;
using CompChannel = Owner<ibv_comp_channel, ibv_destroy_comp_channel>;
using Cq = Owner<ibv_cq, ibv_destroy_cq>;
using Qp = Owner<ibv_qp, ibv_destroy_qp>;
using Srq = Owner<ibv_srq, ibv_destroy_srq>;
using Mr = Owner<ibv_mr, ibv_dereg_mr>;

}  // namespace rdmx::verbs
