package headers

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkCodec compares a redrive hop (decode, next hop, re-encode) of a
// realistic 8-header record with the floor: copying the header slice.
func BenchmarkCodec(b *testing.B) {
	hs := []Header{
		h("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
		h("content-type", "application/json"),
		h(KeyRetryCount, "2"),
		h(KeyOriginalTopic, "orders"),
		h(KeyOriginalPartition, "3"),
		h(KeyOriginalOffset, "123456"),
		h(KeyLastFailure, "2026-01-02T03:04:05.678Z"),
		h(KeyErrorMessage, "context deadline exceeded"),
	}
	from := Coordinates{Topic: "orders.dlq", Partition: 1, Offset: 99}
	now := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	opts := DefaultEncodeOptions()

	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = append([]Header(nil), hs...)
		}
	})
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := Decode(hs)
			_ = Encode(d.Raw, d.Envelope.Redriven(from, now), opts)
		}
	})
}

// BenchmarkDecodeScaling shows allocations stay flat as foreign headers grow.
func BenchmarkDecodeScaling(b *testing.B) {
	for _, n := range []int{8, 128, 1024} {
		hs := make([]Header, n)
		for i := range hs {
			hs[i] = h("x-foreign", "v")
		}
		hs[0] = h(KeyOriginalTopic, "orders")
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Decode(hs)
			}
		})
	}
}

// BenchmarkRedriveHop is the worker's hop of a record carrying our headers only (as
// BenchmarkWorker's backlog): decode, classify's view of it, the next hop's envelope and
// its headers re-encoded into reused buffers, as the sender does.
func BenchmarkRedriveHop(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	hs := Encode(nil, Envelope{RetryCount: 1, OriginalTopic: "orders", OriginalPartition: 2, OriginalOffset: 123456,
		OriginalTimestamp: at, FirstFailure: at, LastFailure: at, ErrorClass: "java.io.IOException",
		ErrorMessage: "downstream unavailable"}, DefaultEncodeOptions())
	from := Coordinates{Topic: "orders.dlq", Partition: 1, Offset: 99}
	now := at.Add(time.Hour)
	opts := DefaultEncodeOptions()
	var s Scratch
	var dst []Header
	b.ReportAllocs()
	for b.Loop() {
		d := DecodeOf(hs)
		dst = AppendEncoded(dst[:0], &s, hs, d.Envelope.DeadLetteredAt(at).Redriven(from, now), opts)
	}
}
