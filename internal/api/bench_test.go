package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

// BenchmarkListEndpoint: GET /v1/records (a page of 50, authenticated, JSON) out of
// DLQ_BENCH_ROWS (default 1,000,000) rows, the first page and a filtered one, against the
// same keyset SELECT issued raw with pgx. Reports p50/p99 latency.
func BenchmarkListEndpoint(b *testing.B) {
	ctx := context.Background()
	rows := testenv.BenchSize(b, "DLQ_BENCH_ROWS", 1_000_000, 10_000)
	st, url := storetest.NewWithURL(b)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	start := time.Now()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO dead_letters (dlq_topic, dlq_partition, dlq_offset,
		original_topic, original_partition, original_offset, original_timestamp, record_timestamp, key, value,
		header_keys, header_values, retry_count, error_class, error_message, reason, status, route,
		stored_at, changed_at, changed_by)
		SELECT 'dlq.bench', g %% 12, g, 'orders-' || g %% 10, g %% 12, g, now(), now(), convert_to('key-' || g, 'UTF8'),
			decode(repeat('ab', 200), 'hex'), ARRAY['retryCount'::bytea], ARRAY['5'::bytea],
			5, 'java.io.IOException', 'downstream unavailable', 'exhausted',
			CASE WHEN g %% 20 = 0 THEN 'discarded' ELSE 'parked' END, 'route-' || g %% 3, now(), now(), 'bench'
		FROM generate_series(1, %d) g`, rows)); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE dead_letters"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d rows in %s", rows, time.Since(start).Round(time.Millisecond))
	srv := setupBench(b, st)

	const limit = 50
	// The raw query is the store's listing: every column, keyset on id, the filter's
	// conditions as bind parameters, one row more than the page to know if another follows.
	const cols = `id, dlq_topic, dlq_partition, dlq_offset, original_topic, original_partition, original_offset,
		original_timestamp, record_timestamp, key, value, header_keys, header_values, retry_count, error_class,
		error_message, reason, status, route, due_at, lease_owner, lease_until, target_topic, produced_partition,
		produced_offset, replay_id, job_id, stored_at, changed_at, changed_by`
	for _, c := range []struct {
		name, query, sql string
		args             []any
	}{
		{"first", "", `SELECT ` + cols + ` FROM dead_letters WHERE id < $1 ORDER BY id DESC LIMIT $2`,
			[]any{int64(1<<63 - 1), limit + 1}},
		{"filtered", "&original_topic=orders-3&status=parked",
			`SELECT ` + cols + ` FROM dead_letters WHERE id < $1 AND status = ANY($3) AND original_topic = $4 ORDER BY id DESC LIMIT $2`,
			[]any{int64(1<<63 - 1), limit + 1, []string{"parked"}, "orders-3"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.Run("raw", func(b *testing.B) {
				benchLatency(b, func() {
					r, err := pool.Query(ctx, c.sql, c.args...)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for r.Next() {
						if _, err := r.Values(); err != nil {
							b.Fatal(err)
						}
						n++
					}
					if r.Err() != nil || n != limit+1 {
						b.Fatal(r.Err(), n)
					}
				})
			})
			b.Run("ours", func(b *testing.B) {
				req, err := http.NewRequest("GET", srv+"/v1/records?limit="+strconv.Itoa(limit)+c.query, nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+viewerToken)
				benchLatency(b, func() {
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Fatal(err, resp.StatusCode)
					}
				})
			})
		})
	}
}

// benchLatency runs op b.N times and reports its median and 99th percentile latency.
func benchLatency(b *testing.B, op func()) {
	var lat []time.Duration
	for b.Loop() {
		t := time.Now()
		op()
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
