package kafkaclient

import (
	"context"
	"errors"
	"sync"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/rs/zerolog"
)

// logSink is the channel every producer and consumer built from this package's
// configurations sends librdkafka's log lines to while a LogRouter runs; nil: librdkafka
// writes them to stderr. It is process-wide because librdkafka's own default, stderr, is.
var logSink struct {
	sync.Mutex
	ch chan kafka.LogEvent
}

// withLogs routes m's log lines to the running LogRouter, if any.
func withLogs(m kafka.ConfigMap) kafka.ConfigMap {
	logSink.Lock()
	defer logSink.Unlock()
	if logSink.ch != nil {
		m["go.logs.channel.enable"] = true
		m["go.logs.channel"] = logSink.ch
	} else {
		m["go.logs.channel.enable"] = false
	}
	return m
}

// LogRouter writes librdkafka's own log lines (connection failures, rebalances, …) through
// zerolog, as JSON lines like every other, instead of the raw "%4|…|TAG|…" lines
// librdkafka writes to stderr. Handles built after Start send to it. It is a
// daemon.Component; start it before, and stop it after, every component with a handle.
type LogRouter struct {
	log  zerolog.Logger
	mu   sync.Mutex // guards stop and done, never held while waiting
	stop chan struct{}
	done chan struct{}
}

// NewLogRouter returns a router writing to log; nothing runs before Start.
func NewLogRouter(log zerolog.Logger) *LogRouter {
	return &LogRouter{log: log.With().Str("component", "librdkafka").Logger()}
}

// Start installs the router for the handles built from now on and starts its goroutine,
// which owns the channel's reading end until Stop.
func (r *LogRouter) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return errors.New("kafkaclient: log router started twice")
	}
	logSink.Lock()
	defer logSink.Unlock()
	if logSink.ch != nil {
		return errors.New("kafkaclient: another log router runs")
	}
	ch := make(chan kafka.LogEvent, 1000)
	logSink.ch = ch
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.forward(ch, r.stop, r.done)
	return nil
}

// Stop uninstalls the router and waits for its goroutine. A handle still open then stops
// forwarding (its log poller gives up when the handle closes). Safe before Start and twice.
func (r *LogRouter) Stop(ctx context.Context) error {
	r.mu.Lock()
	stop, done := r.stop, r.done
	r.stop = nil
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	logSink.Lock()
	logSink.ch = nil
	logSink.Unlock()
	close(stop)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *LogRouter) forward(ch <-chan kafka.LogEvent, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case ev := <-ch:
			r.write(ev)
		}
	}
}

// write logs one librdkafka line at the zerolog level of its syslog level. The message
// may quote broker or topic names: it is the line's message, never a format string.
func (r *LogRouter) write(ev kafka.LogEvent) {
	var e *zerolog.Event
	switch {
	case ev.Level <= 3: // emerg, alert, crit, err
		e = r.log.Error()
	case ev.Level == 4:
		e = r.log.Warn()
	case ev.Level <= 6: // notice, info
		e = r.log.Info()
	default:
		e = r.log.Debug()
	}
	e.Str("client", ev.Name).Str("tag", ev.Tag).Int("syslog_level", ev.Level).Msg(ev.Message)
}
