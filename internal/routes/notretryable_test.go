package routes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorMatcher(t *testing.T) {
	m, err := CompileErrorMatcher([]string{
		"SerializationException",
		"com.acme.ValidationException",
		"^org\\.springframework\\.messaging\\.converter\\.",
		"validation",
		"SyntaxError",
	})
	require.NoError(t, err)
	for class, want := range map[string]bool{
		"org.apache.kafka.common.errors.SerializationException":                true,  // simple name
		"SerializationException":                                               true,  // exact
		"com.acme.ValidationException":                                         true,  // full class
		"org.other.ValidationException":                                        false, // a full class names one package
		"com.acme.Outer$ValidationException":                                   false,
		"org.springframework.messaging.converter.MessageConversionException":   true, // ^regex
		"x.org.springframework.messaging.converter.MessageConversionException": false,
		"validation":        true, // an ErrorClasser's own class
		"validations":       false,
		"*json.SyntaxError": true, // a Go type
		"*fmt.wrapError":    false,
		"org.apache.kafka.common.errors.TimeoutException": false,
		"":                                      false,
		"com.acme.Outer$SerializationException": true,
	} {
		require.Equal(t, want, m.Matches(class), class)
	}

	none, err := CompileErrorMatcher(nil)
	require.NoError(t, err)
	require.False(t, none.Matches("SerializationException"))

	_, err = CompileErrorMatcher([]string{"^(("})
	require.ErrorContains(t, err, `pattern "^(("`)
	_, err = CompileErrorMatcher([]string{" "})
	require.ErrorContains(t, err, "empty entry")
}
