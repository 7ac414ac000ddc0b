package headers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fuzzKeys lets the fuzzer reach every key we read with one byte. Conventions
// added later come last, so that the seed corpus keeps its meaning.
var fuzzKeys = func() []string {
	var ks, later []string
	for _, c := range conventions {
		for _, k := range c.keys {
			switch {
			case k == "":
			case c.name == "share-group" || c.name == "streams":
				later = append(later, k)
			default:
				ks = append(ks, k)
			}
		}
	}
	ks = append(ks, DefaultEncodeOptions().StripKeys...)
	return append(ks, append(later, "__streams.errors.stacktrace")...)
}()

// fuzzHeaders turns fuzz input into headers. Per header: a tag byte (high bit
// clear: a known key by index; set: a raw key of tag&0x7f bytes), then a
// length byte (0xff: null value) and the value.
func fuzzHeaders(data []byte) []Header {
	take := func(n int) []byte {
		n = min(n, len(data))
		v := data[:n:n]
		data = data[n:]
		return v
	}
	var hs []Header
	for len(data) > 0 {
		tag := take(1)[0]
		var h Header
		if tag&0x80 == 0 {
			h.Key = fuzzKeys[int(tag)%len(fuzzKeys)]
		} else {
			h.Key = string(take(int(tag & 0x7f)))
		}
		if l := take(1); len(l) == 1 && l[0] != 0xff {
			h.Value = take(int(l[0]))
		}
		hs = append(hs, h)
	}
	return hs
}

func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		hs := fuzzHeaders(data)
		d := Decode(hs)
		require.Equal(t, hs, d.Raw)
		checkInvariants(t, d)

		// Re-encoding what we decoded is stable: the envelope survives and
		// every foreign header is kept, in order, byte for byte.
		opts := DefaultEncodeOptions()
		out := Encode(hs, d.Envelope, opts)
		foreign := make([]Header, 0, len(hs))
		for _, h := range hs {
			if !canonical(h.Key) && !opts.strips(h.Key) {
				foreign = append(foreign, h)
			}
		}
		require.Equal(t, foreign, out[:len(foreign)])
		again := Decode(out)
		want := d.Envelope
		if want.OriginalTopic != "" {
			want.Convention = "dlq"
		}
		require.Equal(t, want, again.Envelope)
	})
}

func checkInvariants(t *testing.T, d Decoded) {
	t.Helper()
	e := d.Envelope
	if d.Problem != nil {
		require.Contains(t, []string{ReasonUnroutable, ReasonInvalidRetryCount}, d.Problem.Reason)
		require.NotEmpty(t, d.Problem.Detail)
	} else {
		require.True(t, ValidTopicName(e.OriginalTopic), "routable record with illegal topic %q", e.OriginalTopic)
	}
	require.GreaterOrEqual(t, e.RetryCount, 0)
	require.GreaterOrEqual(t, e.OriginalPartition, int32(-1))
	require.GreaterOrEqual(t, e.OriginalOffset, int64(-1))
	for _, s := range []string{e.OriginalTopic, e.ErrorClass, e.ErrorMessage} {
		require.LessOrEqual(t, len(s), MaxTextBytes)
		require.Equal(t, text(s), s, "text field not sanitized")
	}
}
