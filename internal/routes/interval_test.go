package routes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInterval(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 17, 3, 0, time.UTC) // a Tuesday
	for schedule, want := range map[string]time.Duration{
		"@every 1m":       time.Minute,
		"*/30 * * * * *":  30 * time.Second,
		"* * * * * *":     time.Second,
		"0 */15 * * * *":  15 * time.Minute,
		"@hourly":         time.Hour,
		"0 9 * * 1-5":     3 * 24 * time.Hour, // Friday 09:00 to Monday 09:00
		"0 0 3 * * *":     24 * time.Hour,
		"0 30 2 * * 0":    7 * 24 * time.Hour,
		"@every 1h30m10s": time.Hour + 30*time.Minute + 10*time.Second,
	} {
		got, err := Interval(schedule, now)
		require.NoError(t, err, schedule)
		require.Equal(t, want, got, schedule)
	}
	_, err := Interval("not cron", now)
	require.Error(t, err)
}
