/* Derived datatypes and large messages through the MTL (2 ranks): vector, struct with
 * gaps, indexed, subarray, packed and unpacked on either side, eager and rendezvous
 * sizes, truncation of a non-contiguous receive, and a 256 MiB message each way. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

static int rank, peer;

typedef struct {
  int a;
  double b;
  char c[3];
} item_t;

static void test_vector(void) {
  SECTION("vector: strided send into contiguous receive and back (eager and rendezvous)");
  const int counts[2] = {100, 100000};
  for (int k = 0; k < 2; ++k) {
    int n = counts[k];
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(n, 3, 7, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    int* strided = malloc((size_t)n * 7 * sizeof(int));
    int* flat = malloc((size_t)n * 3 * sizeof(int));
    if (rank == 0) {
      for (int i = 0; i < n * 7; ++i) strided[i] = i;
      CHECK_MPI(MPI_Send(strided, 1, vec, peer, 1, MPI_COMM_WORLD));
      CHECK_MPI(MPI_Recv(flat, 3 * n, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < 3; ++j)
          CHECK(flat[3 * i + j] == -(7 * i + j), "returned element %d.%d", i, j);
    } else {
      MPI_Status st;
      int count = 0;
      CHECK_MPI(MPI_Recv(flat, 3 * n, MPI_INT, peer, 1, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_INT, &count);
      CHECK(count == 3 * n, "vector arrived as %d ints", count);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < 3; ++j)
          CHECK(flat[3 * i + j] == 7 * i + j, "element %d.%d = %d", i, j, flat[3 * i + j]);
      for (int i = 0; i < 3 * n; ++i) flat[i] = -flat[i];
      memset(strided, 0x5a, (size_t)n * 7 * sizeof(int));
      CHECK_MPI(MPI_Send(flat, 3 * n, MPI_INT, peer, 2, MPI_COMM_WORLD));
    }
    MPI_Type_free(&vec);
    free(strided);
    free(flat);
  }
  /* contiguous send, strided receive: the gaps must stay untouched */
  int n = 50000;
  MPI_Datatype vec;
  CHECK_MPI(MPI_Type_vector(n, 2, 5, MPI_INT, &vec));
  CHECK_MPI(MPI_Type_commit(&vec));
  int* buf = malloc((size_t)n * 5 * sizeof(int));
  if (rank == 0) {
    for (int i = 0; i < 2 * n; ++i) buf[i] = i + 1;
    CHECK_MPI(MPI_Send(buf, 2 * n, MPI_INT, peer, 3, MPI_COMM_WORLD));
  } else {
    for (int i = 0; i < 5 * n; ++i) buf[i] = -7;
    CHECK_MPI(MPI_Recv(buf, 1, vec, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; ++i) {
      CHECK(buf[5 * i] == 2 * i + 1 && buf[5 * i + 1] == 2 * i + 2, "block %d", i);
      CHECK(buf[5 * i + 2] == -7 && buf[5 * i + 4] == -7, "gap %d was written", i);
    }
  }
  MPI_Type_free(&vec);
  free(buf);
}

