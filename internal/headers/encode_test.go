package headers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func h(key, value string) Header { return Header{Key: key, Value: []byte(value)} }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)

func TestEncodeReplacesOursAndKeepsForeignHeaders(t *testing.T) {
	in := []Header{
		h("traceparent", "00-abc-01"),
		h(KeyRetryCount, "1"),
		{Key: "null-value", Value: nil},
		{Key: "empty-value", Value: []byte{}},
		h("dup", "a"),
		h(KeyRetryCount, "1"),
		h(KeyOriginalTopic, "stale"),
		h("dup", "b"),
		h("dlq-future-field", "kept: only known keys are ours"),
		h("binary", "\x00\xff"),
	}
	snapshot := append([]Header(nil), in...)

	out := Encode(in, Envelope{RetryCount: 2, OriginalTopic: "orders", OriginalPartition: -1, OriginalOffset: -1}, EncodeOptions{})

	require.Equal(t, []Header{
		h("traceparent", "00-abc-01"),
		{Key: "null-value", Value: nil},
		{Key: "empty-value", Value: []byte{}},
		h("dup", "a"),
		h("dup", "b"),
		h("dlq-future-field", "kept: only known keys are ours"),
		h("binary", "\x00\xff"),
		h(KeyRetryCount, "2"),
		h(KeyOriginalTopic, "orders"),
	}, out)
	require.Nil(t, out[1].Value, "a null header must stay null")
	require.Equal(t, snapshot, in, "Encode must not modify its input")
}

func TestEncodeWritesEveryCanonicalHeader(t *testing.T) {
	e := Envelope{
		RetryCount: 3, OriginalTopic: "orders", OriginalPartition: 0, OriginalOffset: 42,
		OriginalTimestamp: t0, FirstFailure: t0.Add(time.Second), LastFailure: t0.In(time.FixedZone("CET", 3600)),
		ErrorClass: "db.Timeout", ErrorMessage: "boom",
		RedriveID: &Coordinates{Topic: "orders.dlq", Partition: 1, Offset: 7},
		Replay:    &Replay{Actor: "alice", JobID: "j1", ReplayID: "r1"},
		NotBefore: t0, Convention: "spring", Group: "svc-a", TargetGroup: "svc-b",
	}

	out := Encode(nil, e, EncodeOptions{})

	require.Equal(t, []Header{
		h(KeyRetryCount, "3"),
		h(KeyOriginalTopic, "orders"),
		h(KeyOriginalPartition, "0"),
		h(KeyOriginalOffset, "42"),
		h(KeyOriginalTimestamp, "2026-01-02T03:04:05.678Z"),
		h(KeyFirstFailure, "2026-01-02T03:04:06.678Z"),
		h(KeyLastFailure, "2026-01-02T03:04:05.678Z"),
		h(KeyErrorClass, "db.Timeout"),
		h(KeyErrorMessage, "boom"),
		h(KeyRedriveID, "orders.dlq/1/7"),
		h(KeyConsumerGroup, "svc-a"),
		h(KeyTargetGroup, "svc-b"),
		h(KeyReplayActor, "alice"),
		h(KeyReplayJob, "j1"),
		h(KeyReplayID, "r1"),
	}, out)
}

func TestEncodeValuesDoNotAlias(t *testing.T) {
	out := Encode(nil, Envelope{RetryCount: 1, OriginalTopic: "t", OriginalPartition: -1, OriginalOffset: -1}, EncodeOptions{})

	_ = append(out[0].Value, "999"...)

	require.Equal(t, "t", string(out[1].Value))
}

func TestEncodeStrip(t *testing.T) {
	in := []Header{
		h("kafka_dlt-exception-stacktrace", "at a\nat b"),
		h("keep", "1"),
		h("__connect.errors.exception.stacktrace", "at c"),
		h("kafka_dlt-exception-message", "kept"),
		h("x-debug-trace", "big"),
		h("x-debug", "prefix match is by prefix only"),
	}
	opts := DefaultEncodeOptions()
	opts.StripPrefixes = []string{"x-debug-"}

	out := Encode(in, Envelope{OriginalPartition: -1, OriginalOffset: -1}, opts)

	require.Equal(t, []Header{
		h("keep", "1"),
		h("kafka_dlt-exception-message", "kept"),
		h("x-debug", "prefix match is by prefix only"),
		h(KeyRetryCount, "0"),
	}, out)
}

