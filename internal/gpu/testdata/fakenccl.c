// A fake NCCL for TestFakeNCCL: checks the calling convention of the entry points Tempest
// binds (ncclCommInitRank takes the 128-byte ncclUniqueId by value) and carries out a
// group's sends to and receives from the same rank with memcpy over the fake driver's
// host-memory device pointers.
//
//   cc -shared -fPIC -O1 -o libfakenccl.so fakenccl.c
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int nranks, rank; } comm;
typedef struct { int send; void *buf; size_t n; int peer; void *stream; } op;

static op ops[64];
static int nops, depth;
static void *last_stream; // the stream of the last group's transfers

int ncclGetVersion(int *v) { *v = 22005; return 0; }
const char *ncclGetErrorString(int r) { return r == 4 ? "invalid argument" : "unhandled error"; }
int ncclGetUniqueId(ncclUniqueId *id) {
	for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
	return 0;
}
int ncclCommInitRank(comm **c, int nranks, ncclUniqueId id, int rank) {
	for (int i = 0; i < 128; i++)
		if (id.internal[i] != (char)(i * 7 + 3)) return 4;
	if (nranks != 1 || rank != 0) return 4;
	*c = calloc(1, sizeof **c);
	(*c)->nranks = nranks;
	(*c)->rank = rank;
	return 0;
}
int ncclCommDestroy(comm *c) { free(c); return 0; }
int ncclGroupStart(void) { depth++; return 0; }
static int post(int send, void *buf, size_t n, int dtype, int peer, comm *c, void *stream) {
	if (dtype != 0 || peer != c->rank || nops == 64) return 4;
	if (nops > 0 && ops[0].stream != stream) return 4; // one group, one stream
	ops[nops++] = (op){send, buf, n, peer, stream};
	return 0;
}
int ncclSend(const void *buf, size_t n, int dtype, int peer, comm *c, void *stream) { return post(1, (void *)buf, n, dtype, peer, c, stream); }
int ncclRecv(void *buf, size_t n, int dtype, int peer, comm *c, void *stream) { return post(0, buf, n, dtype, peer, c, stream); }
int ncclGroupEnd(void) {
	if (--depth > 0) return 0;
	// The k-th send pairs with the k-th receive; sends read before any receive writes.
	int s = 0, r = 0, rc = 0;
	char *tmp[64];
	for (int i = 0; i < nops; i++)
		if (ops[i].send) {
			tmp[i] = malloc(ops[i].n);
			memcpy(tmp[i], ops[i].buf, ops[i].n);
		}
	for (;;) {
		while (s < nops && !ops[s].send) s++;
		while (r < nops && ops[r].send) r++;
		if (s == nops || r == nops) break;
		if (ops[s].n != ops[r].n) rc = 4;
		else memcpy(ops[r].buf, tmp[s], ops[s].n);
		s++, r++;
	}
	if (s != nops || r != nops) {
		while (s < nops && !ops[s].send) s++;
		while (r < nops && ops[r].send) r++;
		if (s != nops || r != nops) rc = 4;
	}
	for (int i = 0; i < nops; i++)
		if (ops[i].send) free(tmp[i]);
	if (nops > 0) last_stream = ops[0].stream;
	nops = 0;
	return rc;
}

// Introspection for the Go test: whether the last group ran on a stream other than 0.
int fakeNCCLSideStream(void) { return last_stream != NULL; }
