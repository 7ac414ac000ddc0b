package testenv

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// holdersEnv makes TestReservationsHeldAtOnceNeverShareAPort, run as a child process,
// reserve that many ports, print them and hold them until its standard input closes.
const holdersEnv = "DLQ_TEST_PORTS_HOLD"

// reserveConcurrently reserves n ports in n goroutines for t and returns them.
func reserveConcurrently(t *testing.T, n int) []int {
	ports := make([]int, n)
	var wg sync.WaitGroup
	for i := range ports {
		wg.Go(func() { ports[i] = ReservePort(t) })
	}
	wg.Wait()
	return ports
}

// Reservations held at the same time, by goroutines of one test process and by other test
// processes (other packages of `go test ./...`), never get the same port, although nothing
// listens on any of them.
func TestReservationsHeldAtOnceNeverShareAPort(t *testing.T) {
	if n := os.Getenv(holdersEnv); n != "" {
		count, err := strconv.Atoi(n)
		require.NoError(t, err)
		for _, p := range reserveConcurrently(t, count) {
			_, _ = os.Stdout.WriteString("reserved " + strconv.Itoa(p) + "\n")
		}
		_, _ = io.Copy(io.Discard, os.Stdin) // hold until the parent has seen every process's ports
		return
	}

	const processes, each = 4, 200
	owner := map[int]string{}
	claim := func(who string, ports []int) {
		for _, p := range ports {
			if first, taken := owner[p]; taken {
				t.Fatalf("port %d reserved by %s and, at the same time, by %s", p, first, who)
			}
			owner[p] = who
		}
	}
	var holders []*exec.Cmd
	t.Cleanup(func() {
		for _, h := range holders {
			_ = h.Wait()
		}
	})
	for i := range processes {
		h := exec.Command(os.Args[0], "-test.run=^TestReservationsHeldAtOnceNeverShareAPort$", "-test.count=1")
		h.Env = append(os.Environ(), holdersEnv+"="+strconv.Itoa(each))
		h.Stderr = os.Stderr
		stdin, err := h.StdinPipe()
		require.NoError(t, err)
		t.Cleanup(func() { _ = stdin.Close() })
		stdout, err := h.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, h.Start())
		holders = append(holders, h)
		var ports []int
		for lines := bufio.NewScanner(stdout); len(ports) < each && lines.Scan(); {
			if p, ok := strings.CutPrefix(lines.Text(), "reserved "); ok {
				port, err := strconv.Atoi(p)
				require.NoError(t, err)
				ports = append(ports, port)
			}
		}
		require.Len(t, ports, each, "process %d reported fewer ports than it reserved", i)
		claim("process "+strconv.Itoa(i), ports)
	}
	claim("the test's own goroutines", reserveConcurrently(t, each))
	require.Len(t, owner, (processes+1)*each)
}

// The kernel gives a connection a local port from its ephemeral range: a reserved port
// lies outside it, so no connection takes it, also while its server is stopped.
func TestReservedPortsLieOutsideTheEphemeralRange(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	require.NoError(t, err)
	fields := strings.Fields(string(raw))
	require.Len(t, fields, 2)
	low, err := strconv.Atoi(fields[0])
	require.NoError(t, err)
	high, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	for range 50 {
		p := ReservePort(t)
		require.True(t, p < low || p > high, "port %d lies in the ephemeral range %d-%d", p, low, high)
	}
}

// A port stays reserved until its test ends, then another test may reserve it.
func TestAReservationEndsWithItsTest(t *testing.T) {
	var port int
	t.Run("holder", func(t *testing.T) {
		port = ReservePort(t)
		_, err := holdPort(PortsDir(), port)
		require.Error(t, err, "port %d reserved twice while its test runs", port)
	})
	lock, err := holdPort(PortsDir(), port)
	require.NoError(t, err, "port %d still reserved after its test ended", port)
	require.NoError(t, lock.Close())
}

// A port another program listens on is not reserved.
func TestAPortInUseIsNotReserved(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = holdPort(t.TempDir(), l.Addr().(*net.TCPAddr).Port)
	require.ErrorContains(t, err, "in use")
}
