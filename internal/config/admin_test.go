package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdminExampleLoads(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	var a Admin
	p := writeFile(t, "database:\n  url: postgres://x\n")
	require.ErrorContains(t, Load(p, "DLQ_ADMIN_", &a), "tokens: at least one")

	a = Admin{}
	t.Setenv("DLQ_ADMIN_DATABASE_URL", "postgres://x")
	require.NoError(t, Load("../../config/admin.example.yaml", "DLQ_ADMIN_", &a))
	require.Len(t, a.Tokens, 3)
	require.EqualValues(t, 1<<20, a.MaxBodyBytes)
}

func TestAdminRejects(t *testing.T) {
	const tok = "tokens:\n  - {name: a, role: admin, sha256: 1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd}\n"
	for name, tc := range map[string]struct{ file, want string }{
		"plain token":   {"tokens:\n  - {name: a, role: admin, sha256: hunter2}\n", "tokens[0].sha256"},
		"bad role":      {"tokens:\n  - {name: a, role: root, sha256: 1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd}\n", "tokens[0].role"},
		"bad topic":     {tok + "replay_topics: ['no spaces']\n", "replay_topics[0]"},
		"tiny body cap": {tok + "max_body_bytes: 10\n", "max_body_bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			var a Admin
			err := Load(writeFile(t, "database:\n  url: postgres://x\n"+tc.file), "DLQ_ADMIN_", &a)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
