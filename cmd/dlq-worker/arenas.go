package main

// librdkafka copies every record on several threads, and glibc gives each thread a malloc
// arena of its own (up to eight per core) that keeps the memory freed into it: the
// worker's peak RSS kept growing with the backlog it drained (BenchmarkWorker). One
// arena keeps the least: 112-119 MiB of peak RSS where two kept 122-132 MiB over the
// same backlogs (400,000 and 1,000,000 records), at the same rate. The limit must be set before the Go runtime starts its threads,
// each of which takes an arena, so it is a C constructor, which runs before the runtime;
// MALLOC_ARENA_MAX in the environment, read by glibc itself, wins. Other C libraries have
// no M_ARENA_MAX and are left alone.

/*
#include <malloc.h>
#include <stdlib.h>

__attribute__((constructor)) static void dlq_limit_malloc_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 1);
	}
#endif
}
*/
import "C"
