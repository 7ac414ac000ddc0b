package headers

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// field is one piece of the envelope a convention may carry.
type field uint8

const (
	fRetry field = iota
	fTopic
	fPartition
	fOffset
	fTimestamp
	fFirstFailure
	fLastFailure
	fClass
	fCause // fallback for the error class
	fMessage
	fRedrive
	fActor
	fJob
	fReplayID
	fNotBefore
	fDeliveries // a share group's delivery count: information, never the retry count
	fGroup      // the share group that dead-lettered the record
	fPermanent  // our writer's mark of a failure no redrive cures
	fFailed     // the consumer group that failed the record
	fConnector  // the Kafka Connect connector that failed it: group connect-<name>
	fTarget     // the consumer group a redrive is addressed to
	numFields
)

// binMin is the shortest Java binary encoding accepted per numeric field, for
// conventions that write binary: ints are exactly 4 bytes, longs exactly 8,
// and Spring's backoff timestamp is a BigInteger.toByteArray of 1..8 bytes.
var binMin = [numFields]int{fRetry: 4, fPartition: 4, fOffset: 8, fTimestamp: 8, fNotBefore: 1}

type convention struct {
	name   string
	binary bool // numbers may be Java big-endian binary as well as decimal text
	keys   [numFields]string
}

// conventions in precedence order; ours must stay first (Encode relies on it).
var conventions = [...]convention{
	{name: "dlq", keys: [numFields]string{
		fRetry: KeyRetryCount, fTopic: KeyOriginalTopic, fPartition: KeyOriginalPartition,
		fOffset: KeyOriginalOffset, fTimestamp: KeyOriginalTimestamp,
		fFirstFailure: KeyFirstFailure, fLastFailure: KeyLastFailure,
		fClass: KeyErrorClass, fMessage: KeyErrorMessage, fRedrive: KeyRedriveID,
		fActor: KeyReplayActor, fJob: KeyReplayJob, fReplayID: KeyReplayID,
		fPermanent: KeyErrorPermanent, fFailed: KeyConsumerGroup, fTarget: KeyTargetGroup,
	}},
	// Kafka writes these two itself when it dead-letters a record, after any header it
	// copies from the source, so they describe this DLQ record better than a foreign
	// convention copied along with the original headers.
	{name: "share-group", keys: [numFields]string{
		fTopic: KeyShareTopic, fPartition: "__dlq.errors.partition", fOffset: "__dlq.errors.offset",
		fMessage: "__dlq.errors.message", fDeliveries: "__dlq.errors.delivery.count", fGroup: "__dlq.errors.group",
	}},
	{name: "streams", keys: [numFields]string{
		fTopic: "__streams.errors.topic", fPartition: "__streams.errors.partition", fOffset: "__streams.errors.offset",
		fClass: "__streams.errors.exception", fMessage: "__streams.errors.message",
	}},
	{name: "plain", keys: [numFields]string{fRetry: "retryCount", fTopic: "originalTopic"}},
	{name: "x-retry-count", keys: [numFields]string{fRetry: "x-retry-count"}},
	{name: "spring", binary: true, keys: [numFields]string{
		fTopic: "kafka_dlt-original-topic", fPartition: "kafka_dlt-original-partition",
		fOffset: "kafka_dlt-original-offset", fTimestamp: "kafka_dlt-original-timestamp",
		fClass: "kafka_dlt-exception-fqcn", fCause: "kafka_dlt-exception-cause-fqcn",
		fMessage: "kafka_dlt-exception-message",
		fRetry:   "retry_topic-attempts", fNotBefore: "retry_topic-backoff-timestamp",
		fFailed: "kafka_dlt-original-consumer-group",
	}},
	{name: "spring-original", binary: true, keys: [numFields]string{
		fTopic: "kafka_original-topic", fPartition: "kafka_original-partition",
		fOffset: "kafka_original-offset", fTimestamp: "kafka_original-timestamp",
		fClass: "kafka_exception-fqcn", fCause: "kafka_exception-cause-fqcn",
		fMessage: "kafka_exception-message",
	}},
	{name: "connect", keys: [numFields]string{
		fTopic: "__connect.errors.topic", fPartition: "__connect.errors.partition",
		fOffset: "__connect.errors.offset", fClass: "__connect.errors.exception.class.name",
		fMessage: "__connect.errors.exception.message", fConnector: "__connect.errors.connector.name",
	}},
	{name: "karafka", keys: [numFields]string{
		fTopic: "source_topic", fPartition: "source_partition",
		fOffset: "source_offset", fRetry: "source_attempts",
	}},
}

