package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/jobs/jobstest"
)

// regexpRows matches a record's row of the list table.
var regexpRows = regexp.MustCompile(`(?m)^\d+\s+(parked|scheduled)\s`)

// The list and bulk filters take stored times, relative ones too, resolved when the command
// runs; either spelling of the list flags selects the same; a typo in a reason is refused
// with the reasons that exist.
func TestCLIFilters(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	jobstest.Park(t, s.store, "orders", 3)

	rows := func(args ...string) int {
		t.Helper()
		out, err := s.cli(t, append([]string{"list"}, args...)...)
		require.NoError(t, err)
		return len(regexpRows.FindAllString(out, -1))
	}
	require.Equal(t, 3, rows("--stored-from", "-1h"))
	require.Equal(t, 3, rows("--stored-from", "yesterday", "--stored-to", "now"))
	require.Equal(t, 0, rows("--stored-to", "-1h"))
	require.Equal(t, 3, rows("--statuses", "parked", "--park-reasons", "exhausted"))
	require.Equal(t, 0, rows("--status", "scheduled"))
	out, err := s.cli(t, "list", "--limit", "1")
	require.NoError(t, err)
	require.Equal(t, 1, len(regexpRows.FindAllString(out, -1)))
	require.Contains(t, out, "\nmatching records: 3\n", "the total of every page")

	out, err = s.cli(t, "bulk", "discard", "--stored-to", "-1h", "--reason", "old ones")
	require.NoError(t, err)
	require.Contains(t, out, "0 records selected (dry run)")
	out, err = s.cli(t, "bulk", "discard", "--stored-from", "-1h", "--reason", "new ones")
	require.NoError(t, err)
	require.Contains(t, out, "3 records selected (dry run)")

	// Content: jobstest.Park's values are {"i":N} (the third record's is null).
	require.Equal(t, 1, rows("--value-contains", `"i":0}`))
	require.Equal(t, 0, rows("--value-contains", `"I":0}`), "case-sensitive")
	require.Equal(t, 3, rows("--header", "trace"))
	require.Equal(t, 3, rows("--header", "dup", "--header-value-contains", "b"))
	require.Equal(t, 0, rows("--header", "dup", "--header-value-contains", "c"))
	out, err = s.cli(t, "bulk", "discard", "--value-contains", `"i":1}`, "--reason", "found")
	require.NoError(t, err)
	require.Contains(t, out, "1 records selected (dry run)")
	// The job the worker runs applies the content search too: only that record is discarded.
	_, err = s.cli(t, "bulk", "discard", "--value-contains", `"i":1}`, "--reason", "found", "--yes")
	require.NoError(t, err)
	out, err = s.cli(t, "list", "--status", "discarded")
	require.NoError(t, err)
	require.Contains(t, out, "\nmatching records: 1\n")
	require.Contains(t, out, "\n2 ")
	require.Equal(t, 2, rows("--status", "parked"))

	_, err = s.cli(t, "list", "--stored-from", "last week")
	require.ErrorContains(t, err, "--stored-from")
	_, err = s.cli(t, "list", "--park-reason", "exhaust")
	require.ErrorContains(t, err, "exhausted", "the allowed reasons are named")
}
