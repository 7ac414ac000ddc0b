// Package malloctest probes the C allocator of the test's own process, for tests of how a
// binary sets glibc's malloc up before the Go runtime starts (cmd/dlq-worker's arenas.go).
package malloctest

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>

// dlq_mapped_after_free frees a block of freed bytes, then says whether a block of size
// bytes is mapped on its own (mmap) rather than carved from the heap: the count of mapped
// bytes grows by at least size while it is held.
static int dlq_mapped_after_free(size_t freed, size_t size) {
	void *volatile f = malloc(freed); // volatile: the compiler may drop an unused pair
	free(f);
	size_t before = mallinfo2().hblkhd;
	void *volatile p = malloc(size);
	size_t during = mallinfo2().hblkhd;
	free(p);
	return during >= before + size;
}
#else
static int dlq_mapped_after_free(size_t freed, size_t size) { return -1; }
#endif
*/
import "C"

// MappedAfterFree frees a block of freed bytes and then reports whether malloc maps a
// block of size bytes on its own, where it is unmapped as soon as it is freed, rather
// than carving it from the heap, which keeps what it grew to. glibc raises its mmap
// threshold to the size of each mapped block freed (up to 32 MiB) unless the threshold
// was set; ok is false where the C library is not glibc.
func MappedAfterFree(freed, size int) (mapped, ok bool) {
	switch C.dlq_mapped_after_free(C.size_t(freed), C.size_t(size)) {
	case 1:
		return true, true
	case 0:
		return false, true
	}
	return false, false
}
