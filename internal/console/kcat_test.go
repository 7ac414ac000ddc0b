package console

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
)

func apiBytes(b []byte) api.Bytes {
	if b == nil {
		return api.Bytes{Null: true}
	}
	return api.Bytes{Base64: base64.StdEncoding.EncodeToString(b)}
}

// The "copy as kcat" line, run by bash with a kcat that records what it was given, passes
// kcat exactly the record's topic, key, headers and value, whatever a sender put in them:
// nothing in the record runs as a command.
func TestKcatCommandIsExactAndInert(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "kcat")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\ncat \"${@: -1}\" > \"$OUT/stdin\"\n"), 0o755))
	canary := filepath.Join(dir, "pwned")
	hostile := "x'; touch " + canary + "; echo '$(touch " + canary + ")`touch " + canary + "`\"\\\n\x1b[2J%s%n"
	value := append([]byte(hostile), 0x00, 0xff, '\n', '%', 'd')
	d := api.RecordDetail{Key: apiBytes([]byte("k " + hostile)), Value: apiBytes(value), Headers: []api.Header{
		{Key: "h " + hostile, Value: apiBytes([]byte("v=" + hostile))},
		{Key: "dup", Value: apiBytes([]byte("a"))}, {Key: "dup", Value: apiBytes([]byte("b"))},
		{Key: "empty", Value: apiBytes([]byte{})},
	}}
	topic := "orders"

	cmdLine, ok, why := kcatCommand(topic, &d)
	require.True(t, ok, why)
	require.NotContains(t, cmdLine, "\n")
	require.NotContains(t, cmdLine, "\x1b")
	sh := exec.Command("bash", "-c", cmdLine)
	sh.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "OUT="+dir, "KAFKA_BROKERS=broker:9092")
	out, err := sh.CombinedOutput()
	require.NoError(t, err, string(out))
	_, err = os.Stat(canary)
	require.True(t, os.IsNotExist(err), "a record's text ran as a command")

	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	want := [][]byte{[]byte("-P"), []byte("-b"), []byte("broker:9092"), []byte("-t"), []byte(topic),
		[]byte("-k"), []byte("k " + hostile), []byte("-H"), []byte("h " + hostile + "=v=" + hostile),
		[]byte("-H"), []byte("dup=a"), []byte("-H"), []byte("dup=b"), []byte("-H"), []byte("empty="), []byte("/dev/stdin")}
	require.Equal(t, want, bytes.Split(bytes.TrimSuffix(args, []byte{0}), []byte{0}))
	stdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
	require.NoError(t, err)
	require.Equal(t, value, stdin, "the value byte for byte")

	// A tombstone is sent as a null value (-Z with an empty message), a null key not at all.
	cmdLine, ok, _ = kcatCommand(topic, &api.RecordDetail{Key: apiBytes(nil), Value: apiBytes(nil)})
	require.True(t, ok)
	require.Equal(t, `: | kcat -P -b "$KAFKA_BROKERS" -t $'orders' -Z /dev/stdin`, cmdLine)

	// What an argument cannot carry is said, not silently changed.
	_, ok, why = kcatCommand(topic, &api.RecordDetail{Key: apiBytes([]byte{'a', 0}), Value: apiBytes(nil)})
	require.False(t, ok)
	require.Contains(t, why, "NUL")
	_, ok, why = kcatCommand(topic, &api.RecordDetail{Key: apiBytes(nil), Value: apiBytes(nil),
		Headers: []api.Header{{Key: "a=b", Value: apiBytes([]byte("v"))}}})
	require.False(t, ok)
	require.Contains(t, why, `"a=b"`)
}
