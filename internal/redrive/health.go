package redrive

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/backoff"
	"github.com/dlqops/dlq/internal/logging"
)

// Healthy means working: a route whose topics match no partition is not ready, a run is a
// success only when it read every partition it holds to its high watermark (only then
// does dlq_worker_last_success_timestamp_seconds move), and
// dlq_worker_oldest_due_age_seconds tells how long the oldest due scheduled record waits.

// ErrRunIncomplete is RunNow's answer for a run that could not read every partition the
// route holds to its high watermark (a topic missing, Kafka unreachable): it is recorded
// as failed and the last-success time does not move.
var ErrRunIncomplete = errors.New("run incomplete")

// oldestDueEvery is how often the oldest due record's age is read from PostgreSQL.
const oldestDueEvery = 15 * time.Second

// watchOldestDue keeps dlq_worker_oldest_due_age_seconds of every route; it runs on its
// own goroutine until ctx ends, so the gauge keeps growing while a route is stuck.
func (e *Engine) watchOldestDue(ctx context.Context) {
	t := time.NewTicker(oldestDueEvery)
	defer t.Stop()
	for {
		for _, w := range e.workers {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			due, ok, err := e.store.OldestDue(cctx, w.route.Name)
			cancel()
			switch {
			case err != nil:
				continue // PostgreSQL down: readiness says so; the gauge keeps its last value
			case ok:
				e.metrics.oldestDue.WithLabelValues(w.route.Name).Set(max(0, e.clock().Sub(due).Seconds()))
			default:
				e.metrics.oldestDue.WithLabelValues(w.route.Name).Set(0)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probeTimeout is what is left of a readiness probe's deadline, 2 s without one.
func probeTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Millisecond, time.Until(dl))
	}
	return 2 * time.Second
}

// health is a route's account of whether it can progress, for readiness, and its
// rate-limited warnings. The loop owns stallN; stalled and kafkaDown are shared with Ready
// and the storers, as atomics.
type health struct {
	log      zerolog.Logger
	route    string
	errors   *prometheus.CounterVec // dlq_worker_errors_total{route,kind}
	producer *kafka.Producer        // asked for metadata by Ready while kafkaDown

	stalled atomic.Value // string: why the route cannot progress, "" when fine
	// fenced: the route stopped because another worker holds its group.instance.id
	// (identity.go); "" otherwise. It stays until the worker is restarted.
	fenced atomic.Value
	// kafkaDown is set when librdkafka reports every broker down and cleared when a
	// record comes or is acknowledged, or when Ready's probe gets an answer (an idle
	// worker sees no record to tell it the cluster is back).
	kafkaDown atomic.Bool
	stallN    int               // consecutive transient failures, for the stall backoff
	warns     *logging.Throttle // one warning per kind and warnInterval
}

func newHealth(log zerolog.Logger, route string, errs *prometheus.CounterVec, producer *kafka.Producer) *health {
	h := &health{log: log, route: route, errors: errs, producer: producer, warns: logging.NewThrottle(warnInterval)}
	h.stalled.Store("")
	h.fenced.Store("")
	return h
}

// warnInterval is the least time between two warnings of one kind.
const warnInterval = logging.WarnInterval

// warnDue reports whether a warning of kind may be logged now, and if so marks it logged.
func (h *health) warnDue(kind string) bool {
	_, ok := h.warns.Allow(kind)
	return ok
}

// warnEvery logs at most once per interval per kind, so an outage gives clear, bounded
// logs; each line says how many of its kind were not logged since the last.
func (h *health) warnEvery(kind string, err error, msg string) {
	if n, ok := h.warns.Allow(kind); ok {
		h.log.Warn().Err(err).Str("kind", kind).Int("not_logged", n).Msg(msg)
	}
}

// count counts a transient failure of kind that the caller handled by itself.
func (h *health) count(kind string) { h.errors.WithLabelValues(h.route, kind).Inc() }

// stall records a transient failure and returns how long to back off.
func (h *health) stall(kind string, err error, msg string) time.Duration {
	h.stallN++
	h.stalled.Store(kind + ": " + err.Error())
	h.count(kind)
	h.warnEvery(kind, err, msg)
	return h.backoffNow()
}

// backoffNow is the wait after the failures so far, without counting one more: 200 ms
// after the first.
func (h *health) backoffNow() time.Duration { return stallDelay(max(h.stallN-1, 0)) }

// storeFailing is stall for the storer goroutines: it marks the route not ready and
// counts the failure, and leaves the loop's fields alone (the storer backs off and logs
// by itself).
func (h *health) storeFailing(err error) {
	h.stalled.Store("postgres: " + err.Error())
	h.errors.WithLabelValues(h.route, "store").Inc()
}

// stored clears a storer's stall once a batch is stored, unless a stall of the loop's
// own is still on.
func (h *health) stored() {
	if h.stallN == 0 {
		h.stalled.Store("")
	}
}

func (h *health) unstall() {
	if h.stallN > 0 {
		h.stallN = 0
		h.stalled.Store("")
		h.log.Info().Msg("recovered")
	}
}

// stallBackoff spaces the retries of a transient failure (PostgreSQL or Kafka not
// answering): 200 ms doubling to 30 s, without jitter (one loop retries one call).
var stallBackoff = backoff.Policy{Base: 200 * time.Millisecond, Factor: 2, Cap: 30 * time.Second}

// stallDelay is the wait after n consecutive transient failures. Every stall, produce
// retry and store retry of the engine waits by it.
func stallDelay(n int) time.Duration {
	return stallBackoff.Delay(n, 0.5)
}

// noteKafkaError makes the route not ready while no broker answers: librdkafka retries
// in-flight produces and fetches by itself, so no call of ours fails to say so.
func (h *health) noteKafkaError(err kafka.Error) {
	if err.Code() == kafka.ErrAllBrokersDown {
		h.kafkaDown.Store(true)
	}
}

// kafkaUp clears kafkaDown; it runs on the loop, the only goroutine that sets it, so it
// reads first and spares every record an atomic write.
func (h *health) kafkaUp() {
	if h.kafkaDown.Load() {
		h.kafkaDown.Store(false)
	}
}

// ready is the route's readiness apart from its topics; it runs outside the loop.
func (h *health) ready(ctx context.Context) error {
	if s := h.fenced.Load().(string); s != "" {
		return errors.New(s)
	}
	if s := h.stalled.Load().(string); s != "" {
		return errors.New(s)
	}
	if !h.kafkaDown.Load() {
		return nil
	}
	if _, err := h.producer.GetMetadata(nil, false, int(probeTimeout(ctx)/time.Millisecond)); err != nil {
		return fmt.Errorf("kafka: all brokers down: %w", err)
	}
	h.kafkaDown.Store(false)
	return nil
}
