package store

import (
	"context"
	"time"

	"github.com/dlqops/dlq/internal/store/dbsqlc"
)

// StoredCount is what entered the parking store in one hour or day.
type StoredCount struct {
	// Start is the bucket's start, in UTC.
	Start time.Time
	// Stored counts the records stored (parked or scheduled) in the bucket, by stored_at;
	// Parked those of them that are parked now.
	Stored, Parked int64
}

// Buckets of StoredOverTime.
const (
	BucketHour = "hour"
	BucketDay  = "day"
)

// StoredOverTime counts the records stored since from per bucket (BucketHour or
// BucketDay, in UTC), oldest first, leaving out the buckets without any; with topics (a
// scoped token's), only the records of those original topics.
func (s *Records) StoredOverTime(ctx context.Context, bucket string, from time.Time, topics ...string) ([]StoredCount, error) {
	if bucket != BucketHour && bucket != BucketDay {
		return nil, &ValidationError{Field: "bucket", Reason: "must be hour or day"}
	}
	rows, err := queries.StoredOverTime(ctx, s.pool, dbsqlc.StoredOverTimeParams{Bucket: bucket, Since: from, Topics: scope(topics)})
	if err != nil {
		return nil, interpretError(err)
	}
	var out []StoredCount
	for _, row := range rows {
		out = append(out, StoredCount{Start: row.Start.UTC(), Stored: row.Stored, Parked: row.Parked})
	}
	return out, nil
}
