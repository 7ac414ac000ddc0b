package ops_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/ops"
	"github.com/dlqops/dlq/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, l ops.Listen) *ops.Server {
	t.Helper()
	return startLogging(t, zerolog.Nop(), l)
}

func startLogging(t *testing.T, log zerolog.Logger, l ops.Listen) *ops.Server {
	t.Helper()
	s := ops.New(log)
	s.Mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})
	l.Addr = "127.0.0.1:0"
	require.NoError(t, s.Start(l))
	t.Cleanup(func() { _ = s.Stop(t.Context()) })
	return s
}

// closedByServer reads conn until the server closes it. The read deadline only keeps a
// broken server from hanging the test: the server's own timeouts are far shorter.
func closedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open")
}

// A client that sends nothing, sends its body slowly, or idles on a keep-alive connection
// is cut off by the read-header, read and idle timeouts.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	s := start(t, ops.Listen{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, WriteTimeout: time.Minute})

	silent, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer silent.Close()
	closedByServer(t, silent)

	slow, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer slow.Close()
	_, err = slow.Write([]byte("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly a little"))
	require.NoError(t, err)
	closedByServer(t, slow)

	idle, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer idle.Close()
	_, err = idle.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	closedByServer(t, idle)
}

// Connections beyond max_conns wait until one closes.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	s := start(t, ops.Listen{MaxConns: 2})
	held := make([]net.Conn, 2)
	for i := range held {
		c, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err)
		defer c.Close()
		held[i] = c
	}
	third, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer third.Close()
	_, err = third.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	require.NoError(t, err)
	// Not served while two connections are held, however long we wait.
	require.NoError(t, third.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	_, err = third.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "answered beyond the cap: %v", err)

	require.NoError(t, held[0].Close())
	require.NoError(t, third.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	require.NoError(t, err, "served once a slot freed")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 and its key, and returns
// its serial number.
func writeCert(t *testing.T, certFile, keyFile string) *big.Int {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "dlq-admin test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return serial
}

// TLS from the configured files; a renewed certificate is served from the next handshake
// on, a broken one keeps the previous; a bad certificate fails start-up.
func TestTLSAndReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeCert(t, certFile, keyFile)
	logs := &testenv.SyncBuffer{}
	s := startLogging(t, zerolog.New(logs), ops.Listen{CertFile: certFile, KeyFile: keyFile})

	served := func() *big.Int {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test checks which certificate is served
		resp, err := client.Get("https://" + s.Addr() + "/healthz")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.TLS.PeerCertificates[0].SerialNumber
	}
	require.Equal(t, first, served())

	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP is refused")

	second := writeCert(t, certFile, keyFile)
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(certFile, later, later))
	require.Equal(t, second, served())

	require.NoError(t, os.WriteFile(certFile, []byte("not a certificate"), 0o600))
	require.Equal(t, second, served(), "a broken renewal keeps the previous certificate")
	require.Equal(t, second, served(), "still, and warned once")
	warned := logs.String()
	require.Equal(t, 1, strings.Count(warned, "cannot load the changed TLS certificate"), "%s", warned)
	require.Contains(t, warned, `"level":"warn","component":"ops","error":"http.tls_cert_file/tls_key_file:`)

	old := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}}} //nolint:gosec // only the version matters
	_, err = old.Get("https://" + s.Addr() + "/healthz")
	require.Error(t, err, "TLS 1.1 is refused")

	bad := ops.New(zerolog.Nop())
	require.ErrorContains(t, bad.Start(ops.Listen{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}), "tls_cert_file")
}

// TLS 1.3 is chosen when the client offers it; TLS 1.2 only with forward-secret AEAD
// suites (no CBC, no SHA-1); every answer over TLS carries HSTS.
func TestTLSSuitesAndHSTS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCert(t, certFile, keyFile)
	s := start(t, ops.Listen{CertFile: certFile, KeyFile: keyFile})
	get := func(cfg *tls.Config) (*http.Response, error) {
		cfg.InsecureSkipVerify = true //nolint:gosec // the test checks the protocol, not the certificate
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg}}
		resp, err := client.Get("https://" + s.Addr() + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := get(&tls.Config{})
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS13), resp.TLS.Version)
	require.Equal(t, "max-age=63072000; includeSubDomains", resp.Header.Get("Strict-Transport-Security"))

	for _, suite := range tls.CipherSuites() {
		resp, err := get(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite.ID}})
		aead := strings.Contains(suite.Name, "_GCM_") || strings.Contains(suite.Name, "_CHACHA20_POLY1305")
		if !slices.Contains(suite.SupportedVersions, tls.VersionTLS12) || !strings.Contains(suite.Name, "ECDSA") {
			continue // not a TLS 1.2 suite for this ECDSA certificate
		}
		if aead {
			require.NoError(t, err, suite.Name)
			require.Equal(t, suite.ID, resp.TLS.CipherSuite)
		} else {
			require.Error(t, err, "%s is served", suite.Name)
		}
	}
	for _, suite := range tls.InsecureCipherSuites() {
		_, err := get(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite.ID}})
		require.Error(t, err, "%s is served", suite.Name)
	}
}

// One client address holds at most MaxConnsPerAddr connections: its further ones are
// closed at once (and counted), so its idle sockets cannot take every place of MaxConns
// while another client waits.
func TestConnectionCapPerAddress(t *testing.T) {
	t.Parallel()
	// The server's own timeouts do not close the idle sockets while the test runs.
	s := start(t, ops.Listen{MaxConns: 4, MaxConnsPerAddr: 2, ReadHeaderTimeout: 10 * time.Minute,
		ReadTimeout: 10 * time.Minute, IdleTimeout: 10 * time.Minute})
	from := func(ip string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return d.Dial("tcp", s.Addr())
	}
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Close()
		}
	})
	for range 10 {
		c, err := from("127.0.0.1")
		require.NoError(t, err)
		idle = append(idle, c)
	}
	other, err := from("127.0.0.2")
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, other.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(other), nil)
	require.NoError(t, err, "another address is served")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "dlq_http_connections_refused_total 8")
	for _, c := range idle[2:] {
		closedByServer(t, c)
	}
}
