package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A server of another process that takes a port number (a private broker, a private
// PostgreSQL, Prometheus) needs a port that stays its own for the whole test, also while a
// fault test has it stopped. A port probed free and released does not: until the server
// binds it, or while the server is down, the kernel may hand it to any bind(:0) of the
// machine (another test's probe or server, an httptest server, a binary) or to an outgoing
// connection as its local port.
// A reservation holds instead:
//   - the port lies outside the kernel's ephemeral range (net.ipv4.ip_local_port_range),
//     from which bind(:0) and every outgoing connection draw their ports;
//   - an exclusive lock (flock) on a file named after the port in PortsDir, which every
//     test process of the machine shares, keeps other tests off it until the test ends;
//   - a bind proves that no other program listens on it when it is reserved.

// reservableLow and reservableHigh bound the ports reservations are drawn from, less the
// ephemeral range: above the ports the development stack and its servers use.
const reservableLow, reservableHigh = 20000, 65535

// ephemeralRangeFile is the kernel's range of ports for bind(:0) and outgoing connections.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// PortsDir holds a lock file per reserved port, shared by every test process of the
// machine that uses the same temporary directory.
func PortsDir() string { return filepath.Join(os.TempDir(), "dlq-test-ports") }

// ReservePort reserves a loopback port until the test ends, for a server of another
// process that takes a port number: no other test is given it, and the kernel does not
// give it to a connection, even while the server is stopped. A server of this process,
// or one that binds 127.0.0.1:0 and reports its address (our binaries), does that instead.
func ReservePort(t testing.TB) int {
	t.Helper()
	low, high, err := ephemeralRange()
	if err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	candidates := reservablePorts(low, high)
	if len(candidates) == 0 {
		// Nothing lies outside the ephemeral range: tests still never share a port, but a
		// connection may take one while its server is down.
		t.Logf("the ephemeral port range %d-%d covers every reservable port: reserving inside it", low, high)
		candidates = reservablePorts(0, 0) // no range left out
	}
	dir := PortsDir()
	err = os.Mkdir(dir, 0o777)
	if err == nil {
		// Like the temporary directory itself: every user's tests reserve ports in it.
		err = os.Chmod(dir, 0o777|os.ModeSticky)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("reserve a port: %v", err)
	}
	// A random start keeps a port from going straight to the next test, which a client of
	// the last one may still be trying to reach.
	start := rand.IntN(len(candidates))
	var last error
	for i := range candidates {
		port := candidates[(start+i)%len(candidates)]
		lock, err := holdPort(dir, port)
		if err != nil {
			last = err
			continue
		}
		t.Cleanup(func() { _ = lock.Close() })
		return port
	}
	t.Fatalf("reserve a port: none of %d ports free (last: %v)", len(candidates), last)
	return 0
}

// ReserveAddr is ReservePort as a loopback host:port.
func ReserveAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ReservePort(t)))
}

// holdPort locks port's file in dir and checks that nothing listens on the port; the
// reservation lasts until the returned file is closed.
func holdPort(dir string, port int) (*os.File, error) {
	// Read-only: flock needs no write access, and another user's lock file serves as well.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("port %d: reserved by another test: %w", port, err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("port %d: in use: %w", port, err)
	}
	_ = l.Close()
	return f, nil
}

// ephemeralRange reads the kernel's ephemeral port range.
func ephemeralRange() (low, high int, err error) {
	raw, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return 0, 0, fmt.Errorf("the ephemeral port range: %w", err)
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 2 {
		low, err = strconv.Atoi(fields[0])
		if err == nil {
			high, err = strconv.Atoi(fields[1])
		}
		if err == nil {
			return low, high, nil
		}
	}
	return 0, 0, fmt.Errorf("the ephemeral port range: %s holds %q", ephemeralRangeFile, raw)
}

// reservablePorts are the reservable ports outside the ephemeral range low-high.
func reservablePorts(low, high int) []int {
	var ports []int
	for p := reservableLow; p <= reservableHigh; p++ {
		if p < low || p > high {
			ports = append(ports, p)
		}
	}
	return ports
}
