package masking

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func keyFile(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mask.key")
	require.NoError(t, os.WriteFile(p, []byte(key), 0o600))
	return p
}

const testKey = "0123456789abcdef0123456789abcdef\n"

func newMasker(t *testing.T, c Config) *Masker {
	t.Helper()
	c.HashKeyFile = keyFile(t, testKey)
	m, err := New(c)
	require.NoError(t, err)
	return m
}

// Hostile or mistaken rules stop the start with the rule named.
func TestNewRejects(t *testing.T) {
	long := strings.Repeat("a", 300)
	for name, tc := range map[string]struct {
		c    Config
		want string
	}{
		"empty segment":       {Config{JSONPaths: []string{"a..b"}}, "masking.json_paths[0]"},
		"filter expression":   {Config{JSONPaths: []string{"$..[?(@.x)]"}}, "masking.json_paths[0]"},
		"too deep":            {Config{JSONPaths: []string{strings.Repeat("a.", 20) + "a"}}, "more than 16 segments"},
		"bad regexp":          {Config{Patterns: []string{"(unclosed"}}, "masking.patterns[0]"},
		"matches empty":       {Config{Patterns: []string{`\d*`}}, "matches the empty text"},
		"huge pattern":        {Config{Patterns: []string{long}}, "longer than 256"},
		"huge repetition":     {Config{Patterns: []string{`a{5000}`}}, "masking.patterns[0]"},
		"control in header":   {Config{Headers: []string{"x\nsecret"}}, "masking.headers[0]"},
		"empty header":        {Config{Headers: []string{""}}, "masking.headers[0]"},
		"too many rules":      {Config{Headers: strings.Split(strings.Repeat("h,", 33)+"h", ",")}, "at most 32"},
		"key missing":         {Config{Headers: []string{"x"}, HashKeyFile: "/nonexistent/mask.key"}, "masking.hash_key_file"},
		"short key":           {Config{Headers: []string{"x"}, HashKeyFile: keyFile(t, "short\n")}, "at least 32"},
		"rules without a key": {Config{Headers: []string{"x"}}, "masking.hash_key_file: required"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	m, err := New(Config{})
	require.NoError(t, err)
	require.False(t, m.Enabled(), "no rules, no masking")
}

func TestMaskJSONKeepsTheRestAsStored(t *testing.T) {
	m := newMasker(t, Config{JSONPaths: []string{"$.card.number", "items.*.email", "pin"}})
	v := []byte(`{"card": {"number": "4111111111111111", "exp":"12/30"}, "items":[{"email":"a@x.io","n":1},{"email":{"deep":true}}], "pin": 1234, "other":"pin"}`)
	into := Restore{}
	got := m.Value(v, into)
	card, a, deep, pin := m.Placeholder([]byte("4111111111111111")), m.Placeholder([]byte("a@x.io")),
		m.Placeholder([]byte(`{"deep":true}`)), m.Placeholder([]byte("1234"))
	require.Equal(t, `{"card": {"number": "`+card+`", "exp":"12/30"}, "items":[{"email":"`+a+`","n":1},{"email":"`+deep+`"}], "pin": "`+pin+`", "other":"pin"}`, string(got))
	require.NotContains(t, string(got), "4111")
	require.Len(t, into, 4)

	back, err := into.Apply(got)
	require.NoError(t, err)
	require.Equal(t, string(v), string(back), "the masked view restores to the stored value")

	// A path that selects nothing, or a value that is not JSON, is left alone.
	require.Equal(t, `[1,2]`, string(m.Value([]byte(`[1,2]`), Restore{})))
	require.Equal(t, "pin 1234", string(m.Value([]byte("pin 1234"), Restore{})))
}

func TestMaskTextAndHeaders(t *testing.T) {
	m := newMasker(t, Config{Patterns: []string{`\b\d{16}\b`, `secret=\w+`}, Headers: []string{"Authorization"}})
	into := Restore{}
	got := m.Value([]byte("card 4111111111111111 and secret=hunter2, bytes ok"), into)
	require.Equal(t, "card "+m.Placeholder([]byte("4111111111111111"))+" and "+m.Placeholder([]byte("secret=hunter2"))+", bytes ok", string(got))
	bin := []byte{0xff, '4', '1', '1', '1'}
	require.Equal(t, bin, m.Value(bin, into), "binary values are not text")

	hs := m.Headers([]Header{{"authorization", []byte("Bearer x")}, {"trace", []byte("t")}, {"AUTHORIZATION", nil}}, into)
	require.Equal(t, []Header{{"authorization", []byte(m.Placeholder([]byte("Bearer x")))}, {"trace", []byte("t")}, {"AUTHORIZATION", nil}}, hs)
	v, err := into.Apply(hs[0].Value)
	require.NoError(t, err)
	require.Equal(t, "Bearer x", string(v))
}

// The hash is keyed: another key, another placeholder; the same value, the same one.
func TestHashIsKeyed(t *testing.T) {
	a := newMasker(t, Config{Headers: []string{"x"}})
	b, err := New(Config{Headers: []string{"x"}, HashKeyFile: keyFile(t, strings.Repeat("z", 40))})
	require.NoError(t, err)
	require.Equal(t, a.Hash([]byte("v")), a.Hash([]byte("v")))
	require.NotEqual(t, a.Hash([]byte("v")), b.Hash([]byte("v")))
	require.Len(t, a.Hash([]byte("v")), HashLen)
}

// An edit that keeps the placeholders gets the clear values back; one that holds a
// placeholder of no masked value of the record is refused.
func TestApplyRefusesForeignPlaceholders(t *testing.T) {
	m := newMasker(t, Config{JSONPaths: []string{"ssn"}})
	into := Restore{}
	masked := m.Value([]byte(`{"ssn":"123-45-6789","name":"Ann"}`), into)
	edited := []byte(strings.Replace(string(masked), "Ann", "Anna", 1))
	back, err := into.Apply(edited)
	require.NoError(t, err)
	require.Equal(t, `{"ssn":"123-45-6789","name":"Anna"}`, string(back))

	_, err = into.Apply([]byte(`{"ssn":"` + m.Placeholder([]byte("999-99-9999")) + `"}`))
	var unknown *UnknownPlaceholderError
	require.ErrorAs(t, err, &unknown)
}

// The padded keys compute the same hash as the HMAC, for keys shorter and longer than a
// block.
func TestPadsComputeTheHMAC(t *testing.T) {
	for _, key := range []string{testKey, strings.Repeat("long key ", 20)} {
		m, err := New(Config{Headers: []string{"x"}, HashKeyFile: keyFile(t, key)})
		require.NoError(t, err)
		inner, outer := m.Pads()
		in := sha256.Sum256(append(inner, "4111"...))
		out := sha256.Sum256(append(outer, in[:]...))
		require.Equal(t, m.Hash([]byte("4111")), hex.EncodeToString(out[:])[:HashLen])
	}
}
