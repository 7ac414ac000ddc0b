package redrive

import (
	"time"

	"github.com/dlqops/dlq/internal/headers"
)

// headerWarnInterval is the least time between two log lines about header warnings of one
// route: a DLQ full of records from a broken writer gives one line per interval, not one
// per record. Every warning is counted in dlq_worker_header_warnings_total.
const headerWarnInterval = 10 * time.Second

// headerWarnLog rate-limits the header warning log lines of a route; owned by the loop.
type headerWarnLog struct {
	last       time.Time
	suppressed int // records with warnings not logged since last
}

// noteHeaderWarnings counts the decoder's warnings about the record at from by kind (a
// closed set) and logs them, rate-limited, with the record's coordinates. The warnings
// quote header values: they are a field of the log line, never its message or a label.
func (w *worker) noteHeaderWarnings(from headers.Coordinates, ws []headers.Warning) {
	details := make([]string, len(ws))
	for i, hw := range ws {
		w.e.metrics.headerWarnings.WithLabelValues(w.route.Name, string(hw.Kind)).Inc()
		details[i] = hw.Detail
	}
	now := time.Now()
	if now.Sub(w.hdrWarn.last) < headerWarnInterval {
		w.hdrWarn.suppressed++
		return
	}
	w.log.Warn().Str("topic", from.Topic).Int32("partition", from.Partition).Int64("offset", from.Offset).
		Strs("warnings", details).Int("records_not_logged", w.hdrWarn.suppressed).
		Msg("header fields left unknown (a malformed value or a duplicated key)")
	w.hdrWarn = headerWarnLog{last: now}
}
