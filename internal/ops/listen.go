package ops

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/net/netutil"
)

// Listen is how the server listens: its address, the bounds on each connection, and TLS
// when CertFile and KeyFile are set. Zero durations and MaxConns take the defaults.
type Listen struct {
	Addr string
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout the whole request
	// (body included), WriteTimeout the answer, IdleTimeout a keep-alive connection
	// waiting for its next request.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns caps the connections served at once; further ones wait in the kernel's
	// accept queue until one closes.
	MaxConns int
	// MaxConnsPerAddr caps the connections of one client address; further ones are
	// closed at once, so one client cannot hold every place of MaxConns.
	MaxConnsPerAddr int
	// CertFile and KeyFile are PEM files, read again when either changes.
	CertFile, KeyFile string
}

// The defaults of Listen.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConns          = 256
	DefaultMaxConnsPerAddr   = 64
	// MaxHeaderBytes bounds a request's headers (Go's default is 1 MiB).
	MaxHeaderBytes = 64 << 10
)

// WithDefaults fills the zero bounds.
func (l Listen) WithDefaults() Listen {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerAddr == 0 {
		l.MaxConnsPerAddr = min(DefaultMaxConnsPerAddr, l.MaxConns)
	}
	return l
}

// TLS reports whether the listener serves TLS.
func (l Listen) TLS() bool { return l.CertFile != "" || l.KeyFile != "" }

// listen binds l.Addr, capped at MaxConns, and returns the server that serves it.
func (l Listen) listen(h *Server) (net.Listener, *http.Server, error) {
	l = l.WithDefaults()
	srv := &http.Server{Handler: h.Mux, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: MaxHeaderBytes,
	}
	if l.TLS() {
		certs := &certReloader{certFile: l.CertFile, keyFile: l.KeyFile, log: h.log}
		if _, err := certs.get(nil); err != nil {
			return nil, nil, err
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: aeadSuites, GetCertificate: certs.get}
		srv.Handler = strictTransport(h.Mux)
	}
	ln, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return nil, nil, err
	}
	ln = netutil.LimitListener(newPerAddrListener(ln, l.MaxConnsPerAddr, h.refusedConns), l.MaxConns)
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return ln, srv, nil
}

// aeadSuites are the TLS 1.2 suites served: forward-secret key exchange with AEAD
// ciphers only, no CBC and no SHA-1. TLS 1.3, whose suites are all AEAD, is preferred by
// every client that offers it.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// strictTransport tells browsers to come back only over https (HSTS), on every answer of a
// TLS listener.
func strictTransport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		next.ServeHTTP(w, r)
	})
}

// certReloader serves the certificate of its files and loads them again when either file
// changes (a renewal), keeping the previous certificate if the new files do not load.
type certReloader struct {
	certFile, keyFile string
	log               zerolog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	version string // the files' modification times and sizes when cert was loaded
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	v, err := fileVersion(c.certFile, c.keyFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && v == c.version {
		return c.cert, nil
	}
	if err == nil {
		var cert tls.Certificate
		if cert, err = tls.LoadX509KeyPair(c.certFile, c.keyFile); err == nil {
			if c.cert != nil {
				c.log.Info().Str("cert_file", c.certFile).Msg("TLS certificate reloaded")
			}
			c.cert, c.version = &cert, v
			return c.cert, nil
		}
	}
	err = fmt.Errorf("http.tls_cert_file/tls_key_file: %w", err)
	if c.cert == nil {
		return nil, err
	}
	c.log.Warn().Err(err).Msg("cannot load the changed TLS certificate; serving the previous one")
	c.version = v // warn once per change
	return c.cert, nil
}

func fileVersion(paths ...string) (string, error) {
	v := ""
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		if !fi.Mode().IsRegular() {
			return "", errors.New(p + " is not a regular file")
		}
		v += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return v, nil
}
