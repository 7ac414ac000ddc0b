package store

import (
	"context"
	"time"
)

// ActiveJobs is what the operator jobs look like right now, for the worker's gauges.
type ActiveJobs struct {
	// Counts has one entry per kind and status (pending, running) that has jobs.
	Counts []JobCount
	// OldestPending is how long the oldest pending job has waited for a runner; 0 when none.
	OldestPending time.Duration
	// LongestStall is the longest time a running job's progress (done + failed + skipped)
	// has not moved, counted from its start before its first record; 0 when none runs.
	LongestStall time.Duration
}

// JobCount is how many jobs of one kind are in one status.
type JobCount struct {
	Kind   JobKind
	Status JobStatus
	Count  int64
}

const sqlJobGauges = `SELECT kind, status, count(*),
		extract(epoch FROM $1 - min(created_at))::float8,
		extract(epoch FROM $1 - min(coalesce(progressed_at, started_at, created_at)))::float8
	FROM jobs WHERE status IN ('pending', 'running') GROUP BY kind, status ORDER BY kind, status`

// ActiveJobs counts the pending and running jobs and measures the oldest wait and the
// longest stall, in one query over the partial index of unfinished jobs.
func (s *Jobs) ActiveJobs(ctx context.Context) (ActiveJobs, error) {
	var a ActiveJobs
	rows, err := s.pool.Query(ctx, sqlJobGauges, s.now())
	if err != nil {
		return a, interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c JobCount
		var waited, stalled float64
		if err := rows.Scan(&c.Kind, &c.Status, &c.Count, &waited, &stalled); err != nil {
			return a, interpretError(err)
		}
		a.Counts = append(a.Counts, c)
		switch c.Status {
		case JobPending:
			a.OldestPending = max(a.OldestPending, seconds(waited))
		case JobRunning:
			a.LongestStall = max(a.LongestStall, seconds(stalled))
		}
	}
	return a, interpretError(rows.Err())
}

func seconds(f float64) time.Duration {
	return max(0, time.Duration(f*float64(time.Second)))
}
