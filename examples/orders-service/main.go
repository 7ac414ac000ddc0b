// Command orders-service is an example platform service: it consumes `orders`, calls a
// downstream dependency (a payment service) for each one, and uses the deadletter
// package so that a failure goes to the DLQ instead of being skipped or blocking the
// partition. The downstream can be switched down and up, and a bug that rejects some
// orders as poison can be "fixed", over a small HTTP control API:
//
//	POST /downstream/down   POST /downstream/up   POST /fix   GET /stats
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/deadletter"
)

func main() {
	var (
		bootstrap   = flag.String("bootstrap", os.Getenv("KAFKA_BOOTSTRAP_SERVERS"), "Kafka bootstrap servers")
		topic       = flag.String("topic", "orders", "topic to consume")
		dlq         = flag.String("dlq", "orders.dlq", "dead-letter topic")
		group       = flag.String("group", "orders-service", "consumer group")
		listen      = flag.String("listen", "127.0.0.1:8090", "control API address")
		downFor     = flag.Duration("down-for", 0, "the downstream is down for this long after start")
		poisonEvery = flag.Int("poison-every", 0, "orders whose number is a multiple of this are rejected until POST /fix (0: none)")
	)
	flag.Parse()
	log := zerolog.New(os.Stderr).With().Timestamp().Str("service", "orders-service").Logger()
	if err := run(*bootstrap, *topic, *dlq, *group, *listen, *downFor, *poisonEvery, log); err != nil {
		log.Error().Err(err).Msg("stopped")
		os.Exit(1)
	}
}

// downstream stands for the dependency every order needs.
type downstream struct {
	up          atomic.Bool
	fixed       atomic.Bool
	poisonEvery int

	mu        sync.Mutex
	processed map[int]int // order number → times processed successfully
	failures  map[string]int
}

var (
	errUnavailable = classedError{"downstream_unavailable", "service B: connection refused"}
	errPoison      = classedError{"validation", "service B: order rejected: malformed total"}
)

type classedError struct{ class, msg string }

func (e classedError) Error() string      { return e.msg }
func (e classedError) ErrorClass() string { return e.class }

func (d *downstream) handle(_ context.Context, m *kafka.Message) error {
	n, err := strconv.Atoi(string(m.Key))
	if err != nil {
		return fmt.Errorf("order key %q is not a number: %w", m.Key, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !d.up.Load():
		d.failures[errUnavailable.class]++
		return errUnavailable
	case d.poisonEvery > 0 && n%d.poisonEvery == 0 && !d.fixed.Load():
		d.failures[errPoison.class]++
		return errPoison
	}
	d.processed[n]++
	return nil
}

// Stats is what GET /stats returns.
type Stats struct {
	DownstreamUp    bool           `json:"downstream_up"`
	Fixed           bool           `json:"fixed"`
	ProcessedUnique int            `json:"processed_unique"`
	ProcessedTotal  int            `json:"processed_total"`
	Failures        map[string]int `json:"failures"`
	Missing         []int          `json:"missing,omitempty"` // with ?expect=N: orders 0..N-1 not processed
}

func (d *downstream) stats(expect int) Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Stats{DownstreamUp: d.up.Load(), Fixed: d.fixed.Load(), ProcessedUnique: len(d.processed), Failures: map[string]int{}}
	for _, c := range d.processed {
		s.ProcessedTotal += c
	}
	for k, v := range d.failures {
		s.Failures[k] = v
	}
	for i := range expect {
		if d.processed[i] == 0 {
			s.Missing = append(s.Missing, i)
		}
	}
	return s
}

func run(bootstrap, topic, dlq, group, listen string, downFor time.Duration, poisonEvery int, log zerolog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d := &downstream{poisonEvery: poisonEvery, processed: map[int]int{}, failures: map[string]int{}}
	d.up.Store(downFor == 0)
	if downFor > 0 {
		log.Info().Dur("down_for_ms", downFor).Msg("downstream is down")
		time.AfterFunc(downFor, func() { d.up.Store(true); log.Info().Msg("downstream is back up") })
	}

	pub, err := deadletter.NewPublisher(deadletter.PublisherConfig{BootstrapServers: bootstrap, Topic: dlq})
	if err != nil {
		return err
	}
	defer pub.Close(10 * time.Second)
	c, err := deadletter.NewConsumer(deadletter.ConsumerConfig{
		BootstrapServers: bootstrap, Group: group, Topics: []string{topic}, Log: log,
	}, pub, d.handle)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	toggle := func(f func()) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { f(); w.WriteHeader(http.StatusNoContent) }
	}
	mux.HandleFunc("POST /downstream/down", toggle(func() { d.up.Store(false) }))
	mux.HandleFunc("POST /downstream/up", toggle(func() { d.up.Store(true) }))
	mux.HandleFunc("POST /fix", toggle(func() { d.fixed.Store(true); log.Info().Msg("poison bug fixed") }))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		expect, _ := strconv.Atoi(r.URL.Query().Get("expect"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d.stats(expect))
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("control API stopped")
			stop()
		}
	}()
	log.Info().Str("listen", listen).Str("topic", topic).Str("dlq", dlq).Msg("consuming")
	err = c.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(sctx))
}
