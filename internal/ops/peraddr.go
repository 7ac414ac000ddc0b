package ops

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// perAddrListener closes a new connection at once when its client address already holds
// max connections, so that one client (300 idle sockets) cannot take every place of
// MaxConns while the others wait.
type perAddrListener struct {
	net.Listener
	max     int
	refused prometheus.Counter

	mu   sync.Mutex
	open map[string]int
}

func newPerAddrListener(ln net.Listener, max int, refused prometheus.Counter) *perAddrListener {
	return &perAddrListener{Listener: ln, max: max, refused: refused, open: map[string]int{}}
}

// Accept returns the next connection whose address is under its cap.
func (l *perAddrListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			l.refused.Inc()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &addrConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *perAddrListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
}

// addrConn gives its address's place back once closed.
type addrConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *addrConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
