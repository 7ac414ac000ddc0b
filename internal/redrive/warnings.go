package redrive

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/dlqops/dlq/internal/headers"
)

// headerWarnInterval is the least time between two log lines about header warnings of one
// route: a DLQ full of records from a broken writer gives one line per interval, not one
// per record. Every warning is counted in dlq_worker_header_warnings_total.
const headerWarnInterval = 10 * time.Second

// headerWarnings counts the header warnings of a route and rate-limits their log lines;
// owned by the loop goroutine.
type headerWarnings struct {
	log        zerolog.Logger
	route      string
	count      *prometheus.CounterVec // dlq_worker_header_warnings_total{route,kind}
	last       time.Time
	suppressed int // records with warnings not logged since last
}

// note counts the decoder's warnings about the record at from by kind (a
// closed set) and logs them, rate-limited, with the record's coordinates. The warnings
// quote header values: they are a field of the log line, never its message or a label.
func (hw *headerWarnings) note(from headers.Coordinates, ws []headers.Warning) {
	details := make([]string, len(ws))
	for i, x := range ws {
		hw.count.WithLabelValues(hw.route, string(x.Kind)).Inc()
		details[i] = x.Detail
	}
	now := time.Now()
	if now.Sub(hw.last) < headerWarnInterval {
		hw.suppressed++
		return
	}
	hw.log.Warn().Str("topic", from.Topic).Int32("partition", from.Partition).Int64("offset", from.Offset).
		Strs("warnings", details).Int("records_not_logged", hw.suppressed).
		Msg("header fields left unknown (a malformed value or a duplicated key)")
	hw.last, hw.suppressed = now, 0
}
