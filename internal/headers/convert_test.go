package headers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type foreign struct {
	Key   string
	Value []byte
}

func TestConvertKeepsNilAndOrder(t *testing.T) {
	in := []foreign{{"a", nil}, {"a", []byte{}}, {"b", []byte{0xff}}}
	ours := From(in)
	require.Equal(t, []Header{{"a", nil}, {"a", []byte{}}, {"b", []byte{0xff}}}, ours)
	require.Nil(t, ours[0].Value)
	require.Equal(t, in, To[foreign](ours))
}

func TestDecodeOfAndEncodeAsMatchConverted(t *testing.T) {
	in := []foreign{{KeyRetryCount, []byte("3")}, {"kafka_dlt-original-topic", []byte("orders")},
		{"kafka_dlt-exception-stacktrace", []byte("trace")}, {"x", nil}, {KeyOriginalTopic, []byte("payments")},
		{KeyFirstFailure, []byte("2026-01-02T03:04:05.678Z")}, {KeyRetryCount, []byte("4")}, {"y", []byte{}}}
	want := Decode(From(in))
	got := DecodeOf(in)
	require.Nil(t, got.Raw)
	got.Raw = want.Raw
	require.Equal(t, want, got)
	env := want.Envelope.Redriven(Coordinates{Topic: "dlq", Partition: 1, Offset: 2}, time.Now())
	opts := DefaultEncodeOptions()
	require.Equal(t, To[foreign](Encode(From(in), env, opts)), EncodeAs[foreign](in, env, opts))
}
