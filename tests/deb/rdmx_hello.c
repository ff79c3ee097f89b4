/* rdmx_hello: a program built against the installed librdmx-dev (pkg-config --cflags
 * --libs rdmx) and run under rdmx_launch -n 2: rank 0 sends rank 1 a small message and
 * a 1 MiB one (rendezvous), whose bytes rank 1 checks. Rank 1 prints one line; any
 * failure exits non-zero with what failed. */
#include <rdmx/rdmx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { SMALL = 64, LARGE = 1 << 20 };

static unsigned char byte_at(size_t i) { return (unsigned char)(i * 13 + 7); }

static int fail(rdmx_context_t* ctx, const char* what, int rc) {
  fprintf(stderr, "rdmx_hello: %s: %s: %s\n", what, rdmx_strerror(rc), rdmx_last_error(ctx));
  return 1;
}

/* Sends (rank 0) or receives (rank 1) len bytes with the given tag, and waits. */
static int transfer(rdmx_context_t* ctx, unsigned char* buf, size_t len, int32_t tag) {
  rdmx_request_t* req = NULL;
  rdmx_status_info_t st;
  int rc = rdmx_context_rank(ctx) == 0 ? rdmx_isend(ctx, 1, 0, tag, buf, len, 0, NULL, NULL, &req)
                                       : rdmx_irecv(ctx, 0, 0, tag, buf, len, NULL, NULL, &req);
  if (rc == 0) rc = rdmx_wait(ctx, req, 60000, &st);
  if (rc == 0 && st.error) rc = st.error;
  if (rc == 0 && st.length != len) rc = RDMX_ERR_TRUNCATED;
  if (req) rdmx_request_free(ctx, req);
  return rc;
}

int main(void) {
  rdmx_context_t* ctx = NULL;
  int rc = rdmx_init_bootstrap(&ctx);
  if (rc) return fail(NULL, "rdmx_init_bootstrap", rc);
  if (rdmx_context_size(ctx) != 2) return fail(ctx, "a job of two ranks expected", 0);
  int32_t rank = rdmx_context_rank(ctx);
  unsigned char* buf = malloc(LARGE);
  if (!buf) return fail(ctx, "malloc", 0);
  const size_t lens[2] = {SMALL, LARGE};
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; i < lens[k]; ++i) buf[i] = rank == 0 ? byte_at(i) : 0;
    if ((rc = transfer(ctx, buf, lens[k], k))) return fail(ctx, "transfer", rc);
    for (size_t i = 0; rank == 1 && i < lens[k]; ++i)
      if (buf[i] != byte_at(i)) return fail(ctx, "a received byte differs", 0);
  }
  if (rank == 1)
    printf("rdmx_hello: %d and %d bytes from rank 0 over %s, every byte checked\n", SMALL, LARGE,
           rdmx_fabric_name(ctx));
  free(buf);
  rdmx_finalize(ctx);
  return 0;
}
