// Package version says which build a binary is, from the build information the Go
// toolchain embeds (module version, VCS revision and time, Go version), for `--version`.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// String is one line naming the binary's build, e.g.
// "dlq-worker (devel) commit 1a2b3c4d5e6f 2026-12-01T10:00:00Z modified, go1.26.8 linux/amd64".
func String(binary string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("%s (no build information), %s %s/%s", binary, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return describe(binary, info)
}

func describe(binary string, info *debug.BuildInfo) string {
	parts := []string{binary, info.Main.Version}
	if info.Main.Version == "" {
		parts[1] = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "commit", rev[:min(12, len(rev))])
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "modified")
		}
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	return fmt.Sprintf("%s, %s %s/%s", strings.Join(parts, " "), info.GoVersion, goos, goarch)
}
