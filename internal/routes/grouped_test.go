package routes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGroupedRedriveValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"default":                  {func(*Config) {}, ""},
		"group topic":              {func(rc *Config) { rc.RedriveTo = RedriveToGroupTopic }, ""},
		"group header":             {func(rc *Config) { rc.RedriveTo = RedriveToGroupHeader }, ""},
		"unknown mode":             {func(rc *Config) { rc.RedriveTo = "group" }, `routes[r].redrive_to: must be "source", "group_topic" or "group_header", got "group"`},
		"own template":             {func(rc *Config) { rc.GroupTopicTemplate = "retry-{group}-{topic}" }, ""},
		"template without a group": {func(rc *Config) { rc.GroupTopicTemplate = "{topic}.redrive" }, "routes[r].group_topic_template: \"{topic}.redrive\" must contain {group}"},
		"template not a topic":     {func(rc *Config) { rc.GroupTopicTemplate = "{topic}/{group}" }, "routes[r].group_topic_template: \"{topic}/{group}\" does not make a topic name"},
		"metric groups":            {func(rc *Config) { rc.MetricGroups = []string{"svc-a", "svc-b"} }, ""},
		"a reserved metric group":  {func(rc *Config) { rc.MetricGroups = []string{"other"} }, "routes[r].metric_groups"},
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
}

func TestGroupedRedriveDefaults(t *testing.T) {
	rc := Config{Name: "r", Topics: []string{"orders.dlq"}}
	rc.WithDefaults()
	require.Equal(t, RedriveToSource, rc.RedriveTo)
	require.Equal(t, "orders.redrive.svc-a", GroupTopic(rc.GroupTopicTemplate, "orders", "svc-a"))
}

func TestMetricGroupNamesOnlyConfiguredGroups(t *testing.T) {
	rc := Config{MetricGroups: []string{"svc-a"}}
	require.Equal(t, "svc-a", rc.MetricGroup("svc-a"))
	require.Equal(t, MetricGroupOther, rc.MetricGroup("svc-b\n{evil}"))
	require.Equal(t, MetricGroupUnknown, rc.MetricGroup(""))
}
