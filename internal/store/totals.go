package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Total is how many rows a listing's filter selects: counted exactly up to ExactTotalBound,
// the planner's estimate past it (Estimate), so that a page never pays for counting a
// million rows to say "more than ten thousand".
type Total struct {
	Count    int64
	Estimate bool
}

// ExactTotalBound is the most rows a total counts one by one.
const ExactTotalBound = 10_000

// boundedTotal counts the rows of table that cond selects, up to ExactTotalBound; past it,
// the planner's row estimate for the same query, never less than the bound plus one.
func (d *db) boundedTotal(ctx context.Context, table, cond string, args []any) (Total, error) {
	var n int64
	err := d.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT %d) bounded`,
		table, cond, ExactTotalBound+1), args...).Scan(&n)
	if err != nil {
		return Total{}, interpretError(err)
	}
	if n <= ExactTotalBound {
		return Total{Count: n}, nil
	}
	var plan []byte
	err = d.pool.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) SELECT 1 FROM %s WHERE %s`, table, cond), args...).Scan(&plan)
	if err != nil {
		return Total{}, interpretError(err)
	}
	var explained []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &explained); err != nil || len(explained) != 1 {
		return Total{}, fmt.Errorf("store: reading the planner's estimate: %v", err)
	}
	return Total{Count: max(int64(explained[0].Plan.Rows), ExactTotalBound+1), Estimate: true}, nil
}

// Total is how many records f selects, for a listing's header (Count is the dry run's
// exact count).
func (s *Records) Total(ctx context.Context, f Filter) (Total, error) {
	cond, args := f.where(nil)
	return s.boundedTotal(ctx, "dead_letters", cond, args)
}

// AuditTotal is how many audit entries f selects.
func (s *AuditLog) AuditTotal(ctx context.Context, f AuditFilter) (Total, error) {
	cond, args := f.where(nil)
	return s.boundedTotal(ctx, "audit_log", cond, args)
}

// JobsTotal is how many jobs a token with topics sees (ListJobs's scope).
func (s *Jobs) JobsTotal(ctx context.Context, topics ...string) (Total, error) {
	return s.boundedTotal(ctx, "jobs", "($1::text[] IS NULL OR topics <@ $1)", []any{scope(topics)})
}
