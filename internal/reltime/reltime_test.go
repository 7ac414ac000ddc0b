package reltime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/reltime"
)

func TestParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 1, 16, 16, 30, 0, time.FixedZone("CEST", 2*3600))
	midnight := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2024-04-30T10:00:00Z":        time.Date(2024, 4, 30, 10, 0, 0, 0, time.UTC),
		"2024-04-30T10:00:00.5+02:00": time.Date(2024, 4, 30, 8, 0, 0, 5e8, time.UTC),
		"-2h":                         now.Add(-2 * time.Hour),
		"-30m":                        now.Add(-30 * time.Minute),
		"-1h30m":                      now.Add(-90 * time.Minute),
		"-90s":                        now.Add(-90 * time.Second),
		"-7d":                         now.Add(-7 * 24 * time.Hour),
		" -2h ":                       now.Add(-2 * time.Hour),
		"now":                         now,
		"today":                       midnight,
		"Yesterday":                   midnight.Add(-24 * time.Hour),
	} {
		got, err := reltime.Parse(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%q: got %s, want %s", in, got, want)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "2h", "-", "-0s", "--2h", "-+2h", "-2x", "-d", "-1.5d", "-99999d",
		"-3000000h", "tomorrow", "2024-04-30", "2024-04-30 10:00:00", "yesterday 10:00"} {
		_, err := reltime.Parse(in, time.Now())
		require.ErrorIs(t, err, reltime.ErrSyntax, "%q", in)
	}
}
