// Package fingerprint groups dead letters by cause. Two records fail for the same reason
// when they have the same error class, the same original topic and the same message once
// its variable parts (numbers, ids, UUIDs, hex, quoted values, URL paths' ids, timestamps)
// are replaced by placeholders: 200 timeouts that differ only in an order id and a latency
// are one incident, not 200 rows.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Placeholders that stand for a message's variable parts in a template.
const (
	Quoted    = "<str>"
	Timestamp = "<ts>"
	UUID      = "<uuid>"
	Hex       = "<hex>"
	ID        = "<id>"
	Number    = "<n>"
)

// maxMessageBytes bounds what of a message is normalised: messages are attacker text, and
// the start of a message names its cause.
const maxMessageBytes = 4096

// maxTemplateRunes bounds a stored template.
const maxTemplateRunes = 1000

// Separator joins the parts a fingerprint hashes; store.ParkClaimed's SQL hashes the
// same bytes.
const Separator = "\x1f"

var (
	// A quoted value: double quotes or backquotes (with escapes), or single quotes that do
	// not start inside a word, so that "don't" is no quote.
	doubleQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|` + "`[^`]*`")
	singleQuoted = regexp.MustCompile(`(^|[^\p{L}\p{N}])'[^'\n]*'`)
	timestamp    = regexp.MustCompile(`\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?`)
	uuid         = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	hexLiteral   = regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b`)
	// A URL path's segment that holds a digit is an id: /orders/8f3k2/items.
	pathID = regexp.MustCompile(`/[\p{L}\p{N}_.~-]*\p{N}[\p{L}\p{N}_.~-]*`)
	// A word with a digit in it: a number, a run of hex, or an id such as ord_8f3k2.
	word = regexp.MustCompile(`[\p{L}\p{N}_-]*\p{N}[\p{L}\p{N}_-]*`)
	// A number, possibly signed: the whole word.
	number = regexp.MustCompile(`^-?\p{N}+$`)
	// A run of hex digits long enough to be a hash or an address.
	hexRun = regexp.MustCompile(`(?i)^[0-9a-f]{8,}$`)
)

// Template returns message with its variable parts replaced by placeholders.
func Template(message string) string {
	if len(message) > maxMessageBytes {
		message = strings.ToValidUTF8(message[:maxMessageBytes], "")
	}
	t := doubleQuoted.ReplaceAllString(message, Quoted)
	t = singleQuoted.ReplaceAllString(t, "${1}"+Quoted)
	t = uuid.ReplaceAllString(t, UUID)
	t = timestamp.ReplaceAllString(t, Timestamp)
	t = hexLiteral.ReplaceAllString(t, Hex)
	t = pathID.ReplaceAllString(t, "/"+ID)
	t = word.ReplaceAllStringFunc(t, func(w string) string {
		switch {
		case number.MatchString(w):
			return Number
		case hexRun.MatchString(w):
			return Hex
		}
		return ID
	})
	if utf8.RuneCountInString(t) > maxTemplateRunes {
		t = string([]rune(t)[:maxTemplateRunes])
	}
	return t
}

// Of returns the fingerprint of a failure: its error class, its message's template and
// the topic the record came from ("" when unknown), hashed.
func Of(errorClass, template, originalTopic string) string {
	sum := sha256.Sum256([]byte(errorClass + Separator + template + Separator + originalTopic))
	return hex.EncodeToString(sum[:Bytes])
}

// Bytes is how many bytes of the hash a fingerprint keeps (as twice as many hex digits):
// enough that two causes never collide in one parking store.
const Bytes = 16