static void test_struct(void) {
  SECTION("struct with gaps (int, double, char[3]), 10 and 20000 elements");
  int blocklens[3] = {1, 1, 3};
  MPI_Aint displs[3] = {offsetof(item_t, a), offsetof(item_t, b), offsetof(item_t, c)};
  MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, raw, item;
  CHECK_MPI(MPI_Type_create_struct(3, blocklens, displs, types, &raw));
  CHECK_MPI(MPI_Type_create_resized(raw, 0, sizeof(item_t), &item));
  CHECK_MPI(MPI_Type_commit(&item));
  const int counts[2] = {10, 20000};
  for (int k = 0; k < 2; ++k) {
    int n = counts[k];
    item_t* v = malloc((size_t)n * sizeof *v);
    memset(v, 0xab, (size_t)n * sizeof *v);
    if (rank == 0) {
      for (int i = 0; i < n; ++i) {
        v[i].a = i;
        v[i].b = i * 0.25;
        v[i].c[0] = 'x';
        v[i].c[1] = (char)i;
        v[i].c[2] = 'z';
      }
      CHECK_MPI(MPI_Send(v, n, item, peer, 10 + k, MPI_COMM_WORLD));
    } else {
      MPI_Status st;
      int count = 0;
      CHECK_MPI(MPI_Recv(v, n, item, peer, 10 + k, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, item, &count);
      CHECK(count == n, "struct count %d", count);
      for (int i = 0; i < n; ++i)
        CHECK(v[i].a == i && v[i].b == i * 0.25 && v[i].c[0] == 'x' && v[i].c[1] == (char)i &&
                  v[i].c[2] == 'z',
              "struct element %d", i);
      unsigned char* pad = (unsigned char*)&v[n - 1] + offsetof(item_t, a) + sizeof(int);
      CHECK(*pad == 0xab, "padding between a and b was written");
    }
    free(v);
  }
  MPI_Type_free(&item);
  MPI_Type_free(&raw);
}

static void test_indexed_subarray(void) {
  SECTION("indexed blocks and a 2-D subarray (column block of a matrix)");
  int lens[4] = {1, 5, 2, 9}, displs[4] = {0, 3, 17, 30};
  MPI_Datatype idx;
  CHECK_MPI(MPI_Type_indexed(4, lens, displs, MPI_DOUBLE, &idx));
  CHECK_MPI(MPI_Type_commit(&idx));
  double d[39];
  for (int i = 0; i < 39; ++i) d[i] = rank == 0 ? i : -1;
  if (rank == 0) {
    CHECK_MPI(MPI_Send(d, 1, idx, peer, 20, MPI_COMM_WORLD));
  } else {
    CHECK_MPI(MPI_Recv(d, 1, idx, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int b = 0; b < 4; ++b)
      for (int j = 0; j < lens[b]; ++j)
        CHECK(d[displs[b] + j] == displs[b] + j, "indexed block %d element %d", b, j);
    CHECK(d[1] == -1 && d[29] == -1, "indexed gaps written");
  }
  MPI_Type_free(&idx);

  enum { R = 512, C = 512 };
  int sizes[2] = {R, C}, sub[2] = {R, 100}, start[2] = {0, 200};
  MPI_Datatype cols;
  CHECK_MPI(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_FLOAT, &cols));
  CHECK_MPI(MPI_Type_commit(&cols));
  float* m = malloc(sizeof(float) * R * C);
  for (int i = 0; i < R * C; ++i) m[i] = rank == 0 ? (float)i : -1.0f;
  if (rank == 0) {
    CHECK_MPI(MPI_Send(m, 1, cols, peer, 21, MPI_COMM_WORLD));
  } else {
    CHECK_MPI(MPI_Recv(m, 1, cols, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int r = 0; r < R; ++r) {
      CHECK(m[r * C + 200] == (float)(r * C + 200) && m[r * C + 299] == (float)(r * C + 299),
            "subarray row %d", r);
      CHECK(m[r * C + 199] == -1.0f && m[r * C + 300] == -1.0f, "subarray row %d edge written", r);
    }
  }
  MPI_Type_free(&cols);
  free(m);
}

static void test_truncated_datatype(void) {
  SECTION("truncation into a non-contiguous receive: MPI_ERR_TRUNCATE, the prefix unpacked");
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  MPI_Datatype vec;
  CHECK_MPI(MPI_Type_vector(1000, 1, 2, MPI_INT, &vec));
  CHECK_MPI(MPI_Type_commit(&vec));
  int* buf = malloc(4000 * sizeof(int));
  if (rank == 0) {
    for (int i = 0; i < 4000; ++i) buf[i] = i;
    CHECK_MPI(MPI_Send(buf, 4000, MPI_INT, peer, 30, comm));
  } else {
    for (int i = 0; i < 4000; ++i) buf[i] = -1;
    MPI_Status st;
    int cls = 0;
    int rc = MPI_Recv(buf, 1, vec, peer, 30, comm, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "class %d", cls);
    CHECK(buf[0] == 0 && buf[2] == 1 && buf[1998] == 999 && buf[1] == -1, "unpacked prefix");
  }
  free(buf);
  MPI_Type_free(&vec);
  MPI_Comm_free(&comm);
}

static void test_large(void) {
  SECTION("256 MiB messages: contiguous each way, checked end to end");
  const size_t n = (size_t)256 << 20;
  unsigned char* buf = malloc(n);
  CHECK(buf != NULL, "cannot allocate 256 MiB");
  for (int dir = 0; dir < 2; ++dir) {
    int sender = dir;
    if (rank == sender) {
      for (size_t i = 0; i < n; i += 4096) buf[i] = (unsigned char)(i / 4096 + dir);
      buf[n - 1] = 0x5a;
      CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, peer, 40 + dir, MPI_COMM_WORLD));
    } else {
      MPI_Status st;
      int count = 0;
      memset(buf, 0, n);
      CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, peer, 40 + dir, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_BYTE, &count);
      CHECK((size_t)count == n, "256 MiB message arrived as %d bytes", count);
      for (size_t i = 0; i < n; i += 4096)
        CHECK(buf[i] == (unsigned char)(i / 4096 + dir), "byte %zu", i);
      CHECK(buf[n - 1] == 0x5a, "last byte");
    }
  }
  SECTION("32 MiB non-contiguous (vector of doubles), packed and unpacked");
  const int blocks = 2 << 20; /* 2 doubles each: 32 MiB packed */
  MPI_Datatype vec;
  CHECK_MPI(MPI_Type_vector(blocks, 2, 3, MPI_DOUBLE, &vec));
  CHECK_MPI(MPI_Type_commit(&vec));
  double* d = (double*)buf; /* 48 MiB of the 256 MiB buffer */
  if (rank == 0) {
    for (int i = 0; i < 3 * blocks; ++i) d[i] = i;
    CHECK_MPI(MPI_Ssend(d, 1, vec, peer, 50, MPI_COMM_WORLD));
  } else {
    for (int i = 0; i < 3 * blocks; ++i) d[i] = -1;
    CHECK_MPI(MPI_Recv(d, 1, vec, peer, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < blocks; i += 997)
      CHECK(d[3 * i] == 3 * i && d[3 * i + 1] == 3 * i + 1 && d[3 * i + 2] == -1, "block %d", i);
    CHECK(d[3 * (blocks - 1) + 1] == 3 * (blocks - 1) + 1, "last block");
  }
  MPI_Type_free(&vec);
  free(buf);
}

int main(int argc, char** argv) {
  int nprocs = 0;
  CHECK_MPI(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  CHECK(nprocs == 2, "runs on exactly 2 ranks, got %d", nprocs);
  peer = 1 - rank;
  test_vector();
  test_struct();
  test_indexed_subarray();
  test_truncated_datatype();
  test_large();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_datatypes: all checks passed\n");
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
