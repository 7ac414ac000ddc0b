package headers

import (
	"slices"
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
// which would otherwise be carried, and often re-added, on every hop, and the
// six headers Kafka Streams appends to a dead letter after the source's own:
// what they say travels in ours, so a redriven Streams dead letter is its
// source record plus our headers.
func DefaultEncodeOptions() EncodeOptions {
	return EncodeOptions{StripKeys: []string{
		"kafka_dlt-exception-stacktrace",
		"kafka_dlt-key-exception-stacktrace",
		"kafka_exception-stacktrace",
		"kafka_key-exception-stacktrace",
		"__connect.errors.exception.stacktrace",
	}, StripPrefixes: []string{"__streams.errors."}}
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
	_, ok := ourField(key)
	return ok
}

// Encode returns a new header list: every foreign header of hs not stripped
// by opts, byte-identical and in order (values are shared, not copied), then
// our canonical headers written from e. Every existing canonical header is
// dropped first, so ours are replaced, never appended. Unknown fields
// (empty, -1, zero time, nil) are not written; text is bounded by MaxTextBytes.
// Convention, ErrorCause, NotBefore, DeliveryCount and ShareGroup are decode-side facts
// and are not written.
func Encode(hs []Header, e Envelope, opts EncodeOptions) []Header {
	return EncodeAs[Header](hs, e, opts)
}

// EncodeAs is Encode for other packages' header types: it reads hs of one
// header type and returns the list as another (kafka.Header, the store's
// Header), so no conversion copies the list on either side.
func EncodeAs[H, F Shape](hs []F, e Envelope, opts EncodeOptions) []H {
	var s Scratch
	return AppendEncoded(make([]H, 0, len(hs)+int(numFields)), &s, hs, e, opts)
}

// Scratch is the buffer AppendEncoded writes our header values into; its zero
// value is ready to use.
type Scratch struct {
	buf []byte
	day day // the date last written, kept from record to record
}

// AppendEncoded is EncodeAs appending the list to dst and writing our values
// into s, both reused from call to call: the result is valid only until s is
// used again. It is for hot loops whose consumer copies the headers before the
// next record, as a Kafka producer does.
func AppendEncoded[H, F Shape](dst []H, s *Scratch, hs []F, e Envelope, opts EncodeOptions) []H {
	for i := range hs {
		if h := Header(hs[i]); !canonical(h.Key) && !opts.strips(h.Key) {
			dst = append(dst, H(h))
		}
	}
	return appendOurs(dst, s, &e)
}

// appendOurs appends our headers written from e, their values in one buffer, s's, so
// a hop costs a constant number of allocations however many fields are set (none once
// the buffer is large enough). A value keeps the array it was written in if a later
// append moves the buffer.
func appendOurs[H Shape](dst []H, s *Scratch, e *Envelope) []H {
	buf := s.buf[:0]
	if need := 256 + len(e.OriginalTopic) + len(e.ErrorClass) + len(e.ErrorMessage) + len(e.Group) + len(e.TargetGroup); cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	// add makes buf[start:] the value of key. Full slice expressions: a caller appending
	// to one value must not overwrite the next.
	add := func(key string, start int) {
		dst = append(dst, H{Key: key, Value: buf[start:len(buf):len(buf)]})
	}
	addText := func(key, s string) {
		if s != "" {
			start := len(buf)
			buf = append(buf, text(s)...)
			add(key, start)
		}
	}
	addTime := func(key string, t time.Time) {
		if !t.IsZero() {
			start := len(buf)
			buf = appendTime(buf, t, &s.day)
			add(key, start)
		}
	}

	buf = strconv.AppendInt(buf, int64(e.RetryCount), 10)
	add(KeyRetryCount, 0)
	addText(KeyOriginalTopic, e.OriginalTopic)
	if e.OriginalPartition >= 0 {
		start := len(buf)
		buf = strconv.AppendInt(buf, int64(e.OriginalPartition), 10)
		add(KeyOriginalPartition, start)
	}
	if e.OriginalOffset >= 0 {
		start := len(buf)
		buf = strconv.AppendInt(buf, e.OriginalOffset, 10)
		add(KeyOriginalOffset, start)
	}
	addTime(KeyOriginalTimestamp, e.OriginalTimestamp)
	addTime(KeyFirstFailure, e.FirstFailure)
	addTime(KeyLastFailure, e.LastFailure)
	addText(KeyErrorClass, e.ErrorClass)
	addText(KeyErrorMessage, e.ErrorMessage)
	if e.Permanent {
		start := len(buf)
		buf = append(buf, "true"...)
		add(KeyErrorPermanent, start)
	}
	if r := e.RedriveID; r != nil {
		start := len(buf)
		buf = append(buf, r.Topic...)
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, int64(r.Partition), 10)
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, r.Offset, 10)
		add(KeyRedriveID, start)
	}
	addText(KeyConsumerGroup, e.Group)
	addText(KeyTargetGroup, e.TargetGroup)
	if r := e.Replay; r != nil {
		addText(KeyReplayActor, r.Actor)
		addText(KeyReplayJob, r.JobID)
		addText(KeyReplayID, r.ReplayID)
	}
	s.buf = buf
	return dst
}