// A Kafka Streams dead letter is its source record's headers then six of
// Streams'; redriven, it is the source's headers then ours, hop after hop.
func TestEncodeStreamsDeadLetterIsItsSourcePlusOurs(t *testing.T) {
	source := []Header{h("traceparent", "00-abc-01"), {Key: "bin", Value: []byte{0, 1}}, {Key: "null"}}
	streams := func(hs []Header, offset string) []Header {
		return append(append([]Header(nil), hs...),
			h("__streams.errors.exception", "org.apache.kafka.common.errors.SerializationException"),
			h("__streams.errors.message", "Size of data received by IntegerDeserializer is not 4"),
			h("__streams.errors.stacktrace", strings.Repeat("at x\n", 100)),
			h("__streams.errors.topic", "payments"),
			h("__streams.errors.partition", "1"),
			h("__streams.errors.offset", offset))
	}
	hs := streams(source, "42")
	for hop := range 3 {
		d := Decode(hs)
		require.Nil(t, d.Problem)
		require.Empty(t, d.Warnings)
		require.Equal(t, hop, d.Envelope.RetryCount)
		require.Equal(t, "org.apache.kafka.common.errors.SerializationException", d.Envelope.ErrorClass)

		out := Encode(hs, d.Envelope.Redriven(Coordinates{Topic: "payments-dlq", Offset: int64(hop)}, t0), DefaultEncodeOptions())

		require.Equal(t, source, out[:len(source)])
		for _, x := range out[len(source):] {
			require.True(t, canonical(x.Key), "%s is not one of ours", x.Key)
		}
		again := Decode(out)
		require.Equal(t, "payments", again.Envelope.OriginalTopic)
		require.Equal(t, int32(1), again.Envelope.OriginalPartition)
		hs = streams(out, "43") // the redriven record fails again in the Streams app
	}
}

func TestEncodeTruncatesOnRuneBoundary(t *testing.T) {
	msg := strings.Repeat("é", MaxTextBytes) // 2 bytes each

	out := Encode(nil, Envelope{ErrorMessage: msg, OriginalPartition: -1, OriginalOffset: -1}, EncodeOptions{})

	require.Equal(t, strings.Repeat("é", MaxTextBytes/2), string(out[1].Value))
}

func TestRedriven(t *testing.T) {
	from := Coordinates{Topic: "orders.dlq", Partition: 2, Offset: 9}
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	want := t0.Add(time.Hour)

	fresh := Envelope{RetryCount: 0, OriginalTopic: "orders"}.Redriven(from, now)
	again := Envelope{RetryCount: 4, FirstFailure: t0, LastFailure: want}.Redriven(from, now)
	saturated := Envelope{RetryCount: math.MaxInt32}.Redriven(from, now)
	replayedBefore := Envelope{RetryCount: 1, Replay: &Replay{Actor: "ada", JobID: "7", ReplayID: "7-42"}}.Redriven(from, now)

	nowMillis := time.Date(2026, 3, 1, 11, 0, 0, 123e6, time.UTC)
	require.Equal(t, Envelope{RetryCount: 1, OriginalTopic: "orders", FirstFailure: nowMillis, LastFailure: nowMillis, RedriveID: &from}, fresh,
		"no failure time known: the hop's")
	require.Equal(t, Envelope{RetryCount: 5, FirstFailure: t0, LastFailure: want, RedriveID: &from}, again,
		"the failure times the dead letter gives are kept: the last failure is the failure's, not the redrive's")
	require.Equal(t, Envelope{RetryCount: 2, FirstFailure: nowMillis, LastFailure: nowMillis, RedriveID: &from}, replayedBefore,
		"one de-duplication id per hop: an earlier replay's is dropped")
	require.Equal(t, math.MaxInt32, saturated.RetryCount)

	addressed := Envelope{RetryCount: 1, FirstFailure: t0, LastFailure: want, Group: "svc-a", TargetGroup: "svc-a"}.Redriven(from, now)
	require.Equal(t, Envelope{RetryCount: 2, FirstFailure: t0, LastFailure: want, RedriveID: &from, Group: "svc-a"}, addressed,
		"the failing group travels on; the address belongs to one hop, set again by the route")
}

func TestReplayed(t *testing.T) {
	from := Coordinates{Topic: "orders.dlq", Partition: 2, Offset: 9}
	r := Replay{Actor: "ada", JobID: "7", ReplayID: "7-42"}
	got := Envelope{RetryCount: 3, OriginalTopic: "orders", RedriveID: &from, Group: "svc-a", TargetGroup: "svc-a"}.Replayed(r)
	require.Equal(t, Envelope{RetryCount: 3, OriginalTopic: "orders", Replay: &r, Group: "svc-a"}, got,
		"one de-duplication id per hop: the earlier redrive's is dropped")
}

