package api

import (
	"github.com/dlqops/dlq/internal/routes"
)

// replayRedriveTo is the job's redrive_to for a replay request's: "" (the original or
// target topic) for none or source, else the group mode.
func replayRedriveTo(mode ReplayRedriveTo) (string, error) {
	switch {
	case mode == "" || mode == ReplayRedriveTo(routes.RedriveToSource):
		return "", nil
	case !mode.Valid():
		return "", badParam("redrive_to", "must be %q, %q or %q", routes.RedriveToSource, routes.RedriveToGroupTopic, routes.RedriveToGroupHeader)
	}
	return string(mode), nil
}
