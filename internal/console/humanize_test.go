package console

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRelativeTimes(t *testing.T) {
	now := time.Date(2026, 3, 10, 16, 16, 0, 0, time.UTC)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-3 * time.Minute), "3 min ago"},
		{now.Add(-6*time.Minute - 30*time.Second), "7 min ago"},
		{now.Add(-89 * time.Minute), "89 min ago"},
		{now.Add(-2 * time.Hour), "2 h ago"},
		{now.Add(-35 * time.Hour), "35 h ago"},
		{now.Add(-3 * 24 * time.Hour), "3 days ago"},
		{now.Add(30 * time.Second), "just now"},
		{now.Add(5 * time.Minute), "in 5 min"},
		{now.Add(8 * 24 * time.Hour), "2026-03-18 16:16:00Z"},
		{now.Add(-8 * 24 * time.Hour), "2026-03-02 16:16:00Z"},
	} {
		require.Equal(t, c.want, relative(now, c.at), "%s before now", now.Sub(c.at))
	}
}

func TestTimeElementKeepsTheExactTime(t *testing.T) {
	now := time.Date(2026, 3, 10, 16, 16, 0, 0, time.UTC)
	when := timeElement(func() time.Time { return now })
	at := now.Add(-3 * time.Minute)
	require.Equal(t, `<time datetime="2026-03-10T16:13:00Z" title="2026-03-10 16:13:00Z">3 min ago</time>`, string(when(at)))
	require.Equal(t, `<time datetime="2026-03-10T16:13:00Z" title="2026-03-10 16:13:00Z">3 min ago</time>`, string(when(&at)))
	require.Equal(t, "—", string(when(time.Time{})))
	require.Equal(t, "—", string(when((*time.Time)(nil))))
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 11700: "11,700", 1234567: "1,234,567", -4321: "-4,321"} {
		require.Equal(t, want, thousands(n))
	}
	require.Equal(t, "11,700", thousands(11700))
	require.Equal(t, "11,700", thousands(int32(11700)))
}
