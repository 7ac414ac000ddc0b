package store

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// TopicSighting is what workers saw of a source topic's id (see SightTopicID).
type TopicSighting struct {
	ID string
	// Since is when a worker first saw ID: the topic existed under it no earlier.
	Since time.Time
	// Replaced is the id seen before ID ("" when none): the topic was re-created.
	Replaced string
}

// SightTopicID records that a worker saw topic under id now, and returns what is known of
// the topic since: a first sighting, or the same id as before (kept as it was), or a new
// id (the topic was re-created: the old id becomes Replaced and Since is now).
func (s *Runs) SightTopicID(ctx context.Context, topic, id string) (TopicSighting, error) {
	row, err := queries.SightTopicID(ctx, s.pool, dbsqlc.SightTopicIDParams{Topic: topic, TopicID: id, Now: s.now()})
	return TopicSighting{ID: row.TopicID, Since: row.SeenSince.UTC(), Replaced: deref(row.ReplacedID)}, interpretError(err)
}