const ours = 0 // index of our convention in conventions

type slot struct {
	conv int
	f    field
}

// index maps every key we read to its slot.
var index = func() map[string]slot {
	m := make(map[string]slot)
	for c, conv := range conventions {
		for f, k := range conv.keys {
			if k != "" {
				m[k] = slot{c, field(f)}
			}
		}
	}
	return m
}()

// lookup is index[key], our own keys (every key of a record we wrote) without hashing.
func lookup(key string) (slot, bool) {
	if f, ok := ourField(key); ok {
		return slot{ours, f}, true
	}
	s, ok := index[key]
	return s, ok
}

// ourField is the field of one of our keys, for the keys of every record we wrote: it
// compares a key with the one or two of our keys as long as it, each a constant, which
// the compiler compares a word at a time where a map lookup hashes the key.
func ourField(key string) (field, bool) {
	switch len(key) {
	case len(KeyReplayID):
		return fReplayID, key == KeyReplayID
	case len(KeyRedriveID): // and KeyReplayJob
		if key == KeyRedriveID {
			return fRedrive, true
		}
		return fJob, key == KeyReplayJob
	case len(KeyRetryCount): // and KeyErrorClass
		if key == KeyRetryCount {
			return fRetry, true
		}
		return fClass, key == KeyErrorClass
	case len(KeyLastFailure): // and KeyReplayActor, KeyTargetGroup
		switch key {
		case KeyLastFailure:
			return fLastFailure, true
		case KeyReplayActor:
			return fActor, true
		}
		return fTarget, key == KeyTargetGroup
	case len(KeyFirstFailure): // and KeyErrorMessage
		if key == KeyFirstFailure {
			return fFirstFailure, true
		}
		return fMessage, key == KeyErrorMessage
	case len(KeyOriginalTopic): // and KeyConsumerGroup
		if key == KeyOriginalTopic {
			return fTopic, true
		}
		return fFailed, key == KeyConsumerGroup
	case len(KeyOriginalOffset): // and KeyErrorPermanent
		if key == KeyOriginalOffset {
			return fOffset, true
		}
		return fPermanent, key == KeyErrorPermanent
	case len(KeyOriginalPartition): // and KeyOriginalTimestamp
		if key == KeyOriginalPartition {
			return fPartition, true
		}
		return fTimestamp, key == KeyOriginalTimestamp
	}
	return 0, false
}

const maxRetryCount = math.MaxInt32

// maxMillis is the end of year 9999: later times cannot be written as RFC 3339.
var maxMillis = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()

var (
	errMalformed = errors.New("not a decimal integer")
	errRange     = errors.New("out of range")
	errNegative  = errors.New("negative")
	errTime      = errors.New("not an RFC 3339 timestamp")
)

type decoder[H Shape] struct {
	hs []H
	// last is the 1-based index of a key's last occurrence, 0 when absent; an int32, as a
	// Kafka record's size is, so that a decode clears half as much.
	last [len(conventions)][numFields]int32
	// seen has bit c set when convention c has a header: the precedence loops visit only
	// those (a record we wrote has ours alone).
	seen   uint16
	oursAt int32 // 1-based index of our last header, 0 when none
	d      Decoded
	day    day // the date last read
	// texts holds the text values read as they are (plain ASCII), so that a record's
	// strings share one allocation.
	texts strings.Builder
}

// Decode reads the envelope from hs. It never fails: problems and warnings
// are part of the result.
func Decode(hs []Header) Decoded {
	d := decode(hs)
	d.Raw = hs
	return d
}

// DecodeOf is Decode for another package's header type (kafka.Header, the
// store's Header), without converting the list first. Raw is nil: the caller
// has its input.
func DecodeOf[H Shape](hs []H) Decoded {
	return decode(hs)
}

