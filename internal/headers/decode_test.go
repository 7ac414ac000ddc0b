package headers

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// goldenHeader is a header in a golden file: text, hex, or neither for a null value.
type goldenHeader struct {
	Key  string  `json:"key"`
	Text *string `json:"text"`
	Hex  *string `json:"hex"`
}

type goldenCase struct {
	Name     string          `json:"name"`
	Headers  []goldenHeader  `json:"headers"`
	Want     json.RawMessage `json:"want"`     // Envelope fields; unknown coordinates default to -1
	Problem  string          `json:"problem"`  // expected Problem.Reason, "" for none
	Warnings []string        `json:"warnings"` // one substring per expected warning, in order
}

func loadGolden(t *testing.T) map[string][]goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "decode", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	all := make(map[string][]goldenCase)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var cases []goldenCase
		require.NoError(t, json.Unmarshal(b, &cases), f)
		all[strings.TrimSuffix(filepath.Base(f), ".json")] = cases
	}
	return all
}

func (g goldenCase) headers(t *testing.T) []Header {
	t.Helper()
	hs := make([]Header, 0, len(g.Headers))
	for _, h := range g.Headers {
		var v []byte
		switch {
		case h.Text != nil:
			v = []byte(*h.Text)
		case h.Hex != nil:
			var err error
			v, err = hex.DecodeString(*h.Hex)
			require.NoError(t, err)
		}
		hs = append(hs, Header{Key: h.Key, Value: v})
	}
	return hs
}

func TestDecodeGolden(t *testing.T) {
	for file, cases := range loadGolden(t) {
		for _, g := range cases {
			t.Run(file+"/"+g.Name, func(t *testing.T) {
				want := Envelope{OriginalPartition: -1, OriginalOffset: -1}
				require.NoError(t, json.Unmarshal(g.Want, &want))
				hs := g.headers(t)

				d := Decode(hs)

				require.Equal(t, want, d.Envelope)
				require.Equal(t, hs, d.Raw)
				if g.Problem == "" {
					require.Nil(t, d.Problem)
				} else {
					require.NotNil(t, d.Problem)
					require.Equal(t, g.Problem, d.Problem.Reason)
					require.NotEmpty(t, d.Problem.Detail)
				}
				require.Len(t, d.Warnings, len(g.Warnings), "warnings: %q", d.Warnings)
				for i, w := range g.Warnings {
					require.Contains(t, d.Warnings[i].Detail, w)
				}
				checkInvariants(t, d)
			})
		}
	}
}

func TestDecodeTenThousandHeaders(t *testing.T) {
	hs := make([]Header, 0, 10_000)
	for i := range 9_998 {
		hs = append(hs, Header{Key: "x-noise", Value: []byte{byte(i)}})
	}
	hs = append(hs, Header{Key: KeyRetryCount, Value: []byte("1")}, Header{Key: KeyOriginalTopic, Value: []byte("t")})

	d := Decode(hs)

	require.Nil(t, d.Problem)
	require.Empty(t, d.Warnings)
	require.Equal(t, 1, d.Envelope.RetryCount)
	require.Len(t, d.Raw, 10_000)
}

func TestDecodeTenThousandDuplicatesWarnOnce(t *testing.T) {
	hs := make([]Header, 10_000)
	for i := range hs {
		hs[i] = Header{Key: KeyOriginalTopic, Value: []byte("t")}
	}

	d := Decode(hs)

	require.Nil(t, d.Problem)
	require.Len(t, d.Warnings, 1)
}

// The text values of a record share one allocation: decoding a record we wrote, with a
// topic, an error class and a message, allocates once (it was once per value).
func TestDecodeAllocatesOnceForItsText(t *testing.T) {
	e := Envelope{RetryCount: 1, OriginalTopic: "orders", OriginalPartition: 2, OriginalOffset: 3,
		OriginalTimestamp: t0, FirstFailure: t0, LastFailure: t0, ErrorClass: "java.io.IOException",
		ErrorMessage: "downstream unavailable", Convention: "dlq"}
	hs := Encode(nil, e, EncodeOptions{})

	require.Equal(t, e, DecodeOf(hs).Envelope)
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = DecodeOf(hs) }))
}

func TestDecodeBoundsText(t *testing.T) {
	// A 3-byte rune straddles the limit, so the cut must back off to its start.
	msg := strings.Repeat("a", MaxTextBytes-1) + "€" + strings.Repeat("b", 1<<20)
	hostileTopic := strings.Repeat("/", 1<<20)
	hs := []Header{
		{Key: "originalTopic", Value: []byte(hostileTopic)},
		{Key: "__connect.errors.exception.message", Value: []byte(msg)},
	}

	d := Decode(hs)

	require.Equal(t, strings.Repeat("a", MaxTextBytes-1), d.Envelope.ErrorMessage)
	require.Len(t, d.Envelope.OriginalTopic, MaxTextBytes)
	require.Equal(t, ReasonUnroutable, d.Problem.Reason)
	require.Less(t, len(d.Problem.Detail), 200, "detail must not echo a hostile value in full")
}

