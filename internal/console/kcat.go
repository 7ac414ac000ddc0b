package console

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/dlqops/dlq/internal/api"
)

// rawBytes is the bytes the API carried, nil for a null; base64 always holds them.
func rawBytes(b api.Bytes) []byte {
	if b.Null {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(b.Base64)
	if err != nil || raw == nil {
		return []byte{} // the API writes valid base64; an empty value is not a null
	}
	return raw
}

// kcatCommand is a shell command line (bash or zsh) that produces rec's key, headers and
// value to topic with kcat, from the brokers in $KAFKA_BROKERS. Every byte a sender wrote
// is escaped: the value as octal escapes of printf's format, the key and headers as
// $'\xHH' words, so that pasting it runs kcat and nothing else, whatever the record
// holds. kcat takes arguments as C strings: a key, header name or header value with a NUL
// byte, or a header name with '=', cannot be given, and ok is false with why.
func kcatCommand(topic string, d *api.RecordDetail) (cmd string, ok bool, why string) {
	key, value := rawBytes(d.Key), rawBytes(d.Value)
	var b strings.Builder
	if value == nil {
		b.WriteString(": | ") // a tombstone: kcat -Z sends an empty message as a null value
	} else {
		fmt.Fprintf(&b, "printf '%s' | ", printfEscape(value))
	}
	b.WriteString(`kcat -P -b "$KAFKA_BROKERS" -t ` + ansiQuote([]byte(topic)))
	if value == nil {
		b.WriteString(" -Z")
	}
	if key != nil {
		if strings.IndexByte(string(key), 0) >= 0 {
			return "", false, "the key holds a NUL byte, which a command-line argument cannot carry"
		}
		b.WriteString(" -k " + ansiQuote(key))
	}
	for _, h := range d.Headers {
		hv := rawBytes(h.Value)
		if strings.ContainsAny(h.Key, "=\x00") || strings.IndexByte(string(hv), 0) >= 0 {
			return "", false, fmt.Sprintf("header %s has a NUL byte or its name an '=', which kcat -H cannot carry", strconv.Quote(h.Key))
		}
		b.WriteString(" -H " + ansiQuote(append([]byte(h.Key+"="), hv...)))
	}
	b.WriteString(" /dev/stdin") // a file argument is one message, newlines and all
	return b.String(), true, ""
}

// plain reports whether c needs no escaping in either quoting.
func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-/:,@+", c) >= 0
}

// ansiQuote is b as one bash/zsh $'...' word: plain bytes as they are, every other byte
// as \xHH, so no quote, backslash, $ or control byte reaches the shell unescaped.
func ansiQuote(b []byte) string {
	var s strings.Builder
	s.WriteString("$'")
	for _, c := range b {
		if plain(c) {
			s.WriteByte(c)
		} else {
			fmt.Fprintf(&s, `\x%02x`, c)
		}
	}
	s.WriteString("'")
	return s.String()
}

// printfEscape is b as printf's format, inside single quotes: plain bytes as they are,
// every other byte as a three-digit octal escape (POSIX printf), so the format holds
// neither a quote nor a % directive.
func printfEscape(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if plain(c) {
			s.WriteByte(c)
		} else {
			fmt.Fprintf(&s, `\%03o`, c)
		}
	}
	return s.String()
}
