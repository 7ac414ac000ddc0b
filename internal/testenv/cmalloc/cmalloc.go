// Package cmalloc reports what this process holds in the C library's heap, for tests
// that bound what librdkafka keeps: glibc's malloc, whose counts neither the Go runtime
// nor the race detector's shadow memory move.
package cmalloc

/*
#include <malloc.h>

static size_t dlq_malloc_in_use(void) {
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}
*/
import "C"

// InUse returns the bytes allocated with malloc and not freed yet, in every arena and in
// the blocks mapped on their own (mallinfo2's uordblks and hblkhd).
func InUse() int64 { return int64(C.dlq_malloc_in_use()) }