func decode[H Shape](hs []H) Decoded {
	dec := decoder[H]{hs: hs}
	var dup [len(conventions)]uint32 // bit f: a duplicate of field f was reported
	textBytes := 0
	for i := range hs {
		h := Header(hs[i])
		s, ok := lookup(h.Key)
		if !ok {
			continue
		}
		if dec.last[s.conv][s.f] != 0 && dup[s.conv]&(1<<s.f) == 0 {
			dup[s.conv] |= 1 << s.f
			dec.d.Warnings = append(dec.d.Warnings, Warning{WarnDuplicateKey, h.Key + ": duplicate key, the last occurrence wins"})
		}
		dec.last[s.conv][s.f] = int32(i + 1)
		dec.seen |= 1 << s.conv
		if s.conv == ours {
			dec.oursAt = int32(i + 1)
		}
		if isText[s.f] {
			textBytes += len(h.Value)
		}
	}
	dec.texts.Grow(min(textBytes, 4*MaxTextBytes))
	retryProblem := dec.retryCount()
	dec.routing()
	switch {
	case dec.d.Problem != nil && retryProblem != nil:
		dec.d.Warnings = append(dec.d.Warnings, Warning{WarnRetryCount, retryProblem.Error()})
	case retryProblem != nil:
		dec.d.Problem = retryProblem
	}
	e := &dec.d.Envelope
	e.FirstFailure = dec.time(ours, fFirstFailure)
	e.LastFailure = dec.time(ours, fLastFailure)
	if c, ok := dec.newerFailure(); ok {
		// A foreign system dead-lettered the record after we last wrote our headers (it
		// failed again after our redrive): its error is the newest, and our last-failure
		// time predates it.
		// Our permanent mark was about the older failure: it is not read.
		e.ErrorCause = dec.text(c, fCause)
		if e.ErrorClass = dec.text(c, fClass); e.ErrorClass == "" {
			e.ErrorClass = e.ErrorCause
		}
		e.ErrorMessage = dec.text(c, fMessage)
		e.LastFailure = time.Time{}
	} else {
		e.ErrorCause = dec.firstText(fCause)
		if e.ErrorClass = dec.firstText(fClass); e.ErrorClass == "" {
			e.ErrorClass = e.ErrorCause
		}
		e.ErrorMessage = dec.firstText(fMessage)
		e.Permanent = dec.permanent()
	}
	e.RedriveID = dec.redriveID()
	if l := &dec.last[ours]; l[fActor]|l[fJob]|l[fReplayID] != 0 {
		if r := (Replay{Actor: dec.text(ours, fActor), JobID: dec.text(ours, fJob), ReplayID: dec.text(ours, fReplayID)}); r != (Replay{}) {
			e.Replay = new(r) // allocated only when present
		}
	}
	if c, ok := dec.first(fNotBefore); ok {
		e.NotBefore = dec.time(c, fNotBefore)
	}
	if c, ok := dec.first(fDeliveries); ok {
		if n, ok := dec.nonNegative(c, fDeliveries, 32); ok {
			e.DeliveryCount = int(n)
		}
	}
	e.ShareGroup = dec.firstText(fGroup)
	e.Group = dec.failedGroup()
	e.TargetGroup = dec.text(ours, fTarget)
	return dec.d
}

// failedGroup is the consumer group that failed the record, "" when no header names it:
// ours, a share group's, Spring's, or a Kafka Connect connector's (whose sink consumer
// group is connect-<name>), in precedence order.
func (dec *decoder[H]) failedGroup() string {
	for m := dec.seen; m != 0; m &= m - 1 {
		c := bits.TrailingZeros16(m)
		if v, ok := dec.value(c, fFailed); ok && len(v) > 0 {
			return dec.text(c, fFailed)
		}
		if v, ok := dec.value(c, fGroup); ok && len(v) > 0 {
			return dec.text(c, fGroup)
		}
		if v, ok := dec.value(c, fConnector); ok && len(v) > 0 {
			return "connect-" + dec.text(c, fConnector)
		}
	}
	return ""
}

