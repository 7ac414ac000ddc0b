package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
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

// $1 bucket (hour or day), $2 from, $3 topics (NULL: every topic). The BRIN index on
// stored_at reads only the recent part of the table.
const sqlStoredOverTime = `SELECT date_trunc($1, stored_at, 'UTC'), count(*), count(*) FILTER (WHERE status = 'parked' AND NOT ` + leased + `)
	FROM dead_letters WHERE stored_at >= $2 AND ($3::text[] IS NULL OR original_topic = ANY($3))
	GROUP BY 1 ORDER BY 1`

// StoredOverTime counts the records stored since from per bucket (BucketHour or
// BucketDay, in UTC), oldest first, leaving out the buckets without any; with topics (a
// scoped token's), only the records of those original topics.
func (s *Records) StoredOverTime(ctx context.Context, bucket string, from time.Time, topics ...string) ([]StoredCount, error) {
	if bucket != BucketHour && bucket != BucketDay {
		return nil, &ValidationError{Field: "bucket", Reason: "must be hour or day"}
	}
	rows, err := s.pool.Query(ctx, sqlStoredOverTime, bucket, from, scope(topics))
	if err != nil {
		return nil, interpretError(err)
	}
	var out []StoredCount
	var c StoredCount
	_, err = pgx.ForEachRow(rows, []any{&c.Start, &c.Stored, &c.Parked}, func() error {
		c.Start = c.Start.UTC()
		out = append(out, c)
		return nil
	})
	return out, interpretError(err)
}
