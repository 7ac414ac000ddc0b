package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/malloctest"
)

// librdkafka receives each fetch response into a block of its size (up to a MiB and
// more): a block of a MiB is mapped on its own and unmapped when freed even after a
// larger one was freed, instead of landing in the heap, where the blocks librdkafka keeps
// between them (produced records waiting for their acknowledgement) stop it shrinking.
func TestFetchSizedBlocksAreMappedAfterALargerOneWasFreed(t *testing.T) {
	mapped, ok := malloctest.MappedAfterFree(8<<20, 1<<20)
	if !ok {
		t.Skip("not glibc: the C library's own malloc is left alone")
	}
	require.True(t, mapped, "a 1 MiB block carved from the heap after an 8 MiB block was freed: glibc's mmap threshold moved")
}