// permanent reads our permanent mark: "true", or absent; any other value is a warning
// and the failure is treated as retryable, as the route's rules say.
func (dec *decoder[H]) permanent() bool {
	v, ok := dec.value(ours, fPermanent)
	switch {
	case !ok || len(v) == 0:
		return false
	case string(v) == "true":
		return true
	}
	dec.warn(KeyErrorPermanent, "not \"true\": "+quote(v))
	return false
}

func (dec *decoder[H]) value(c int, f field) ([]byte, bool) {
	i := dec.last[c][f]
	if i == 0 {
		return nil, false
	}
	return Header(dec.hs[i-1]).Value, true
}

func (dec *decoder[H]) key(c int, f field) string { return conventions[c].keys[f] }

// warn reports a malformed value of key, which is left unknown.
func (dec *decoder[H]) warn(key, msg string) {
	kind := WarnOther
	switch index[key].f {
	case fPartition:
		kind = WarnPartition
	case fOffset:
		kind = WarnOffset
	case fTimestamp, fFirstFailure, fLastFailure, fNotBefore:
		kind = WarnTimestamp
	case fRedrive:
		kind = WarnRedriveID
	}
	dec.d.Warnings = append(dec.d.Warnings, Warning{kind, key + ": " + msg})
}

// newerFailure returns the foreign convention that wrote an error after our headers,
// the one written last when several did. Our headers are always written together at the
// end of the list (Encode), and Spring and Kafka Connect append theirs when they
// dead-letter a record, so what follows ours is a failure that happened after our last
// write.
func (dec *decoder[H]) newerFailure() (int, bool) {
	if dec.oursAt == 0 {
		return 0, false
	}
	best, at := 0, dec.oursAt
	for m := dec.seen &^ (1 << ours); m != 0; m &= m - 1 {
		c := bits.TrailingZeros16(m)
		for _, f := range [...]field{fClass, fCause, fMessage} {
			if i := dec.last[c][f]; i > at && len(Header(dec.hs[i-1]).Value) > 0 {
				best, at = c, i
			}
		}
	}
	return best, at > dec.oursAt
}

// first returns the first convention in precedence order that has f.
func (dec *decoder[H]) first(f field) (int, bool) {
	for m := dec.seen; m != 0; m &= m - 1 {
		if c := bits.TrailingZeros16(m); dec.last[c][f] != 0 {
			return c, true
		}
	}
	return 0, false
}

// firstNonEmpty is first for text fields and the retry count, where an empty value
// counts as absent.
func (dec *decoder[H]) firstNonEmpty(f field) (int, bool) {
	for m := dec.seen; m != 0; m &= m - 1 {
		c := bits.TrailingZeros16(m)
		if v, ok := dec.value(c, f); ok && len(v) > 0 {
			return c, true
		}
	}
	return 0, false
}

func (dec *decoder[H]) firstText(f field) string {
	if c, ok := dec.firstNonEmpty(f); ok {
		return dec.text(c, f)
	}
	return ""
}

// text is text(string(v)) for f's value in convention c; a value that needs no
// replacing or cutting is copied into dec.texts.
func (dec *decoder[H]) text(c int, f field) string {
	v, _ := dec.value(c, f)
	if len(v) == 0 || len(v) > MaxTextBytes || !plainASCII(v) {
		return text(string(v))
	}
	start := dec.texts.Len()
	dec.texts.Write(v)
	return dec.texts.String()[start:]
}

// isText marks the fields read with text.
var isText = [numFields]bool{fTopic: true, fClass: true, fCause: true, fMessage: true, fActor: true, fJob: true, fReplayID: true, fGroup: true,
	fFailed: true, fConnector: true, fTarget: true}

// retryCount reads the retry count; an empty (or null) value counts as absent, as it does
// for text fields, so the next convention's count applies, or none.
func (dec *decoder[H]) retryCount() *Problem {
	c, ok := dec.firstNonEmpty(fRetry)
	if !ok {
		return nil
	}
	v, _ := dec.value(c, fRetry)
	n, err := dec.parseInt(c, fRetry, v, 32)
	if err == nil && n < 0 {
		err = errNegative
	}
	if err != nil {
		return &Problem{Reason: ReasonInvalidRetryCount, Detail: fmt.Sprintf("%s: %v: %s", dec.key(c, fRetry), err, quote(v))}
	}
	dec.d.Envelope.RetryCount = int(n)
	return nil
}

