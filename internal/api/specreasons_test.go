package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/store"
)

// Every place the spec enumerates reasons lists exactly the store's, so that a client
// generated from the spec knows each reason a record can carry.
func TestSpecEnumeratesEveryReason(t *testing.T) {
	doc := apitest.Spec(t)
	schemas := doc.Components.Schemas
	for name, enum := range map[string][]any{
		"Record.reason":       schemas["Record"].Value.Properties["reason"].Value.Enum,
		"Filter.reasons":      schemas["Filter"].Value.Properties["reasons"].Value.Items.Value.Enum,
		"Stats.counts.reason": schemas["Stats"].Value.Properties["counts"].Value.Items.Value.Properties["reason"].Value.Enum,
	} {
		want := make([]any, len(store.Reasons))
		for i, r := range store.Reasons {
			want[i] = string(r)
		}
		require.ElementsMatch(t, want, enum, name)
	}
}