// day is a date as TimeLayout writes it, "2006-01-02", and its number of days since
// 1970-01-01. A record's times, and a backlog's, are mostly of one day: remembering the
// last one does the calendar arithmetic once per day instead of once per time.
type day struct {
	date [10]byte // zero: none yet
	days int64
}

// appendTime appends t.UTC().AppendFormat(buf, TimeLayout), formatting the
// fixed layout directly from t's Unix milliseconds for the years it covers (0 to 9999).
// last is the date last written and is updated.
func appendTime(buf []byte, t time.Time, last *day) []byte {
	ms := t.UnixMilli() // floored, as the layout's .000 truncates
	if ms < minMillis || ms > maxMillis {
		return t.UTC().AppendFormat(buf, TimeLayout)
	}
	// Unsigned from the start of year 0: divisions by constants are a multiply then.
	since := uint64(ms - minMillis)
	days, rem := int64(since/86_400_000)+minDays, uint(since%86_400_000)
	if last.date[0] == 0 || last.days != days {
		year, month, d := civilFromDays(days)
		*last = day{date: [10]byte{4: '-', 7: '-'}, days: days}
		putTwo(last.date[0:2], uint(year)/100)
		putTwo(last.date[2:4], uint(year)%100)
		putTwo(last.date[5:7], uint(month))
		putTwo(last.date[8:10], uint(d))
	}
	// Written in place: a copy from a local array costs as much as the rest.
	n := len(buf)
	buf = slices.Grow(buf, len(TimeLayout))[:n+len(TimeLayout)]
	b := (*[len(TimeLayout)]byte)(buf[n:])
	*(*[10]byte)(b[:10]) = last.date
	b[10], b[13], b[16], b[19], b[23] = 'T', ':', ':', '.', 'Z'
	putTwo(b[11:13], rem/3_600_000)
	putTwo(b[14:16], rem/60_000%60)
	putTwo(b[17:19], rem/1000%60)
	b[20], b[21], b[22] = byte('0'+rem%1000/100), byte('0'+rem%100/10), byte('0'+rem%10)
	return buf
}

// minMillis and minDays are the start of year 0, the first TimeLayout can write, in Unix
// milliseconds and days.
var (
	minMillis = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	minDays   = daysFromCivil(0, 1, 1)
)

// civilFromDays is the date days after 1970-01-01, for dates in years 0 to 9999 (Howard
// Hinnant's civil_from_days, the inverse of daysFromCivil).
func civilFromDays(days int64) (year, month, day int) {
	// Days since -0400-03-01 rather than 0000-03-01, so that January and February of
	// year 0 count up too and the divisions are unsigned.
	z := uint64(days + 719468 + 146097)
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = int(yoe+era*400) - 400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// putTwo writes n < 100 as two digits.
func putTwo(b []byte, n uint) {
	b[0], b[1] = byte('0'+n/10), byte('0'+n%10)
}