// routing takes topic, partition, offset and timestamp from one convention,
// so a record is never routed with coordinates from two different writers.
func (dec *decoder[H]) routing() {
	e := &dec.d.Envelope
	e.OriginalPartition, e.OriginalOffset = -1, -1
	c, ok := dec.firstNonEmpty(fTopic)
	if !ok {
		dec.d.Problem = &Problem{Reason: ReasonUnroutable, Detail: "no original topic header"}
		return
	}
	e.Convention = conventions[c].name
	e.OriginalTopic = dec.topic(c)
	if !ValidTopicName(e.OriginalTopic) {
		dec.d.Problem = &Problem{Reason: ReasonUnroutable, Detail: dec.key(c, fTopic) + ": illegal topic name " + quote([]byte(e.OriginalTopic))}
	}
	if p, ok := dec.nonNegative(c, fPartition, 32); ok {
		e.OriginalPartition = int32(p)
	}
	if o, ok := dec.nonNegative(c, fOffset, 64); ok {
		e.OriginalOffset = o
	}
	e.OriginalTimestamp = dec.time(c, fTimestamp)
}

// topic is the original topic of convention c as it is stored and shown: the header's
// text, or, when its bytes are not UTF-8 text (invalid UTF-8, a NUL), their Go-quoted
// form ("orders\xff"), which keeps every byte (strconv.Unquote gives them back) where
// text would replace them with U+FFFD. Such a topic is illegal either way: the record is
// unroutable, and the quoted form, with its quotes, is no topic name anything could be
// produced to.
func (dec *decoder[H]) topic(c int) string {
	v, _ := dec.value(c, fTopic)
	if plainASCII(v) || utf8.Valid(v) && bytes.IndexByte(v, 0) < 0 {
		return dec.text(c, fTopic)
	}
	return text(strconv.Quote(string(v)))
}

// nonNegative parses an optional number; a malformed one is a warning.
func (dec *decoder[H]) nonNegative(c int, f field, bits int) (int64, bool) {
	v, ok := dec.value(c, f)
	if !ok {
		return 0, false
	}
	n, err := dec.parseInt(c, f, v, bits)
	if err == nil && n < 0 {
		err = errNegative
	}
	if err != nil {
		dec.warn(dec.key(c, f), err.Error()+": "+quote(v))
		return 0, false
	}
	return n, true
}

