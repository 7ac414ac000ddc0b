package schemas

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
)

// Config is how dlq-admin reaches a Confluent-compatible Schema Registry. Secrets come
// from files (a mounted Secret), never from the YAML itself.
type Config struct {
	// URL is the registry's base URL (for Apicurio, its /apis/ccompat/v7); empty turns
	// decoding off: payloads are shown as bytes.
	URL string `yaml:"url"`
	// Username and PasswordFile give basic auth.
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
	// TokenFile holds a bearer token, sent instead of basic auth.
	TokenFile string `yaml:"token_file"`
	// CAFile, CertFile and KeyFile are PEM files for TLS: the CA that signed the
	// registry's certificate, and a client certificate and key for mutual TLS.
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether a registry is configured.
func (c *Config) Enabled() bool { return c.URL != "" }

// Validate checks the settings without reaching the registry.
func (c *Config) Validate() error {
	if !c.Enabled() {
		if *c != (Config{}) {
			return errors.New("schema_registry.url: required when any other schema_registry setting is given")
		}
		return nil
	}
	var errs []error
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("schema_registry.url: %q is not an http:// or https:// URL", c.URL))
	}
	if (c.Username == "") != (c.PasswordFile == "") {
		errs = append(errs, errors.New("schema_registry.username and schema_registry.password_file: give both or neither"))
	}
	if c.Username != "" && c.TokenFile != "" {
		errs = append(errs, errors.New("schema_registry.token_file: give basic auth or a bearer token, not both"))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("schema_registry.cert_file and schema_registry.key_file: give both or neither"))
	}
	return errors.Join(errs...)
}

// clientConfig reads the secret files into the client's configuration.
func (c *Config) clientConfig() (*schemaregistry.Config, error) {
	cc := schemaregistry.NewConfig(c.URL)
	if c.PasswordFile != "" {
		pw, err := readSecret("schema_registry.password_file", c.PasswordFile)
		if err != nil {
			return nil, err
		}
		cc.BasicAuthCredentialsSource = "USER_INFO"
		cc.BasicAuthUserInfo = c.Username + ":" + pw
	}
	if c.TokenFile != "" {
		token, err := readSecret("schema_registry.token_file", c.TokenFile)
		if err != nil {
			return nil, err
		}
		cc.BearerAuthCredentialsSource = "STATIC_TOKEN"
		cc.BearerAuthToken = token
	}
	tlsConfig, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	// Our own transport, so that Close can drop its idle connections.
	cc.HTTPClient = &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
	return cc, nil
}

// tlsConfig reads the CA and the client certificate; nil when neither is given.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("schema_registry.ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("schema_registry.ca_file: %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("schema_registry.cert_file and key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// readSecret reads a one-line secret file, without its trailing line break.
func readSecret(key, path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	s := strings.TrimRight(string(raw), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", key, path)
	}
	return s, nil
}
