package api

import (
	"fmt"
	"net/http"

	"github.com/dlqops/dlq/internal/delivery/rules"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
)

// probRefusedTarget: a selected record may not go where the replay would send it.
var probRefusedTarget = Problem{Type: typePrefix + "target-refused", Status: http.StatusUnprocessableEntity,
	Title: "Replay refused by the route's delivery rules"}

// checkDestinations refuses a replay up front when a record it selects may not go where
// it would be sent (its original topic, or the explicit target; a group's topic is left
// to the runner): the same decision the
// job runner makes when it produces (package rules), on the allowed_targets the runners
// published. A route no runner has published is left to the runner.
func (s *Server) checkDestinations(c *call, jr *store.JobRequest) error {
	if jr.Kind != store.JobReplay || jr.RedriveTo == routes.RedriveToGroupTopic && jr.TargetTopic == "" {
		// A group's topic is each record's own, known from its headers: the runner
		// checks it record by record.
		return nil
	}
	dests, err := s.cfg.Store.Destinations(c.r.Context(), jr.Filter, jr.RecordIDs)
	if err != nil {
		return err
	}
	for _, d := range dests {
		if !d.Published {
			continue
		}
		if _, refused := rules.New(routes.Config{AllowedTargets: d.AllowedTargets}).Target(d.OriginalTopic, jr.TargetTopic); refused != nil {
			p := probRefusedTarget.with(fmt.Sprintf("records of route %s from %q: %s", d.Route, d.OriginalTopic, refused))
			p.Field = "target_topic"
			return p
		}
	}
	return nil
}
