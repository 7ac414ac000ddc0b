// Package ops serves the operations endpoints every binary exposes: /healthz (the process
// is alive), /readyz (its dependencies answer) and /metrics (Prometheus).
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Check reports whether one dependency answers; a nil error means ready.
type Check func(ctx context.Context) error

// Server is the operations HTTP server. Extra handlers (the admin API) can be mounted on Mux.
type Server struct {
	Mux      *http.ServeMux
	Registry *prometheus.Registry

	log    zerolog.Logger
	mu     sync.Mutex
	checks map[string]Check
	srv    *http.Server
	ln     net.Listener
	// refusedConns counts connections closed because their address held its cap.
	refusedConns prometheus.Counter
	stopped      chan struct{}
}

// CheckTimeout bounds each readiness check so a hung dependency reads as not ready.
const CheckTimeout = 2 * time.Second

// New builds a server with a fresh registry holding the Go and process collectors.
func New(log zerolog.Logger) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s := &Server{
		Mux:      http.NewServeMux(),
		Registry: reg,
		log:      log.With().Str("component", "ops").Logger(),
		checks:   map[string]Check{},
	}
	s.refusedConns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dlq_http_connections_refused_total",
		Help: "Connections closed at once because their client address already held http.max_conns_per_addr.",
	})
	reg.MustRegister(s.refusedConns)
	// Readiness as a series too, so an alert sees a pod that runs but cannot work.
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dlq_ready",
		Help: "1 when every readiness check passes (as /readyz answers 200), else 0; checked at each scrape.",
	}, func() float64 {
		if len(s.Ready(context.Background())) > 0 {
			return 0
		}
		return 1
	}))
	s.Mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.Mux.HandleFunc("GET /readyz", s.ready)
	s.Mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return s
}

// AddCheck registers a named readiness check.
func (s *Server) AddCheck(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// Ready runs every check and returns the failures by name.
func (s *Server) Ready(ctx context.Context) map[string]string {
	s.mu.Lock()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	checks := s.checks
	s.mu.Unlock()
	sort.Strings(names)
	failed := map[string]string{}
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		if err := checks[n](cctx); err != nil {
			failed[n] = err.Error()
		}
		cancel()
	}
	return failed
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	failed := s.Ready(r.Context())
	if len(failed) > 0 {
		s.log.Warn().Interface("failed", failed).Msg("not ready")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "failed": failed})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Start listens as l says and serves in the background. It returns once the port is bound
// (and the TLS certificate loaded), so a bad address or certificate fails start-up.
func (s *Server) Start(l Listen) error {
	ln, srv, err := l.listen(s)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.srv = srv
	s.stopped = make(chan struct{})
	go func() {
		defer close(s.stopped)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("ops server stopped")
		}
	}()
	s.log.Info().Str("addr", ln.Addr().String()).Bool("tls", l.TLS()).Msg("serving /healthz /readyz /metrics")
	return nil
}

// Addr is the bound address (useful with port 0), or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop shuts the server down, waiting for in-flight requests until ctx ends. Safe before
// Start and twice.
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	<-s.stopped
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}
