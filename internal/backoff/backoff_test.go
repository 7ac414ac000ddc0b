package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDelay(t *testing.T) {
	p := Policy{Base: time.Second, Factor: 2, Cap: time.Minute, Jitter: 0.5}
	for name, tc := range map[string]struct {
		p     Policy
		retry int
		u     float64
		want  time.Duration
	}{
		"none":                {p: Policy{}, retry: 3, u: 0.9, want: 0},
		"first, no jitter":    {p: p, retry: 0, u: 0.5, want: time.Second},
		"third, no jitter":    {p: p, retry: 3, u: 0.5, want: 8 * time.Second},
		"jitter low end":      {p: p, retry: 3, u: 0, want: 4 * time.Second},
		"jitter upper half":   {p: p, retry: 3, u: 0.75, want: 10 * time.Second},
		"capped":              {p: p, retry: 10, u: 0.5, want: time.Minute},
		"capped after jitter": {p: p, retry: 10, u: 0.99, want: time.Minute},
		"jitter under cap":    {p: p, retry: 10, u: 0, want: 30 * time.Second},
		"huge retry count":    {p: p, retry: 1 << 30, u: 0.5, want: time.Minute},
		"factor one":          {p: Policy{Base: time.Second, Factor: 1, Cap: time.Hour}, retry: 7, u: 0.5, want: time.Second},
		"negative attempt":    {p: p, retry: -1, u: 0.5, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.p.Delay(tc.retry, tc.u))
		})
	}
}

func TestDue(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := Policy{Base: time.Minute, Factor: 3, Cap: time.Hour}
	require.Equal(t, at.Add(9*time.Minute), p.Due(at, 2, 0.5))
	require.Equal(t, at, Policy{}.Due(at, 2, 0.5))
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		p    Policy
		want string
	}{
		"none":         {p: Policy{}},
		"ok":           {p: Policy{Base: time.Second, Factor: 2, Cap: time.Minute, Jitter: 0.2}},
		"factor below": {p: Policy{Base: time.Second, Factor: 0.5, Cap: time.Minute}, want: "factor"},
		"cap below":    {p: Policy{Base: time.Minute, Factor: 2, Cap: time.Second}, want: "cap"},
		"jitter above": {p: Policy{Base: time.Second, Factor: 2, Cap: time.Minute, Jitter: 1.5}, want: "jitter"},
		"negative":     {p: Policy{Base: -time.Second, Factor: 2, Cap: time.Minute}, want: "base"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
