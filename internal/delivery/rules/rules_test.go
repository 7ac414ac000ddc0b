package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

func TestTarget(t *testing.T) {
	open := New(routes.Config{})
	strict := New(routes.Config{AllowedTargets: []string{"orders", `^payments\..*`}})
	for name, tc := range map[string]struct {
		rules            *Rules
		origin, explicit string
		want             string
		reason           store.Reason
	}{
		"original":                                   {rules: open, origin: "orders", want: "orders"},
		"explicit":                                   {rules: open, origin: "orders", explicit: "orders.retry", want: "orders.retry"},
		"no topic at all":                            {rules: open, reason: store.ReasonUnroutable},
		"explicit without original":                  {rules: open, explicit: "orders", want: "orders"},
		"original allowed":                           {rules: strict, origin: "orders", want: "orders"},
		"original by pattern":                        {rules: strict, origin: "payments.eu", want: "payments.eu"},
		"original forbidden":                         {rules: strict, origin: "audit", reason: store.ReasonTargetNotAllowed},
		"names match exactly":                        {rules: strict, origin: "orders2", reason: store.ReasonTargetNotAllowed},
		"forbidden leaves by an allowed target":      {rules: strict, origin: "audit", explicit: "orders", want: "orders"},
		"explicit forbidden":                         {rules: strict, origin: "orders", explicit: "audit", reason: store.ReasonTargetNotAllowed},
		"original not a topic name":                  {rules: open, origin: `"orders\xff"`, reason: store.ReasonUnroutable},
		"original not a topic name, even if allowed": {rules: New(routes.Config{AllowedTargets: []string{`^.*`}}), origin: "a/b", reason: store.ReasonUnroutable},
		"an illegal original leaves by a target":     {rules: open, origin: `"orders\xff"`, explicit: "orders", want: "orders"},
	} {
		t.Run(name, func(t *testing.T) {
			got, refused := tc.rules.Target(tc.origin, tc.explicit)
			if tc.reason != "" {
				require.NotNil(t, refused)
				require.Equal(t, tc.reason, refused.Reason)
				require.Empty(t, got)
				return
			}
			require.Nil(t, refused)
			require.Equal(t, tc.want, got)
		})
	}
}
