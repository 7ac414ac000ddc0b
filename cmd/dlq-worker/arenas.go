package main

// librdkafka copies every record on several threads, and glibc gives each thread a malloc
// arena of its own (up to eight per core) that keeps the memory freed into it, so the
// worker's peak RSS would grow with the backlog it drains. One arena keeps the least, at
// the same rate. The limit must be set before the Go runtime starts its threads, each of
// which takes an arena, so it is a C constructor, which runs before the runtime;
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
