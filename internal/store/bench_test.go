package store_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
)

// Each benchmark runs our store and a raw pgx baseline doing the same work in the same run,
// as sub-benchmarks "ours" and "raw" of one parent, each reporting rec/s.

const parkBatch = 500

// BenchmarkPark: storing batches of 500 parked 1 KiB records through the store (direct
// COPY, constraints, indexes) against a raw COPY of the same rows into a bare table.
func BenchmarkPark(b *testing.B) {
	benchPark(b, false)
}

// BenchmarkParkWithLedger is BenchmarkPark with a ledger row in the same transaction, as the
// redrive worker stores: ours is StoreBatch with a ledger entry, raw is BEGIN, COPY, INSERT,
// COMMIT.
func BenchmarkParkWithLedger(b *testing.B) {
	benchPark(b, true)
}

func benchPark(b *testing.B, withLedger bool) {
	ctx := context.Background()
	recs := parked("dlq.bench", 0, parkBatch)
	for i := range recs {
		recs[i].Value = bytes.Repeat([]byte{byte(i)}, 1024)
	}
	// next moves the batch to the following offsets and returns its ledger entry.
	next := func(runID int64) *store.LedgerEntry {
		for i := range recs {
			recs[i].DLQ.Offset += parkBatch
		}
		if !withLedger {
			return nil
		}
		from := recs[0].DLQ.Offset
		return &store.LedgerEntry{RunID: runID, Topic: "dlq.bench", From: from, To: from + parkBatch, Parked: parkBatch}
	}

	b.Run("raw", func(b *testing.B) {
		s, url := storetest.NewWithURL(b)
		run, err := s.BeginRun(ctx, "bench", "raw")
		if err != nil {
			b.Fatal(err)
		}
		pool := openPool(b, url)
		if _, err := pool.Exec(ctx, `CREATE TABLE bare AS SELECT `+insertColumnList()+` FROM dead_letters WITH NO DATA`); err != nil {
			b.Fatal(err)
		}
		benchRecords(b, parkBatch, func() {
			ledger, now := next(run.ID), time.Now()
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bare"}, store.InsertColumns,
					pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) { return store.InsertRow(&recs[i], now), nil })); err != nil {
					return err
				}
				if ledger == nil {
					return nil
				}
				_, err := tx.Exec(ctx, `INSERT INTO run_ledger (run_id, dlq_topic, dlq_partition, from_offset, to_offset,
					redriven, scheduled, parked, skipped, errors, recorded_at) VALUES ($1, $2, 0, $3, $4, 0, 0, $5, 0, 0, $6)`,
					ledger.RunID, ledger.Topic, ledger.From, ledger.To, ledger.Parked, now)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("ours", func(b *testing.B) {
		s := storetest.New(b)
		run, err := s.BeginRun(ctx, "bench", "ours")
		if err != nil {
			b.Fatal(err)
		}
		benchRecords(b, parkBatch, func() {
			res, err := s.StoreBatch(ctx, recs, next(run.ID))
			if err != nil || res.New != parkBatch {
				b.Fatal(err, res.New)
			}
		})
	})
}

// BenchmarkList: a page of 50 records out of DLQ_BENCH_ROWS (default 1,000,000), the first
// page and a deep one under a filter, against the same indexed SELECT issued raw.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	rows := testenv.BenchSize(b, "DLQ_BENCH_ROWS", 1_000_000, 10_000)
	s, url := storetest.NewWithURL(b)
	pool := openPool(b, url)
	start := time.Now()
	seedList(b, pool, rows)
	b.Logf("seeded %d rows in %s", rows, time.Since(start).Round(time.Millisecond))

	const limit = 50
	filter := store.Filter{OriginalTopic: "orders-3", Statuses: []store.Status{store.StatusParked}}
	// The deep cursor sits 5% from the oldest end of the filtered rows.
	var deepID int64
	if err := pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE original_topic = 'orders-3' AND status = 'parked'
		ORDER BY id LIMIT 1 OFFSET $1`, rows/200).Scan(&deepID); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name   string
		filter store.Filter
		before int64
	}{
		{"first", store.Filter{}, 1<<63 - 1},
		{"deep-filtered", filter, deepID},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cond, args := "true", []any{c.before, limit}
			if c.filter.OriginalTopic != "" {
				cond, args = "status = $3 AND original_topic = $4", append(args, "parked", c.filter.OriginalTopic)
			}
			query := fmt.Sprintf(store.SQLListRecords, cond)
			b.Run("raw", func(b *testing.B) {
				benchLatency(b, limit, func() {
					r, err := pool.Query(ctx, query, args...)
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
					if r.Err() != nil || n != limit {
						b.Fatal(r.Err(), n)
					}
				})
			})
			b.Run("ours", func(b *testing.B) {
				cursor := ""
				if c.before < 1<<63-1 {
					cursor = store.EncodeCursor(c.before)
				}
				benchLatency(b, limit, func() {
					page, err := s.List(ctx, c.filter, cursor, limit)
					if err != nil || len(page.Records) != limit {
						b.Fatal(err, len(page.Records))
					}
				})
			})
		})
	}
}

// seedList fills dead_letters server-side, which beats any client COPY: the secondary
// indexes are dropped during the load and rebuilt after it from their own definitions.
func seedList(b *testing.B, pool *pgxpool.Pool, rows int) {
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	r, err := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'dead_letters'
		AND indexname NOT IN (SELECT conname FROM pg_constraint)`)
	if err != nil {
		b.Fatal(err)
	}
	var names, defs []string
	var name, def string
	if _, err := pgx.ForEachRow(r, []any{&name, &def}, func() error {
		names, defs = append(names, name), append(defs, def)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	stmts := []string{"SET synchronous_commit = off", "SET maintenance_work_mem = '256MB'"}
	for _, n := range names {
		stmts = append(stmts, "DROP INDEX "+pgx.Identifier{n}.Sanitize())
	}
	stmts = append(stmts, fmt.Sprintf(`INSERT INTO dead_letters (`+insertColumnList()+`)
		SELECT 'dlq.bench', g %% 12, g, 'orders-' || g %% 10, g %% 12, g, now(), now(),
			convert_to('key-' || g, 'UTF8'), decode(repeat('ab', 200), 'hex'),
			ARRAY['retryCount'::bytea, 'traceparent'::bytea], ARRAY['5'::bytea, NULL],
			5, 'java.io.IOException', 'downstream unavailable ' || g,
			(ARRAY['exhausted', 'unroutable', 'too_large', 'unknown_topic'])[1 + g %% 4],
			CASE WHEN g %% 20 = 0 THEN 'scheduled' ELSE 'parked' END, 'route-' || g %% 3,
			CASE WHEN g %% 20 = 0 THEN now() END, now(), now(), 'bench'
		FROM generate_series(1, %d) g`, rows))
	stmts = append(stmts, defs...)
	stmts = append(stmts, "ANALYZE dead_letters")
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

func insertColumnList() string {
	return strings.Join(store.InsertColumns, ", ")
}

func openPool(b *testing.B, url string) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// benchRecords runs op b.N times and reports records per second, op handling perOp records.
func benchRecords(b *testing.B, perOp int, op func()) {
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "rec/s")
}

// benchLatency is benchRecords that also reports the median and 99th percentile latency.
func benchLatency(b *testing.B, perOp int, op func()) {
	var lat []time.Duration
	for b.Loop() {
		t := time.Now()
		op()
		lat = append(lat, time.Since(t))
	}
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "rec/s")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