// time reads an optional timestamp: RFC 3339 in our headers, unix
// milliseconds in foreign ones. A malformed one is a warning.
func (dec *decoder[H]) time(c int, f field) time.Time {
	v, ok := dec.value(c, f)
	if !ok {
		return time.Time{}
	}
	if c == ours {
		if t, ok := parseLayout(v, &dec.day); ok {
			return t // how we write them: UTC, milliseconds, years 0 to 9999 already
		}
		t, err := parseTime(v)
		if t = t.UTC().Truncate(time.Millisecond); err != nil || t.Year() < 0 || t.Year() > 9999 {
			dec.warn(dec.key(c, f), errTime.Error()+": "+quote(v))
			return time.Time{}
		}
		return t
	}
	ms, ok := dec.nonNegative(c, f, 64)
	if !ok {
		return time.Time{}
	}
	if ms > maxMillis {
		dec.warn(dec.key(c, f), errRange.Error()+": "+quote(v))
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (dec *decoder[H]) redriveID() *Coordinates {
	v, ok := dec.value(ours, fRedrive)
	if !ok {
		return nil
	}
	s := string(v)
	i, j := strings.IndexByte(s, '/'), strings.LastIndexByte(s, '/')
	if i >= 0 && i != j && ValidTopicName(s[:i]) {
		p, perr := parseDecimal([]byte(s[i+1:j]), 32)
		o, oerr := parseDecimal([]byte(s[j+1:]), 64)
		if perr == nil && oerr == nil && p >= 0 && o >= 0 {
			return &Coordinates{Topic: s[:i], Partition: int32(p), Offset: o}
		}
	}
	dec.warn(KeyRedriveID, "not topic/partition/offset: "+quote(v))
	return nil
}

func (dec *decoder[H]) parseInt(c int, f field, v []byte, bits int) (int64, error) {
	if conventions[c].binary && len(v) >= binMin[f] && len(v) <= bits/8 && !allDigits(v) {
		n := int64(int8(v[0])) // sign-extend: Java numbers are two's complement
		for _, b := range v[1:] {
			n = n<<8 | int64(b)
		}
		return n, nil
	}
	return parseDecimal(v, bits)
}

// parseDecimal parses an optionally negative decimal integer of the given
// size without allocating.
func parseDecimal(v []byte, bits int) (int64, error) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || !allDigits(v) {
		return 0, errMalformed
	}
	for len(v) > 1 && v[0] == '0' {
		v = v[1:]
	}
	if len(v) > 19 {
		return 0, errRange
	}
	// 19 digits stay below 2^64: the range is checked once, not at every digit.
	limit := uint64(1) << (bits - 1) // magnitude of the smallest value
	var n uint64
	for _, b := range v {
		n = n*10 + uint64(b-'0')
	}
	if n > limit {
		return 0, errRange
	}
	if neg {
		return -int64(n), nil
	}
	if n == limit {
		return 0, errRange
	}
	return int64(n), nil
}

func allDigits(v []byte) bool {
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// text makes a header value safe to log and store in PostgreSQL: valid
// UTF-8, no NUL, at most MaxTextBytes cut on a rune boundary.
func text(s string) string {
	if len(s) <= MaxTextBytes && plainASCII(s) {
		return s // most values: nothing to replace or cut
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= MaxTextBytes {
		return s
	}
	n := MaxTextBytes
	for !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// plainASCII reports whether s is ASCII without NUL. It looks at eight bytes at a time:
// a byte with its high bit set, or a zero byte, sets its high bit in the mask below.
func plainASCII[T string | []byte](s T) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if (x|(x-lows)&^x)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// quote shows a bounded prefix of a hostile value in a detail or warning.
func quote(v []byte) string {
	const max = 64
	if len(v) > max {
		return strconv.Quote(string(v[:max])) + "..."
	}
	return strconv.Quote(string(v))
}

// parseTime is time.Parse(time.RFC3339Nano, string(v)), reading TimeLayout, which is
// how we write timestamps, directly and without allocating.
func parseTime(v []byte) (time.Time, error) {
	if t, ok := parseLayout(v, &day{}); ok {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, string(v))
}

// parseLayout reads v written in TimeLayout as a UTC time, computing it from the
// calendar date directly (time.Date and the checks after it cost more than the rest of
// a decode); ok is false for anything else, a day the month does not have included.
// last is the date last read and is updated.
func parseLayout(v []byte, last *day) (t time.Time, ok bool) {
	if len(v) != len(TimeLayout) || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' ||
		v[16] != ':' || v[19] != '.' || v[23] != 'Z' {
		return time.Time{}, false
	}
	for _, i := range [...]int{11, 12, 14, 15, 17, 18, 20, 21, 22} {
		if v[i]-'0' > 9 {
			return time.Time{}, false
		}
	}
	d := func(i int) int { return int(v[i] - '0') }
	hour, minute, sec, ms := d(11)*10+d(12), d(14)*10+d(15), d(17)*10+d(18), d(20)*100+d(21)*10+d(22)
	if hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	if date := [10]byte(v[:10]); date != last.date {
		for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9} {
			if v[i]-'0' > 9 {
				return time.Time{}, false
			}
		}
		year, month, mday := d(0)*1000+d(1)*100+d(2)*10+d(3), d(5)*10+d(6), d(8)*10+d(9)
		if month < 1 || month > 12 || mday < 1 || mday > daysIn(month, year) {
			return time.Time{}, false
		}
		*last = day{date: date, days: daysFromCivil(year, month, mday)}
	}
	secs := last.days*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(secs, int64(ms)*1e6).UTC(), true
}

// daysIn is the number of days of month in year (proleptic Gregorian, as package time).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to year-month-day, for years 0
// to 9999 (Howard Hinnant's days_from_civil).
func daysFromCivil(year, month, day int) int64 {
	y := uint(year) + 400 // from year -400, so that the divisions are unsigned
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := uint(month+9) % 12
	doy := (153*mp+2)/5 + uint(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097+doe) - 719468 - 146097
}
