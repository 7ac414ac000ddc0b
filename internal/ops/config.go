package ops

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// HTTP is the operations listener: /healthz, /readyz and /metrics (and the API on dlq-admin).
type HTTP struct {
	// Listen is the host:port of /healthz, /readyz (ready only when PostgreSQL, Kafka for
	// the worker, and every route's topics answer), /metrics, and dlq-admin's API and
	// console.
	Listen string `yaml:"listen"`
	// ReadHeaderTimeout is how long a connection may take to send its request headers
	// (capped at 64 KiB).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout is how long a connection may take to send its whole request.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout is how long a connection may take to receive its answer.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout is how long a keep-alive connection may idle between requests.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns is how many connections are served at once; further ones wait in the
	// kernel's accept queue.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerAddr caps one client address's connections (behind a proxy, all of them
	// come from the proxy's address: raise it to max_conns).
	MaxConnsPerAddr int `yaml:"max_conns_per_addr"`
	// TLSCertFile and TLSKeyFile (PEM: certificate chain and key) make the listener serve
	// TLS 1.2+; both or neither. The files are read again when either changes, so a renewal
	// needs no restart (a broken one keeps the previous certificate, logged at WARN).
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// AllowInsecure lets dlq-admin listen on a non-loopback address without TLS, for a
	// TLS-terminating proxy in front of it (dlq-admin only).
	AllowInsecure bool `yaml:"allow_insecure"`
}

// WithDefaults fills the timeouts and the connection cap.
func (h *HTTP) WithDefaults() {
	l := h.Listener().WithDefaults()
	h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.MaxConns, h.MaxConnsPerAddr =
		l.ReadHeaderTimeout, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.MaxConns, l.MaxConnsPerAddr
}

// Listener is the ops server's view of h.
func (h HTTP) Listener() Listen {
	return Listen{Addr: h.Listen, ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout,
		WriteTimeout: h.WriteTimeout, IdleTimeout: h.IdleTimeout, MaxConns: h.MaxConns, MaxConnsPerAddr: h.MaxConnsPerAddr,
		CertFile: h.TLSCertFile, KeyFile: h.TLSKeyFile}
}

// Loopback reports whether the listen address accepts only local connections.
func (h HTTP) Loopback() bool {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate checks that the listen address is host:port, the bounds positive, and TLS
// given as a certificate and its key.
func (h HTTP) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		errs = append(errs, fmt.Errorf("http.listen: %q is not host:port: %v", h.Listen, err))
	}
	for key, d := range map[string]time.Duration{"read_header_timeout": h.ReadHeaderTimeout,
		"read_timeout": h.ReadTimeout, "write_timeout": h.WriteTimeout, "idle_timeout": h.IdleTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("http.%s: must be positive, got %s", key, d))
		}
	}
	if h.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("http.max_conns: must be at least 1, got %d", h.MaxConns))
	}
	if h.MaxConnsPerAddr < 1 {
		errs = append(errs, fmt.Errorf("http.max_conns_per_addr: must be at least 1, got %d", h.MaxConnsPerAddr))
	}
	if (h.TLSCertFile == "") != (h.TLSKeyFile == "") {
		errs = append(errs, errors.New("http.tls_cert_file, http.tls_key_file: give both or neither"))
	}
	return errors.Join(errs...)
}