// A record Spring dead-lettered, redriven by us, then dead-lettered by Spring again: the
// first failure is the first dead-lettering (the first DLQ record's timestamp), the newest
// failure's class, message and time win over ours.
func TestNewestFailureWinsAcrossHops(t *testing.T) {
	first := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) // Spring dead-letters it
	redrive := first.Add(10 * time.Minute)               // we redrive it
	second := redrive.Add(time.Minute)                   // Spring dead-letters it again
	from := Coordinates{Topic: "orders.dlq", Partition: 0, Offset: 7}
	hs := []Header{
		h("kafka_dlt-original-topic", "orders"),
		h("kafka_dlt-exception-fqcn", "FirstError"),
		h("kafka_dlt-exception-message", "first"),
	}

	hs = Encode(hs, Decode(hs).Envelope.DeadLetteredAt(first).Redriven(from, redrive), DefaultEncodeOptions())
	e := Decode(hs).Envelope
	require.Equal(t, first, e.FirstFailure, "the first failure is the first dead-lettering, not our redrive")
	require.Equal(t, "FirstError", e.ErrorClass)

	// Spring strips its previous exception headers and appends the new ones.
	var again []Header
	for _, x := range hs {
		if !strings.HasPrefix(x.Key, "kafka_dlt-exception") {
			again = append(again, x)
		}
	}
	again = append(again, h("kafka_dlt-exception-fqcn", "SecondError"), h("kafka_dlt-exception-message", "second"))
	e = Decode(again).Envelope.DeadLetteredAt(second)
	require.Equal(t, "SecondError", e.ErrorClass)
	require.Equal(t, "second", e.ErrorMessage)
	require.Equal(t, second, e.LastFailure, "the newest failure's time, not our redrive's")
	require.Equal(t, first, e.FirstFailure)
	require.Equal(t, 1, e.RetryCount)

	// Our own publisher failing it again writes our headers last: ours win.
	ours := Encode(again, Envelope{OriginalTopic: "orders", ErrorClass: "OurError", LastFailure: second}, EncodeOptions{})
	require.Equal(t, "OurError", Decode(ours).Envelope.ErrorClass)
}

func TestDeadLetteredAtKeepsKnownTimes(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	known := Envelope{FirstFailure: t0, LastFailure: t0.Add(time.Hour)}
	require.Equal(t, known, known.DeadLetteredAt(at))
	require.Equal(t, Envelope{FirstFailure: at.Truncate(time.Millisecond), LastFailure: at.Truncate(time.Millisecond)}, Envelope{}.DeadLetteredAt(at))
	require.Equal(t, Envelope{}, Envelope{}.DeadLetteredAt(time.Time{}), "no timestamp: nothing to fill")
	require.Equal(t, Envelope{}, Envelope{}.DeadLetteredAt(time.Unix(0, 0)), "no timestamp: nothing to fill")
}

// A redrive hop, as the worker does it: decode, next hop, encode. The record
// must not grow from hop to hop.
func TestRedriveHopsDoNotGrow(t *testing.T) {
	hs := []Header{
		h("traceparent", "00-abc-01"),
		h("kafka_dlt-original-topic", "orders"),
		{Key: "kafka_dlt-original-partition", Value: []byte{0, 0, 0, 5}},
		h("kafka_dlt-exception-stacktrace", strings.Repeat("at x\n", 1000)),
		h("kafka_dlt-exception-message", strings.Repeat("m", 10_000)),
	}
	var sizes []int
	for hop := range 5 {
		d := Decode(hs)
		require.Nil(t, d.Problem)
		require.Equal(t, hop, d.Envelope.RetryCount)
		hs = Encode(hs, d.Envelope.Redriven(Coordinates{Topic: "orders.dlq", Offset: int64(hop)}, t0), DefaultEncodeOptions())
		sizes = append(sizes, len(hs))
	}
	require.Equal(t, []int{sizes[0], sizes[0], sizes[0], sizes[0], sizes[0]}, sizes)
	d := Decode(hs)
	require.Equal(t, int32(5), d.Envelope.OriginalPartition)
	require.Len(t, d.Envelope.ErrorMessage, MaxTextBytes)
	require.Equal(t, &Coordinates{Topic: "orders.dlq", Offset: 4}, d.Envelope.RedriveID)
}

