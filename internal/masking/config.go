// Package masking hides configured fields of dead-lettered payloads from admin callers
// without the unmask permission: members of JSON values named by a path, header values
// named by their header's name, and what regular expressions match in text values. A
// masked field shows as a placeholder that carries a keyed hash of its clear value, so two
// records with the same masked value can be told apart from different ones, and a caller
// who knows a value can find the records that hold it, without either learning the value.
package masking

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Bounds on the configuration: a rule list is read for every record shown, so it stays
// short, and a path or pattern longer than these is a mistake, not a field.
const (
	maxRules        = 32
	maxPathSegments = 16
	maxPatternBytes = 256
	minKeyBytes     = 32
)

// Config is the masking section of dlq-admin's configuration.
type Config struct {
	// JSONPaths name members of JSON values to mask, as dot-separated member names from
	// the document's root (an optional leading "$." is allowed); "*" stands for every
	// member of an object or element of an array, a number for one element.
	JSONPaths []string `yaml:"json_paths"`
	// Headers are header names whose values are masked, compared without case.
	Headers []string `yaml:"headers"`
	// Patterns are regular expressions (RE2 syntax) whose matches are masked in values
	// that are UTF-8 text and not JSON.
	Patterns []string `yaml:"patterns"`
	// HashKeyFile holds the key (at least 32 bytes) of the placeholders' HMAC-SHA256;
	// required when any rule is configured. Changing it changes every placeholder.
	HashKeyFile string `yaml:"hash_key_file"`
}

// Enabled reports whether any rule is configured.
func (c *Config) Enabled() bool {
	return len(c.JSONPaths)+len(c.Headers)+len(c.Patterns) > 0
}

var segmentSyntax = regexp.MustCompile(`^(\*|[A-Za-z0-9_-]{1,64})$`)

// parsePath reads one of JSONPaths into its segments.
func parsePath(p string) ([]string, error) {
	segs := strings.Split(strings.TrimPrefix(p, "$."), ".")
	if len(segs) > maxPathSegments {
		return nil, fmt.Errorf("%q has more than %d segments", p, maxPathSegments)
	}
	for _, s := range segs {
		if !segmentSyntax.MatchString(s) {
			return nil, fmt.Errorf("%q: each segment is a member name of letters, digits, _ and - (at most 64), "+
				"an array index or *, separated by single dots", p)
		}
	}
	return segs, nil
}

// compilePattern compiles one of Patterns. RE2 matches in time linear in the text, so a
// pattern cannot stall a page; one that matches the empty text would mask between every
// two characters and is refused.
func compilePattern(p string) (*regexp.Regexp, error) {
	if len(p) > maxPatternBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxPatternBytes)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("%q matches the empty text", p)
	}
	return re, nil
}

func validHeaderName(h string) bool {
	if h == "" || len(h) > 249 {
		return false
	}
	for _, r := range h {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// New checks c and reads its key: a hostile or mistaken rule stops dlq-admin at start
// with the rule named, rather than leaving a field in clear.
func New(c Config) (*Masker, error) {
	m := &Masker{headers: map[string]bool{}}
	var errs []error
	if n := len(c.JSONPaths) + len(c.Headers) + len(c.Patterns); n > maxRules {
		errs = append(errs, fmt.Errorf("masking: %d rules, at most %d", n, maxRules))
	}
	for i, p := range c.JSONPaths {
		segs, err := parsePath(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("masking.json_paths[%d]: %w", i, err))
			continue
		}
		m.paths = append(m.paths, segs)
	}
	for i, h := range c.Headers {
		if !validHeaderName(h) {
			errs = append(errs, fmt.Errorf("masking.headers[%d]: %q is not a header name (1 to 249 characters, no control characters)", i, h))
			continue
		}
		m.headers[strings.ToLower(h)] = true
	}
	for i, p := range c.Patterns {
		re, err := compilePattern(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("masking.patterns[%d]: %w", i, err))
			continue
		}
		m.patterns = append(m.patterns, re)
	}
	switch {
	case c.HashKeyFile == "" && c.Enabled():
		errs = append(errs, errors.New("masking.hash_key_file: required with masking rules (a file of at least 32 random bytes)"))
	case c.HashKeyFile != "":
		key, err := os.ReadFile(c.HashKeyFile)
		key = bytes.TrimRight(key, "\r\n")
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("masking.hash_key_file: %w", err))
		case len(key) < minKeyBytes:
			errs = append(errs, fmt.Errorf("masking.hash_key_file: %d bytes, at least %d", len(key), minKeyBytes))
		}
		m.key = key
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}
