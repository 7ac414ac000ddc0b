package routes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestRouteValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"bad cron":          {func(rc *Config) { rc.Schedule = "every now and then" }, "routes[r].schedule"},
		"max retries 0":     {func(rc *Config) { rc.MaxRetries = ptr(0) }, "routes[r].max_retries"},
		"bad pattern":       {func(rc *Config) { rc.Topics = []string{"^orders(.dlq"} }, "routes[r].topics"},
		"bad topic":         {func(rc *Config) { rc.Topics = []string{"orders dlq"} }, "routes[r].topics"},
		"no topics":         {func(rc *Config) { rc.Topics = nil }, "routes[r].topics"},
		"bad factor":        {func(rc *Config) { rc.Backoff = &Backoff{Base: time.Second, Factor: 0.5} }, "routes[r].backoff: factor"},
		"negative rate":     {func(rc *Config) { rc.RateLimit = -1 }, "routes[r].rate_limit"},
		"bad allow-list":    {func(rc *Config) { rc.AllowedTargets = []string{"^(("} }, "routes[r].allowed_targets"},
		"seconds in cron":   {func(rc *Config) { rc.Schedule = "*/10 * * * * *" }, ""},
		"five fields":       {func(rc *Config) { rc.Schedule = "*/5 * * * *" }, ""},
		"bad jump action":   {func(rc *Config) { rc.OnOffsetJump = "ignore" }, "routes[r].on_offset_jump"},
		"step past seconds": {func(rc *Config) { rc.Schedule = "*/70 * * * * *" }, `routes[r].schedule: "*/70 * * * * *": seconds field "*/70": step 70 is larger than its range 0-59`},
		"step past hours":   {func(rc *Config) { rc.Schedule = "0 */24 * * *" }, `hours field "*/24"`},
		"step past a range": {func(rc *Config) { rc.Schedule = "0 10-20/11 * * *" }, `hours field "10-20/11"`},
		"largest step":      {func(rc *Config) { rc.Schedule = "*/59 * * * * *" }, ""},
		"step in a list":    {func(rc *Config) { rc.Schedule = "0,*/30 * * * *" }, ""},
		"named days":        {func(rc *Config) { rc.Schedule = "0 9 * * MON-FRI/2" }, ""},
		"with time zone":    {func(rc *Config) { rc.Schedule = "CRON_TZ=UTC */90 * * * *" }, "minutes field"},
		"alarm on jump":     {func(rc *Config) { rc.OnOffsetJump = OnJumpAlarm }, ""},
		"bad delivery":      {func(rc *Config) { rc.Delivery = "exactly-once" }, `routes[r].delivery: must be "at_least_once" or "exactly_once", got "exactly-once"`},
		"exactly once":      {func(rc *Config) { rc.Delivery = DeliveryExactlyOnce }, ""},
		"bad not-retryable": {func(rc *Config) { rc.NotRetryable = []string{"Timeout", "^(("} }, `routes[r].not_retryable: pattern "^(("`},
		"not-retryable":     {func(rc *Config) { rc.NotRetryable = []string{"Timeout", "^com\\.acme\\."} }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			rc := Config{Name: "r", Topics: []string{"orders.dlq"}}
			tc.mutate(&rc)
			rc.WithDefaults()
			err := rc.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	dup := []Config{{Name: "a", Topics: []string{"x"}}, {Name: "a", Topics: []string{"y"}}}
	for i := range dup {
		dup[i].WithDefaults()
	}
	require.ErrorContains(t, ValidateAll(dup), "routes[a].name: duplicate")
}

func TestBackoffYAML(t *testing.T) {
	var rc Config
	require.NoError(t, yaml.Unmarshal([]byte("name: r\ntopics: [a]\nbackoff: none\n"), &rc))
	require.True(t, rc.Backoff.None)
	rc = Config{}
	require.NoError(t, yaml.Unmarshal([]byte("name: r\ntopics: [a]\nbackoff: {base: 10s, factor: 3}\n"), &rc))
	rc.WithDefaults()
	require.Equal(t, Backoff{Base: 10 * time.Second, Factor: 3, Cap: time.Hour}, *rc.Backoff)
	rc = Config{}
	require.NoError(t, yaml.Unmarshal([]byte("name: r\ntopics: [a]\nbackoff: {base: 2h}\n"), &rc))
	rc.WithDefaults()
	require.Equal(t, Backoff{Base: 2 * time.Hour, Factor: 2, Cap: 2 * time.Hour}, *rc.Backoff, "factor 2, cap the larger of 1 h and base, no jitter")
	rc = Config{}
	require.NoError(t, yaml.Unmarshal([]byte("name: r\ntopics: [a]\n"), &rc))
	rc.WithDefaults()
	require.Equal(t, Backoff{Base: 30 * time.Second, Factor: 2, Cap: time.Hour, Jitter: 0.2}, *rc.Backoff, "the documented default")
	require.Error(t, yaml.Unmarshal([]byte("backoff: sometimes\n"), &rc))
}

func ptr[T any](v T) *T { return &v }
