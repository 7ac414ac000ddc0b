package redrive

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/redrive/backoff"
)

// Healthy means working: a route whose topics match no partition is not ready, a run is a
// success only when it read every partition it holds to its high watermark (only then
// does dlq_worker_last_success_timestamp_seconds move), and
// dlq_worker_oldest_due_age_seconds tells how long the oldest due scheduled record waits.

// ErrRunIncomplete is RunNow's answer for a run that could not read every partition the
// route holds to its high watermark (a topic missing, Kafka unreachable): it is recorded
// as failed and the last-success time does not move.
var ErrRunIncomplete = errors.New("run incomplete")

// topicsCacheTTL bounds how often readiness probes ask the cluster for its topics.
const topicsCacheTTL = 10 * time.Second

// topicCheck caches the route's missing topics; Ready and the loop both ask for it.
type topicCheck struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// missingTopics reports the route's topics (names, or ^patterns) that match no partition
// in the cluster, or the metadata error.
func (w *worker) missingTopics(timeout time.Duration) error {
	w.topicsOK.mu.Lock()
	defer w.topicsOK.mu.Unlock()
	if !w.topicsOK.at.IsZero() && time.Since(w.topicsOK.at) < topicsCacheTTL {
		return w.topicsOK.err
	}
	md, err := w.producer.GetMetadata(nil, true, int(timeout/time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafka: cannot list topics: %w", err) // not cached: asked again at once
	}
	var missing []string
	for _, t := range w.route.Topics {
		found := false
		if strings.HasPrefix(t, "^") {
			re := regexp.MustCompile(t) // validated
			for name, tm := range md.Topics {
				if re.MatchString(name) && len(tm.Partitions) > 0 {
					found = true
					break
				}
			}
		} else {
			tm, ok := md.Topics[t]
			found = ok && len(tm.Partitions) > 0
		}
		if !found {
			missing = append(missing, t)
		}
	}
	w.topicsOK.at, w.topicsOK.err = time.Now(), nil
	if len(missing) > 0 {
		sort.Strings(missing)
		w.topicsOK.err = fmt.Errorf("topics match no partition: %s", strings.Join(missing, ", "))
	}
	return w.topicsOK.err
}

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

// warnEvery logs at most once per interval per kind, so an outage gives clear, bounded logs.
func (w *worker) warnEvery(kind string, err error, msg string) {
	now := time.Now()
	if now.Sub(w.lastWarn[kind]) < 10*time.Second {
		return
	}
	w.lastWarn[kind] = now
	w.log.Warn().Err(err).Str("kind", kind).Msg(msg)
}

// stall records a transient failure and returns how long to back off.
func (w *worker) stall(kind string, err error, msg string) time.Duration {
	w.stallN++
	w.stalled.Store(kind + ": " + err.Error())
	w.e.metrics.errors.WithLabelValues(w.route.Name, kind).Inc()
	w.warnEvery(kind, err, msg)
	return stallDelay(w.stallN)
}

// stallBackoff spaces the retries of a transient failure (PostgreSQL or Kafka not
// answering): 200 ms doubling to 30 s, without jitter (one loop retries one call).
var stallBackoff = backoff.Policy{Base: 200 * time.Millisecond, Factor: 2, Cap: 30 * time.Second}

// stallDelay is the wait after n consecutive transient failures. Every stall, produce
// retry and store retry of the engine waits by it.
func stallDelay(n int) time.Duration {
	return stallBackoff.Delay(n, 0.5)
}

func (w *worker) unstall() {
	if w.stallN > 0 {
		w.stallN = 0
		w.stalled.Store("")
		w.log.Info().Msg("recovered")
	}
}

// noteKafkaError makes the route not ready while no broker answers: librdkafka retries
// in-flight produces and fetches by itself, so no call of ours fails to say so.
func (w *worker) noteKafkaError(err kafka.Error) {
	if err.Code() == kafka.ErrAllBrokersDown {
		w.kafkaDown.Store(true)
	}
}

// kafkaUp clears kafkaDown; it runs on the loop, the only goroutine that sets it, so it
// reads first and spares every record an atomic write.
func (w *worker) kafkaUp() {
	if w.kafkaDown.Load() {
		w.kafkaDown.Store(false)
	}
}

// kafkaReady is the readiness of the route's Kafka side; it runs outside the loop.
func (w *worker) kafkaReady(ctx context.Context) error {
	if !w.kafkaDown.Load() {
		return nil
	}
	timeout := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Millisecond, time.Until(dl))
	}
	if _, err := w.producer.GetMetadata(nil, false, int(timeout/time.Millisecond)); err != nil {
		return fmt.Errorf("kafka: all brokers down: %w", err)
	}
	w.kafkaDown.Store(false)
	return nil
}
