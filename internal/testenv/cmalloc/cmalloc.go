// Package cmalloc reports what this process holds in the C library's heap, for tests
// that bound what librdkafka keeps: glibc's malloc, whose counts neither the Go runtime
// nor the race detector's shadow memory move.
package cmalloc

/*
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t dlq_malloc_in_use(void) {
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

// dlq_arenas counts the arenas malloc_info reports (one <heap> element each).
static int dlq_arenas(void) {
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (f == NULL) {
		return -1;
	}
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) {
		n++;
	}
	free(buf);
	return n;
}

static pthread_barrier_t dlq_together;

static void *dlq_malloc_once(void *arg) {
	free(malloc(64));
	pthread_barrier_wait(&dlq_together); // alive together: none hands its arena on
	return NULL;
}

// dlq_threads_malloc has n threads, all alive at once, each allocate once.
static int dlq_threads_malloc(int n) {
	pthread_t ts[64];
	if (n > 64 || pthread_barrier_init(&dlq_together, NULL, n) != 0) {
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (pthread_create(&ts[i], NULL, dlq_malloc_once, NULL) != 0) {
			return -1; // the barrier would never open
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(ts[i], NULL);
	}
	pthread_barrier_destroy(&dlq_together);
	return 0;
}
*/
import "C"

import "errors"

// InUse returns the bytes allocated with malloc and not freed yet, in every arena and in
// the blocks mapped on their own (mallinfo2's uordblks and hblkhd).
func InUse() int64 { return int64(C.dlq_malloc_in_use()) }

// Arenas returns how many malloc arenas this process has (malloc_info's heaps).
func Arenas() int { return int(C.dlq_arenas()) }

// ThreadsMalloc has n (at most 64) threads, alive at the same time, each call malloc:
// glibc gives each a new arena of its own up to its limit.
func ThreadsMalloc(n int) error {
	if C.dlq_threads_malloc(C.int(n)) != 0 {
		return errors.New("cmalloc: cannot start the threads")
	}
	return nil
}