func TestValidTopicName(t *testing.T) {
	for name, ok := range map[string]bool{
		"orders":                 true,
		"a.b_c-D9":               true,
		strings.Repeat("x", 249): true,
		strings.Repeat("x", 250): false,
		"":                       false,
		".":                      false,
		"..":                     false,
		"...":                    true,
		"a/b":                    false,
		"a b":                    false,
		"caf\u00e9":              false,
		"orders\x00":             false,
	} {
		require.Equal(t, ok, ValidTopicName(name), "%q", name)
	}
}

func TestProblemIsAnError(t *testing.T) {
	var err error = &Problem{Reason: ReasonUnroutable, Detail: "no original topic header"}
	require.EqualError(t, err, "unroutable: no original topic header")
}

func TestParseTimeMatchesTimeParse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	inputs := []string{"", "2026-02-29T00:00:00.000Z", "2024-02-29T00:00:00.000Z", "2026-04-31T00:00:00.000Z",
		"2026-13-01T00:00:00.000Z", "2026-00-01T00:00:00.000Z", "2026-01-00T00:00:00.000Z", "2026-01-01T24:00:00.000Z",
		"2026-01-01T23:60:00.000Z", "2026-01-01T23:59:60.000Z", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
		"2026-01-01T00:00:00.000+01:00", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.1234Z", "2026-01-01t00:00:00.000Z",
		"-026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.-00Z", "+026-01-01T00:00:00.000Z",
		"0000-02-29T00:00:00.000Z", "0100-02-29T00:00:00.000Z", "2000-02-29T23:59:59.999Z", "2100-02-29T00:00:00.000Z",
		"2400-02-29T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z", "2026-06-31T00:00:00.000Z",
		"2026-12-31T00:00:00.000Z", "2026-12-32T00:00:00.000Z", "0000-01-01T00:00:00.000Z"}
	for range 5000 {
		b := []byte(time.UnixMilli(r.Int64N(maxMillis)).UTC().Format(TimeLayout))
		inputs = append(inputs, string(b))
		b[r.IntN(len(b))] = "0123456789-:.TZ+x "[r.IntN(18)]
		inputs = append(inputs, string(b))
	}
	var last day // carried from input to input, as a decode does: the same date follows often
	for _, in := range inputs {
		want, wantErr := time.Parse(time.RFC3339Nano, in)
		got, err := parseTime([]byte(in))
		require.Equal(t, wantErr == nil, err == nil, "%q", in)
		require.True(t, want.Equal(got), "%q: %v, want %v", in, got, want)
		require.Equal(t, want.UTC(), got.UTC(), "%q", in)
		fresh, ok := parseLayout([]byte(in), &day{})
		carried, carriedOK := parseLayout([]byte(in), &last)
		require.Equal(t, ok, carriedOK, "%q after a date of %s", in, last.date)
		require.Equal(t, fresh, carried, "%q", in)
	}
}

// parseDecimal reads what strconv.ParseInt reads in base 10, but for a leading '+', and
// fails the same way, whatever the length, sign, leading zeros and size (a value that is
// not a decimal integer is malformed, however long).
func TestParseDecimalMatchesParseInt(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	inputs := []string{"", "-", "0", "-0", "00", "+1", "1x", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "0000000000000000000000000001",
		"-00000000000000000000009223372036854775808", "00000000000000000000009223372036854775808"}
	for range 20000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = "0123456789"[r.IntN(10)]
		}
		if len(b) > 0 && r.IntN(4) == 0 {
			b[r.IntN(len(b))] = "-+x0"[r.IntN(4)]
		}
		if r.IntN(4) == 0 {
			b = append([]byte("-"), b...)
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		for _, bits := range []int{32, 64} {
			got, err := parseDecimal([]byte(in), bits)
			want, wantErr := strconv.ParseInt(in, 10, bits)
			digits := strings.TrimPrefix(in, "-")
			switch {
			case digits == "" || strings.Trim(digits, "0123456789") != "":
				require.Equal(t, errMalformed, err, "%q", in)
			case wantErr == nil:
				require.NoError(t, err, "%q", in)
				require.Equal(t, want, got, "%q", in)
			case errors.Is(wantErr, strconv.ErrRange):
				require.Equal(t, errRange, err, "%q/%d", in, bits)
			default:
				t.Fatalf("%q: ParseInt fails with %v", in, wantErr)
			}
		}
	}
}

