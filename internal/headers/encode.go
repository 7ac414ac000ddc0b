package headers

import (
	"strconv"
	"strings"
	"time"
)

// EncodeOptions choose which foreign headers Encode drops.
type EncodeOptions struct {
	StripKeys     []string // exact keys
	StripPrefixes []string // key prefixes
}

// DefaultEncodeOptions strip the stack traces Spring and Kafka Connect attach,
// which would otherwise be carried, and often re-added, on every hop.
func DefaultEncodeOptions() EncodeOptions {
	return EncodeOptions{StripKeys: []string{
		"kafka_dlt-exception-stacktrace",
		"kafka_dlt-key-exception-stacktrace",
		"kafka_exception-stacktrace",
		"kafka_key-exception-stacktrace",
		"__connect.errors.exception.stacktrace",
	}}
}

func (o EncodeOptions) strips(key string) bool {
	for _, k := range o.StripKeys {
		if key == k {
			return true
		}
	}
	for _, p := range o.StripPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// canonical reports whether key is one of our headers.
func canonical(key string) bool {
	s, ok := index[key]
	return ok && s.conv == ours
}

// Encode returns a new header list: every foreign header of hs not stripped
// by opts, byte-identical and in order (values are shared, not copied), then
// our canonical headers written from e. Every existing canonical header is
// dropped first, so ours are replaced, never appended. Unknown fields
// (empty, -1, zero time, nil) are not written; text is bounded by MaxTextBytes.
// Convention and NotBefore are decode-side facts and are not written.
func Encode(hs []Header, e Envelope, opts EncodeOptions) []Header {
	out := make([]Header, 0, len(hs)+int(numFields))
	for _, h := range hs {
		if !canonical(h.Key) && !opts.strips(h.Key) {
			out = append(out, h)
		}
	}
	return appendCanonical(out, e)
}

// appendCanonical writes all our values into one buffer, so a hop costs a
// constant number of allocations however many fields are set.
func appendCanonical(out []Header, e Envelope) []Header {
	type entry struct {
		key string
		end int
	}
	var (
		entries [numFields]entry
		n       int
	)
	buf := make([]byte, 0, 256+len(e.OriginalTopic)+len(e.ErrorClass)+len(e.ErrorMessage))
	add := func(key string) {
		entries[n] = entry{key, len(buf)}
		n++
	}
	addText := func(key, s string) {
		if s != "" {
			buf = append(buf, text(s)...)
			add(key)
		}
	}
	addTime := func(key string, t time.Time) {
		if !t.IsZero() {
			buf = t.UTC().AppendFormat(buf, TimeLayout)
			add(key)
		}
	}

	buf = strconv.AppendInt(buf, int64(e.RetryCount), 10)
	add(KeyRetryCount)
	addText(KeyOriginalTopic, e.OriginalTopic)
	if e.OriginalPartition >= 0 {
		buf = strconv.AppendInt(buf, int64(e.OriginalPartition), 10)
		add(KeyOriginalPartition)
	}
	if e.OriginalOffset >= 0 {
		buf = strconv.AppendInt(buf, e.OriginalOffset, 10)
		add(KeyOriginalOffset)
	}
	addTime(KeyOriginalTimestamp, e.OriginalTimestamp)
	addTime(KeyFirstFailure, e.FirstFailure)
	addTime(KeyLastFailure, e.LastFailure)
	addText(KeyErrorClass, e.ErrorClass)
	addText(KeyErrorMessage, e.ErrorMessage)
	if r := e.RedriveID; r != nil {
		buf = append(buf, r.Topic...)
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, int64(r.Partition), 10)
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, r.Offset, 10)
		add(KeyRedriveID)
	}
	if r := e.Replay; r != nil {
		addText(KeyReplayActor, r.Actor)
		addText(KeyReplayJob, r.JobID)
		addText(KeyReplayID, r.ReplayID)
	}

	start := 0
	for _, en := range entries[:n] {
		// Full slice expressions: a caller appending to one value must not
		// overwrite the next.
		out = append(out, Header{Key: en.key, Value: buf[start:en.end:en.end]})
		start = en.end
	}
	return out
}
