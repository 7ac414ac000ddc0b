package store

import (
	"context"
	"time"
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
	var out TopicSighting
	var replaced *string
	err := s.pool.QueryRow(ctx, sqlSightTopicID, topic, id, s.now()).Scan(&out.ID, &out.Since, &replaced)
	out.Replaced, out.Since = deref(replaced), out.Since.UTC()
	return out, interpretError(err)
}

// $1 topic, $2 id, $3 now.
const sqlSightTopicID = `INSERT INTO source_topic_ids AS t (topic, topic_id, seen_since) VALUES ($1, $2, $3)
	ON CONFLICT (topic) DO UPDATE SET
		replaced_id = CASE WHEN t.topic_id <> EXCLUDED.topic_id THEN t.topic_id ELSE t.replaced_id END,
		seen_since = CASE WHEN t.topic_id <> EXCLUDED.topic_id THEN EXCLUDED.seen_since ELSE t.seen_since END,
		topic_id = EXCLUDED.topic_id
	RETURNING topic_id, seen_since, replaced_id`
