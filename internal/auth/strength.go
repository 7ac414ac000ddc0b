package auth

import (
	"fmt"
	"math"
	"strings"
)

// MinTokenBits is the least estimated entropy of a token Authenticate accepts: a token
// with less can be guessed offline from a leaked hash, SHA-256 being fast.
const MinTokenBits = 128

// commonWords are words people build tokens from; each counts as one pick from a large
// dictionary rather than as random letters.
var commonWords = []string{
	"password", "passwd", "secret", "token", "admin", "administrator", "operator", "viewer", "reader",
	"writer", "user", "root", "login", "letmein", "welcome", "qwerty", "azerty", "asdf", "zxcv",
	"dragon", "monkey", "master", "shadow", "sunshine", "princess", "football", "baseball", "iloveyou",
	"trustno", "changeme", "default", "example", "sample", "test", "testing", "demo", "prod",
	"production", "staging", "develop", "dev", "local", "localhost", "kafka", "postgres", "dlq", "dead",
	"letter", "queue", "replay", "retry", "orders", "payments", "service", "bearer", "access", "api",
	"key", "pass", "word", "scoped", "view", "observability", "console", "hunter",
}

// wordBits is what a common word adds: one pick among a dictionary of some 65,000 words.
const wordBits = 16

// EstimateBits estimates the entropy of token in bits, generously for random text and
// harshly for patterns: a common word counts wordBits, a character that repeats or
// continues a run (aaaa, 1234, dcba) one bit, a repetition of an earlier stretch
// (passwordpassword) a few bits, and any other character the bits of the character
// classes the token draws from (lower case, upper case, digits, others).
func EstimateBits(token string) float64 {
	if token == "" {
		return 0
	}
	if p := period(token); p < len(token) {
		return EstimateBits(token[:p]) + math.Log2(float64(len(token)))
	}
	perChar := math.Log2(float64(alphabet(token)))
	lower := strings.ToLower(token)
	var bits float64
	for i := 0; i < len(token); {
		if n := wordAt(lower, i); n > 0 {
			bits += wordBits
			i += n
			continue
		}
		if n := repeatAt(token, i); n > 0 {
			bits += math.Log2(float64(i)) + math.Log2(float64(n)) // where it repeats from, and how much
			i += n
			continue
		}
		if i > 0 {
			if d := int(token[i]) - int(token[i-1]); d >= -1 && d <= 1 {
				bits++
				i++
				continue
			}
		}
		bits += perChar
		i++
	}
	return bits
}

// CheckStrength refuses a token too short or too predictable to be safe, saying how to
// make one.
func CheckStrength(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("a token needs at least %d characters (`dlq-admin token new` makes a random one)", MinTokenLength)
	}
	if bits := EstimateBits(token); bits < MinTokenBits {
		return fmt.Errorf("a token needs at least %d bits of entropy; this one has about %.0f (repeated characters, "+
			"runs or common words): make a random one with `dlq-admin token new`", MinTokenBits, bits)
	}
	return nil
}

// alphabet is the size of the character classes token uses.
func alphabet(token string) int {
	var lower, upper, digit, other bool
	for _, c := range token {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	n := 0
	for _, class := range []struct {
		used bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if class.used {
			n += class.size
		}
	}
	return n
}

// period is the length of the shortest stretch token repeats (len(token) if none).
func period(token string) int {
	for p := 1; p <= len(token)/2; p++ {
		if strings.Repeat(token[:p], len(token)/p+1)[:len(token)] == token {
			return p
		}
	}
	return len(token)
}

// wordAt is the length of the longest common word at lower[i:], 0 if none.
func wordAt(lower string, i int) int {
	n := 0
	for _, w := range commonWords {
		if len(w) > n && strings.HasPrefix(lower[i:], w) {
			n = len(w)
		}
	}
	return n
}

// repeatAt is the length of the longest stretch of at least four characters at token[i:]
// that already occurred before i, 0 if none.
func repeatAt(token string, i int) int {
	best := 0
	for n := 4; i+n <= len(token); n++ {
		if !strings.Contains(token[:i], token[i:i+n]) {
			break
		}
		best = n
	}
	return best
}
