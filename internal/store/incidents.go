package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
	// Trend counts its records stored in each of the last TrendHours hours (UTC, oldest
	// first, the current hour last).
	Trend [TrendHours]int64
}

// TrendHours is how many hours an incident's trend covers.
const TrendHours = 24

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

// $1 the first hour, $2 the fingerprints, then the filter's parameters.
const sqlIncidentTrends = `SELECT fingerprint, route, floor(extract(epoch FROM stored_at - $1::timestamptz) / 3600)::int, count(*)
	FROM dead_letters WHERE fingerprint = ANY($2) AND stored_at >= $1 AND %s
	GROUP BY 1, 2, 3`

// Incidents returns up to limit incidents of the records f selects (parked and scheduled
// ones when f names no status), the largest first, each with its trend. Error class,
// template and original topic are one per fingerprint, which hashes them.
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
	incs, err := collect(rows, scanIncident)
	if err != nil || len(incs) == 0 {
		return incs, err
	}
	return incs, s.addTrends(ctx, f, incs)
}

// addTrends counts the records of incs stored in each of the last TrendHours hours.
func (s *Records) addTrends(ctx context.Context, f Filter, incs []Incident) error {
	first := s.now().UTC().Truncate(time.Hour).Add(-(TrendHours - 1) * time.Hour)
	fps := make([]string, len(incs))
	at := make(map[[2]string]*Incident, len(incs))
	for i := range incs {
		fps[i] = incs[i].Fingerprint
		at[[2]string{incs[i].Fingerprint, incs[i].Route}] = &incs[i]
	}
	cond, args := f.where([]any{first, fps})
	rows, err := s.pool.Query(ctx, fmt.Sprintf(sqlIncidentTrends, cond), args...)
	if err != nil {
		return interpretError(err)
	}
	var fp, route string
	var hour int
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&fp, &route, &hour, &n}, func() error {
		if in := at[[2]string{fp, route}]; in != nil && hour >= 0 && hour < TrendHours {
			in.Trend[hour] = n
		}
		return nil
	})
	return interpretError(err)
}

func scanIncident(row scanner) (Incident, error) {
	var in Incident
	err := row.Scan(&in.Fingerprint, &in.ErrorClass, &in.MessageTemplate, &in.OriginalTopic, &in.Route,
		&in.Parked, &in.Scheduled, &in.FirstSeen, &in.LastSeen, &in.SampleID)
	return in, err
}

// IncidentsTotal is how many incidents f selects (Incidents's records, every page): one
// per fingerprint and route, so the bounded count reads the grouped selection.
func (s *Records) IncidentsTotal(ctx context.Context, f Filter) (Total, error) {
	if len(f.Statuses) == 0 {
		f.Statuses = IncidentStatuses
	}
	cond, args := f.where(nil)
	return s.boundedTotal(ctx, "dead_letters", "fingerprint IS NOT NULL AND "+cond+" GROUP BY fingerprint, route", args)
}
