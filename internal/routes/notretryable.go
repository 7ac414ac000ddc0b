package routes

import (
	"fmt"
	"regexp"
	"strings"
)

// ErrorMatcher is a route's not_retryable list compiled: it says whether a dead letter's
// error class names a failure that no redrive can cure (a record that cannot be
// deserialized, a payload that fails validation), so the record is parked at first sight
// instead of loading its service max_retries more times.
type ErrorMatcher struct {
	names    map[string]bool
	patterns []*regexp.Regexp
}

// CompileErrorMatcher compiles entries: a "^regex" matches the full error class; any
// other entry matches a class equal to it or whose simple name is it, so that
// "SerializationException" matches "org.apache.kafka.common.errors.SerializationException"
// and "SyntaxError" matches the Go class "*json.SyntaxError". An empty list matches nothing.
func CompileErrorMatcher(entries []string) (*ErrorMatcher, error) {
	m := &ErrorMatcher{names: map[string]bool{}}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e, "^"):
			re, err := regexp.Compile(e)
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %v", e, err)
			}
			m.patterns = append(m.patterns, re)
		case strings.TrimSpace(e) == "":
			return nil, fmt.Errorf("an empty entry matches no error class")
		default:
			m.names[e] = true
		}
	}
	return m, nil
}

// Matches reports whether class, a dead letter's error class, is not retryable.
func (m *ErrorMatcher) Matches(class string) bool {
	if class == "" || m == nil {
		return false
	}
	if m.names[class] || m.names[simpleName(class)] {
		return true
	}
	for _, re := range m.patterns {
		if re.MatchString(class) {
			return true
		}
	}
	return false
}

// simpleName is a class without its package: the text after the last '.' or '$' (a Java
// nested class), or a Go type's name without its pointer star and package.
func simpleName(class string) string {
	return class[strings.LastIndexAny(class, ".$*")+1:]
}
