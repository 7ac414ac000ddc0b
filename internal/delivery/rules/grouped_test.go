package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

func grouped(mode string, allowed ...string) *Rules {
	rc := routes.Config{Name: "r", Topics: []string{"orders.dlq"}, RedriveTo: mode, AllowedTargets: allowed}
	rc.WithDefaults()
	return New(rc)
}

func TestRedriveToTheFailingGroup(t *testing.T) {
	for name, tc := range map[string]struct {
		rules         *Rules
		origin, group string
		want          Address
		reason        store.Reason
	}{
		"source: every group":                  {rules: grouped(routes.RedriveToSource), origin: "orders", group: "svc-a", want: Address{Topic: "orders"}},
		"source needs no group":                {rules: grouped(routes.RedriveToSource), origin: "orders", want: Address{Topic: "orders"}},
		"group topic":                          {rules: grouped(routes.RedriveToGroupTopic), origin: "orders", group: "svc-a", want: Address{Topic: "orders.redrive.svc-a"}},
		"group topic, group unknown":           {rules: grouped(routes.RedriveToGroupTopic), origin: "orders", reason: store.ReasonUnknownGroup},
		"group topic allowed by pattern":       {rules: grouped(routes.RedriveToGroupTopic, `^orders\.redrive\..*`), origin: "orders", group: "svc-a", want: Address{Topic: "orders.redrive.svc-a"}},
		"group topic not allowed":              {rules: grouped(routes.RedriveToGroupTopic, "orders"), origin: "orders", group: "svc-a", reason: store.ReasonTargetNotAllowed},
		"a group that makes no topic name":     {rules: grouped(routes.RedriveToGroupTopic), origin: "orders", group: "svc a/../x", reason: store.ReasonUnroutable},
		"group topic without an original":      {rules: grouped(routes.RedriveToGroupTopic), group: "svc-a", reason: store.ReasonUnroutable},
		"group header":                         {rules: grouped(routes.RedriveToGroupHeader), origin: "orders", group: "svc-a", want: Address{Topic: "orders", Group: "svc-a"}},
		"group header, group unknown":          {rules: grouped(routes.RedriveToGroupHeader), origin: "orders", reason: store.ReasonUnknownGroup},
		"group header, source not allowed":     {rules: grouped(routes.RedriveToGroupHeader, "payments"), origin: "orders", group: "svc-a", reason: store.ReasonTargetNotAllowed},
		"group header, any text is an address": {rules: grouped(routes.RedriveToGroupHeader), origin: "orders", group: "svc a", want: Address{Topic: "orders", Group: "svc a"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, refused := tc.rules.Redrive(tc.origin, tc.group)
			if tc.reason != "" {
				require.NotNil(t, refused)
				require.Equal(t, tc.reason, refused.Reason)
				require.Zero(t, got)
				return
			}
			require.Nil(t, refused)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestReplayOffersTheSameChoice(t *testing.T) {
	r := grouped(routes.RedriveToSource, "orders", "orders.redrive.svc-a", "orders.replay")
	for name, tc := range map[string]struct {
		explicit, mode string
		want           Address
		reason         store.Reason
	}{
		"default: the original topic":           {want: Address{Topic: "orders"}},
		"to the group's topic":                  {mode: routes.RedriveToGroupTopic, want: Address{Topic: "orders.redrive.svc-a"}},
		"addressed to the group":                {mode: routes.RedriveToGroupHeader, want: Address{Topic: "orders", Group: "svc-a"}},
		"an explicit topic addressed":           {explicit: "orders.replay", mode: routes.RedriveToGroupHeader, want: Address{Topic: "orders.replay", Group: "svc-a"}},
		"an explicit topic wins over the group": {explicit: "orders.replay", mode: routes.RedriveToGroupTopic, want: Address{Topic: "orders.replay"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, refused := r.Replay("orders", tc.explicit, "svc-a", tc.mode)
			require.Nil(t, refused)
			require.Equal(t, tc.want, got)
		})
	}
	_, refused := r.Replay("orders", "", "", routes.RedriveToGroupTopic)
	require.Equal(t, store.ReasonUnknownGroup, refused.Reason)
}
