/* ofi_cq_wait: which wait object a libfabric provider gives a completion queue for each
 * wait_obj asked. A provider that puts a file descriptor behind every completion queue
 * makes each completion cost system calls to signal and clear it, even where the
 * application only polls (docs/performance.md, "16 KiB over libfabric tcp").
 *
 *   bench/ofi_cq_wait [provider]        (default tcp)
 */
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <string.h>

static const char* wait_name(int w) {
  static const char* names[] = {"FI_WAIT_NONE",  "FI_WAIT_UNSPEC",     "FI_WAIT_SET",
                                "FI_WAIT_FD",    "FI_WAIT_MUTEX_COND", "FI_WAIT_YIELD",
                                "FI_WAIT_POLLFD"};
  return w >= 0 && w < (int)(sizeof names / sizeof names[0]) ? names[w] : "unknown";
}

int main(int argc, char** argv) {
  const char* prov = argc > 1 ? argv[1] : "tcp";
  struct fi_info* hints = fi_allocinfo();
  struct fi_info* info = NULL;
  struct fid_fabric* fabric = NULL;
  struct fid_domain* domain = NULL;
  if (!hints) return 1;
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG | FI_RMA;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = strdup(prov);
  int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
  if (rc) {
    fprintf(stderr, "ofi_cq_wait: no %s provider: %s\n", prov, fi_strerror(-rc));
    return 1;
  }
  if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
      (rc = fi_domain(fabric, info, &domain, NULL))) {
    fprintf(stderr, "ofi_cq_wait: opening %s: %s\n", prov, fi_strerror(-rc));
    return 1;
  }
  printf("libfabric %u.%u, provider %s\n", FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
         info->fabric_attr->prov_name);
  static const int asked[] = {FI_WAIT_NONE,       FI_WAIT_UNSPEC, FI_WAIT_FD,
                              FI_WAIT_MUTEX_COND, FI_WAIT_YIELD,  FI_WAIT_POLLFD};
  for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = asked[i]};
    struct fid_cq* cq = NULL;
    printf("%-20s ", wait_name(asked[i]));
    if ((rc = fi_cq_open(domain, &attr, &cq, NULL))) {
      printf("refused: %s\n", fi_strerror(-rc));
      continue;
    }
    enum fi_wait_obj got = FI_WAIT_NONE;
    rc = fi_control(&cq->fid, FI_GETWAITOBJ, &got);
    printf("-> %s\n", rc == -FI_ENODATA ? "no wait object"
                      : rc              ? fi_strerror(-rc)
                                        : wait_name(got));
    fi_close(&cq->fid);
  }
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  return 0;
}
