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

// ActiveJobs counts the pending and running jobs and measures the oldest wait and the
// longest stall, in one query over the partial index of unfinished jobs.
func (s *Jobs) ActiveJobs(ctx context.Context) (ActiveJobs, error) {
	var a ActiveJobs
	rows, err := queries.JobGauges(ctx, s.pool, s.now())
	if err != nil {
		return a, interpretError(err)
	}
	for _, row := range rows {
		c := JobCount{Kind: JobKind(row.Kind), Status: JobStatus(row.Status), Count: row.Count}
		a.Counts = append(a.Counts, c)
		switch c.Status {
		case JobPending:
			a.OldestPending = max(a.OldestPending, seconds(row.WaitedSeconds))
		case JobRunning:
			a.LongestStall = max(a.LongestStall, seconds(row.StalledSeconds))
		}
	}
	return a, nil
}

func seconds(f float64) time.Duration {
	return max(0, time.Duration(f*float64(time.Second)))
}
