package masking

import (
	"fmt"
	"regexp"
)

// inContext finds a placeholder as a JSON string or as text.
var inContext = regexp.MustCompile(`"\[masked:[0-9a-f]{16}\]"|\[masked:[0-9a-f]{16}\]`)

// UnknownPlaceholderError: an edit holds a placeholder that stands for none of the record's
// masked values (copied from another record, or mistyped). Sent as it is, it would replace
// a field by the placeholder's text.
type UnknownPlaceholderError struct{ Placeholder string }

func (e *UnknownPlaceholderError) Error() string {
	return fmt.Sprintf("%s stands for none of this record's masked values: keep the record's placeholders as shown, "+
		"or write the value in full", e.Placeholder)
}

// Apply puts the clear values back into b, a value or header value written on the masked
// view, in one pass: a clear value that happens to read like a placeholder is left alone.
func (r Restore) Apply(b []byte) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	var unknown error
	out := inContext.ReplaceAllFunc(b, func(p []byte) []byte {
		if clear, ok := r[string(p)]; ok {
			return clear
		}
		inner := p
		if p[0] == '"' {
			inner = p[1 : len(p)-1]
		}
		if clear, ok := r[string(inner)]; ok {
			if p[0] == '"' {
				return append(append([]byte{'"'}, clear...), '"')
			}
			return clear
		}
		if unknown == nil {
			unknown = &UnknownPlaceholderError{Placeholder: string(inner)}
		}
		return p
	})
	return out, unknown
}
