package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv"
)

// On a loaded machine the process stack.sh starts in the background stays a shell for a
// while (it evaluates the class path) before it becomes the broker's JVM. The script must
// wait for the broker to answer on its port, not take the not-yet-Java process for a broker
// that exited.
// The stack lives in a temporary DLQ_CACHE_DIR on ports of its own, beside the shared one.
func TestStackWaitsForTheBrokerWhileItsProcessIsNotYetJava(t *testing.T) {
	testenv.Integration(t)
	libs := filepath.Join(testenv.CacheDir(t), "kafka", "libs")
	if _, err := os.Stat(filepath.Join(libs, ".pom.sha")); err != nil {
		t.Fatalf("Kafka jars not found in %s: run `make up` once (%v)", libs, err)
	}

	cache := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "kafka"), 0o755))
	require.NoError(t, os.Symlink(libs, filepath.Join(cache, "kafka", "libs")))

	// setsid, which the script runs in the background to start the broker, is replaced by
	// a wrapper that saves its arguments and re-executes itself as setsid.slow: for three
	// seconds the started process is neither Java nor named after the broker.
	setsid, err := exec.LookPath("setsid")
	require.NoError(t, err)
	bin := t.TempDir()
	args := filepath.Join(bin, "setsid-args")
	wrapper := "#!/bin/sh\nprintf '%s\\0' \"$@\" >" + args + "\nexec \"$0.slow\"\n"
	slow := "#!/usr/bin/env bash\nsleep 3\nmapfile -d '' args <" + args + "\nexec " + setsid + " \"${args[@]}\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "setsid"), []byte(wrapper), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "setsid.slow"), []byte(slow), 0o755))

	port, controller := testenv.ReservePort(t), testenv.ReservePort(t)
	env := append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"DLQ_CACHE_DIR="+cache,
		"DLQ_KAFKA_PORT="+strconv.Itoa(port),
		"DLQ_KAFKA_CONTROLLER_PORT="+strconv.Itoa(controller),
		"KAFKA_BOOTSTRAP_SERVERS=")
	stack := func(args ...string) (string, error) {
		cmd := exec.Command("./stack.sh", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := stack("kafka-stop"); err != nil {
			t.Errorf("kafka-stop: %v\n%s", err, out)
		}
	})

	out, err := stack("kafka-start")
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "Kafka: ready")
	out, err = stack("status")
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "kafka: running on 127.0.0.1:"+strconv.Itoa(port))
}