// Every warning has a kind from the closed set, whatever the header values say, so the
// worker can count them by kind.
func TestDecodeWarningKinds(t *testing.T) {
	hs := []Header{
		{Key: "retryCount", Value: []byte("1")},
		{Key: "retryCount", Value: []byte("2")},
		{Key: KeyRetryCount, Value: []byte("x")},
		{Key: "__connect.errors.topic", Value: []byte("bad topic")},
		{Key: "__connect.errors.partition", Value: []byte("p{0}")},
		{Key: "__connect.errors.offset", Value: []byte("-1")},
		{Key: KeyFirstFailure, Value: []byte("yesterday")},
		{Key: KeyRedriveID, Value: []byte("nowhere")},
		{Key: "retry_topic-backoff-timestamp", Value: []byte("not-a-time")},
	}

	d := Decode(hs)

	var kinds []WarningKind
	for _, w := range d.Warnings {
		kinds = append(kinds, w.Kind)
	}
	require.Equal(t, []WarningKind{WarnDuplicateKey, WarnPartition, WarnOffset, WarnRetryCount, WarnTimestamp, WarnRedriveID, WarnTimestamp}, kinds)
	require.Equal(t, "__connect.errors.partition: not a decimal integer: \"p{0}\"", d.Warnings[1].String())
}

// ourField knows exactly our convention's keys, as the index does.
func TestOurFieldIsTheIndexOfOurKeys(t *testing.T) {
	for key, s := range index {
		f, ok := ourField(key)
		require.Equal(t, s.conv == ours, ok, key)
		if ok {
			require.Equal(t, s.f, f, key)
		}
	}
	for _, key := range []string{"", "dlq", "dlq-", "dlq-retry", "dlq-retry-count ", "Dlq-retry-count", "x-dlq-retry-count"} {
		_, ok := ourField(key)
		require.False(t, ok, key)
	}
}

// text's shortcut for plain ASCII gives what the full path gives.
func TestTextShortcut(t *testing.T) {
	long := strings.Repeat("a", MaxTextBytes+1)
	for _, s := range []string{"", "orders", "java.io.IOException", "a\x00b", "caf\xc3\xa9", "bad\xff", long, long[:MaxTextBytes]} {
		full := strings.ToValidUTF8(s, "\uFFFD")
		full = strings.ReplaceAll(full, "\x00", "\uFFFD")
		if len(full) > MaxTextBytes {
			full = full[:MaxTextBytes]
		}
		require.Equal(t, full, text(s), "%q", s)
	}
}

// plainASCII, which reads eight bytes at a time, says what a byte-by-byte check says,
// whatever the length and wherever the NUL or the non-ASCII byte is.
func TestPlainASCIIMatchesByteByByte(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 || s[i] >= 0x80 {
				return false
			}
		}
		return true
	}
	r := rand.New(rand.NewPCG(13, 17))
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(1 + r.IntN(0x7f))
		}
		if len(b) > 0 && r.IntN(2) == 0 {
			b[r.IntN(len(b))] = []byte{0, 0x80, 0xff, 0x7f, 0x01}[r.IntN(5)]
		}
		require.Equal(t, naive(string(b)), plainASCII(string(b)), "%q", b)
	}
}

// An original topic whose bytes are not UTF-8 text is kept exact, Go-quoted (U+FFFD
// would lose the bytes), and the record is unroutable; UTF-8 text is kept as it is.
func TestOriginalTopicBytesAreKeptExact(t *testing.T) {
	for _, raw := range []string{"orders\xff", "\xc3(", "a\x00b", "caf\xc3\xa9\xff", `"x\xff"` + "\xfe"} {
		for _, key := range []string{KeyOriginalTopic, KeyShareTopic, "kafka_dlt-original-topic"} {
			d := Decode([]Header{{Key: key, Value: []byte(raw)}})
			require.NotNil(t, d.Problem, "%s %q", key, raw)
			require.Equal(t, ReasonUnroutable, d.Problem.Reason)
			got, err := strconv.Unquote(d.Envelope.OriginalTopic)
			require.NoError(t, err, "%s: %q", key, d.Envelope.OriginalTopic)
			require.Equal(t, raw, got, key)
			require.True(t, utf8.ValidString(d.Envelope.OriginalTopic))
		}
	}
	d := Decode([]Header{{Key: KeyOriginalTopic, Value: []byte("café")}})
	require.Equal(t, "café", d.Envelope.OriginalTopic, "UTF-8 text is kept as it is")
	require.Equal(t, ReasonUnroutable, d.Problem.Reason)
}
