package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpandDays(t *testing.T) {
	for in, want := range map[string]string{
		"2y": "17520h", "90d": "2160h", "1y30d": "9480h", "1d12h": "24h12h", "-1d": "-24h",
		"720h": "720h", "1m": "1m", "": "", "d": "d", "2x": "2x", "1d-1h": "1d-1h",
	} {
		require.Equal(t, want, expandDays(in), in)
	}
}
