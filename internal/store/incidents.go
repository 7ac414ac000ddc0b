package store

import (
	"context"
	"fmt"
	"time"
)

// Incident is the records that failed for one cause (one fingerprint) in one route.
type Incident struct {
	Fingerprint     string
	ErrorClass      string
	MessageTemplate string
	// OriginalTopic is "" when the records did not say where they came from.
	OriginalTopic string
	Route         string
	Parked        int64
	Scheduled     int64
	// FirstSeen and LastSeen are when the oldest and newest of its records were stored.
	FirstSeen, LastSeen time.Time
	// SampleID is its newest record.
	SampleID int64
}

// IncidentStatuses are what an incident counts when the filter names no status: the
// records that wait, on a human or on time.
var IncidentStatuses = []Status{StatusParked, StatusScheduled}

// $1 limit, then the filter's parameters. Records stored before fingerprints existed
// have none and are no incident.
const sqlIncidents = `SELECT fingerprint, min(error_class), min(message_template),
		coalesce(min(original_topic), ''), route,
		count(*) FILTER (WHERE status = 'parked'), count(*) FILTER (WHERE status = 'scheduled'),
		min(stored_at), max(stored_at), max(id)
	FROM dead_letters WHERE fingerprint IS NOT NULL AND %s
	GROUP BY fingerprint, route ORDER BY count(*) DESC, fingerprint, route LIMIT $1`

// Incidents returns up to limit incidents of the records f selects (parked and scheduled
// ones when f names no status), the largest first. Error class, template and original
// topic are one per fingerprint, which hashes them.
func (s *Records) Incidents(ctx context.Context, f Filter, limit int) ([]Incident, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if len(f.Statuses) == 0 {
		f.Statuses = IncidentStatuses
	}
	cond, args := f.where([]any{limit})
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlIncidents, cond), args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return collect(rows, scanIncident)
}

func scanIncident(row scanner) (Incident, error) {
	var in Incident
	err := row.Scan(&in.Fingerprint, &in.ErrorClass, &in.MessageTemplate, &in.OriginalTopic, &in.Route,
		&in.Parked, &in.Scheduled, &in.FirstSeen, &in.LastSeen, &in.SampleID)
	return in, err
}