// decode(encode(e)) == e for every envelope Encode can express.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		e := randomEnvelope(r)
		d := Decode(Encode(nil, e, EncodeOptions{}))
		require.Equal(t, e, d.Envelope, "iteration %d", i)
		require.Empty(t, d.Warnings, "iteration %d", i)
	}
}

func randomEnvelope(r *rand.Rand) Envelope {
	e := Envelope{RetryCount: r.IntN(math.MaxInt32), OriginalPartition: -1, OriginalOffset: -1}
	maybe := func() bool { return r.IntN(2) == 0 }
	randomTime := func(t *time.Time) {
		if maybe() {
			*t = time.UnixMilli(r.Int64N(maxMillis)).UTC()
		}
	}
	// Coordinates are only read together with the topic they belong to.
	if maybe() {
		e.OriginalTopic = randomTopic(r)
		e.Convention = "dlq"
		if maybe() {
			e.OriginalPartition = r.Int32()
		}
		if maybe() {
			e.OriginalOffset = r.Int64()
		}
		randomTime(&e.OriginalTimestamp)
	}
	randomTime(&e.FirstFailure)
	randomTime(&e.LastFailure)
	if maybe() {
		e.ErrorClass = randomText(r)
	}
	if maybe() {
		e.ErrorMessage = randomText(r)
	}
	if maybe() {
		e.RedriveID = &Coordinates{Topic: randomTopic(r), Partition: r.Int32(), Offset: r.Int64()}
	}
	if maybe() {
		e.Replay = &Replay{Actor: randomText(r)}
		if maybe() {
			e.Replay.JobID = randomText(r)
		}
		if maybe() {
			e.Replay.ReplayID = randomText(r)
		}
	}
	if maybe() {
		e.Group = randomText(r)
	}
	if maybe() {
		e.TargetGroup = randomText(r)
	}
	return e
}

func randomTopic(r *rand.Rand) string {
	const legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	b := make([]byte, 1+r.IntN(249))
	for i := range b {
		b[i] = legal[r.IntN(len(legal))]
	}
	if s := string(b); ValidTopicName(s) {
		return s
	}
	return "t" // "." or ".."
}

// randomText is non-empty, valid UTF-8 without NUL, at most MaxTextBytes.
func randomText(r *rand.Rand) string {
	runes := []rune{'a', 'Z', ' ', '/', 'é', '€', '😀', '\n', '\uFFFD'}
	var b strings.Builder
	for range 1 + r.IntN(300) {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return text(b.String())
}

func TestAppendTimeMatchesFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	times := []time.Time{{}, t0, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("X", -3600)),
		time.Date(2026, 3, 1, 0, 0, 0, 999e6, time.FixedZone("CET", 3600)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2100, 2, 28, 23, 59, 59, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2400, 2, 29, 0, 0, 0, 0, time.UTC)}
	for range 10000 {
		tm := time.Unix(r.Int64N(300e9)-62e9, r.Int64N(1e9)).In(time.FixedZone("Z", r.IntN(86400)-43200))
		// and a time up to a day later: mostly of the same date, which the remembered date gives
		times = append(times, tm, tm.Add(time.Duration(r.Int64N(int64(24*time.Hour)))))
	}
	var last day // carried from time to time, as a Scratch does
	for _, tm := range times {
		require.Equal(t, tm.UTC().Format(TimeLayout), string(appendTime(nil, tm, &day{})), "%v", tm)
		require.Equal(t, tm.UTC().Format(TimeLayout), string(appendTime(nil, tm, &last)), "%v after a time of %s", tm, last.date)
	}
}

// AppendEncoded with one Scratch and one list reused from record to record writes what
// EncodeAs writes for each, and allocates nothing once its buffers are large enough.
func TestAppendEncodedReusesItsBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	in := []Header{h("traceparent", "00-abc-01"), h(KeyRetryCount, "1"), h("kafka_exception-stacktrace", "trace")}
	opts := DefaultEncodeOptions()
	var s Scratch
	var dst []Header
	for i := range 2000 {
		e := randomEnvelope(r)
		dst = AppendEncoded(dst[:0], &s, in, e, opts)
		require.Equal(t, EncodeAs[Header](in, e, opts), dst, "iteration %d", i)
		require.Equal(t, e, Decode(dst).Envelope, "iteration %d", i)
	}
	e := randomEnvelope(r)
	allocs := testing.AllocsPerRun(100, func() { dst = AppendEncoded(dst[:0], &s, in, e, opts) })
	require.Zero(t, allocs)
}
