package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
)

// export writes every selected record as a JSON line with its bytes; show --hex dumps a
// binary value whole and --out writes its exact bytes.
func TestCLIExportAndShowBytes(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	jobstest.Park(t, s.store, "orders", 45)
	binary := []byte{0x00, 0x1b, '[', '3', '1', 'm', 0xff, 0xfe, 'h', 'i', '\n', 0x07}
	_, err := s.store.StoreBatch(context.Background(), []store.NewRecord{{
		DLQ: store.Coordinates{Topic: "bin.dlq", Offset: 1}, Origin: store.Origin{Topic: "bin", Partition: 0, Offset: 9},
		Key: []byte("k"), Value: binary, Timestamp: time.Now(), RetryCount: 5, ErrorMessage: "bad",
		Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "bin",
	}}, nil)
	require.NoError(t, err)

	out, err := s.cli(t, "export", "--original-topic", "orders")
	require.NoError(t, err)
	var lines int
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var d api.RecordDetail
		require.NoError(t, json.Unmarshal(sc.Bytes(), &d))
		require.Equal(t, "orders", d.Record.Original.Topic)
		lines++
	}
	require.Equal(t, 45, lines)

	out, err = s.cli(t, "export", "--original-topic", "bin")
	require.NoError(t, err)
	var d api.RecordDetail
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, base64.StdEncoding.EncodeToString(binary), d.Value.Base64)
	_, err = s.cli(t, "export", "--park-reason", "exhaust")
	require.ErrorContains(t, err, "exhausted")

	out, err = s.cli(t, "show", "46", "--hex")
	require.NoError(t, err)
	require.Contains(t, out, "12 bytes\n00000000  00 1b 5b 33 31 6d ff fe  68 69 0a 07              |..[31m..hi..|")
	require.NotContains(t, out, "\x1b", "no escape sequence reaches the terminal")
	require.NotContains(t, out, "base64:")

	file := filepath.Join(t.TempDir(), "value.bin")
	_, err = s.cli(t, "show", "46", "--out", file)
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, binary, got, "byte for byte")
	_, err = s.cli(t, "show", "3", "--out", filepath.Join(t.TempDir(), "tombstone"))
	require.ErrorContains(t, err, "null")
}
