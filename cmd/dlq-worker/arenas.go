package main

// librdkafka copies every record on several threads, and glibc gives each thread a malloc
// arena of its own (up to eight per core) that keeps the memory freed into it: the
// worker's peak RSS kept growing with the backlog it drained (BenchmarkWorker). One
// arena keeps the least: 112-119 MiB of peak RSS where two kept 122-132 MiB over the
// same backlogs (400,000 and 1,000,000 records), at the same rate.
//
// glibc maps a block of 128 KiB or more on its own, and unmaps it when it is freed, but
// each mapped block freed raises that threshold to its size (up to 32 MiB): after the
// first fetch responses (a block each, up to a MiB and more) the next ones were carved
// from the heap, between the records librdkafka keeps until they are acknowledged, which
// stop the heap from shrinking, so the heap grew with every burst over a run (27-43 MiB of
// it in a 1,000,000-record run, 9-24 with the threshold fixed). A fixed threshold keeps
// the default's 128 KiB (TestFetchSizedBlocksAreMappedAfterALargerOneWasFreed).
//
// Both must be set before the Go runtime starts its threads, each of which takes an
// arena, so it is a C constructor, which runs before the runtime; MALLOC_ARENA_MAX and
// MALLOC_MMAP_THRESHOLD_ in the environment, read by glibc itself, win. Other C
// libraries have neither setting and are left alone.

/*
#include <malloc.h>
#include <stdlib.h>

__attribute__((constructor)) static void dlq_set_up_malloc(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 1);
	}
#endif
#ifdef M_MMAP_THRESHOLD
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL) {
		mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	}
#endif
}
*/
import "C"
