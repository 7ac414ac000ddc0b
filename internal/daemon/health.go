package daemon

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/ops"
)

// HealthCommand is the `health` subcommand both binaries carry: it asks the health
// endpoint of the binary running beside it (the configuration's http.listen, on loopback)
// whether it is ready, or with --live whether it is alive, and exits 0 or 1. It is the
// container's health check where there is no shell and no curl (the distroless image:
// Docker's HEALTHCHECK, compose). It sends no token.
func HealthCommand(load func() (ops.HTTP, error)) *cobra.Command {
	var live bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 when the running binary's /readyz (--live: /healthz) answers OK, else 1",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := load()
			if err != nil {
				return err
			}
			path := "/readyz"
			if live {
				path = "/healthz"
			}
			url, err := localURL(h, path)
			if err != nil {
				return err
			}
			// Loopback to its own process: the certificate names the Service, not 127.0.0.1.
			client := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, err := client.Get(url)
			if err != nil {
				return fmt.Errorf("health: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("health: %s %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", path, strings.TrimSpace(string(body)))
			return nil
		},
	}
	cmd.Flags().BoolVar(&live, "live", false, "ask /healthz (the process answers) instead of /readyz (its dependencies answer)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// localURL is the URL of path on the listener h describes, reached on loopback.
func localURL(h ops.HTTP, path string) (string, error) {
	host, port, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return "", fmt.Errorf("health: http.listen %q: %w", h.Listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("health: http.listen %q has no fixed port to ask", h.Listen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if h.TLSCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path, nil
}
