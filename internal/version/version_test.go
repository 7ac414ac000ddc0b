package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "false"},
		}}, "dlq-worker v1.4.0 commit 0123456789ab 2026-12-01T10:00:00Z, go1.26.8 linux/arm64"},
		{"work tree with changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
		}}, "dlq-worker (devel) commit abc modified, go1.26.8 linux/amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, describe("dlq-worker", &tc.info))
		})
	}
}
