package api_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

// API4: each token's request rate is bounded (429 with Retry-After), independently of
// the others, and refills with time. The clock is the test's, so nothing depends on speed.
func TestAbuseRequestRatePerToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := setupWith(t, storetest.New(t), func(c *api.Config) {
		c.Clock = clock
		c.Limits = api.Limits{RequestsPerSecond: 0.5, Burst: 3}
	})
	for range 3 {
		require.Equal(t, http.StatusOK, b.do("GET", "/v1/stats", viewerToken, nil).status)
	}
	r := b.do("GET", "/v1/stats", viewerToken, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "urn:dlq:problem:too-many-requests", r.problem(t).Type)
	require.Equal(t, "2", r.header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/stats", operatorToken, nil).status, "another token has its own budget")

	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/stats", viewerToken, nil).status)
	require.Equal(t, http.StatusTooManyRequests, b.do("GET", "/v1/stats", viewerToken, nil).status)
}

// API4: a token has at most limits.max_concurrent requests in progress; the next one is
// 429 at once, other tokens are served.
func TestAbuseConcurrencyPerToken(t *testing.T) {
	t.Parallel()
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Limits = api.Limits{MaxConcurrent: 2} })
	ids := b.park("orders", 2)
	var wg sync.WaitGroup
	writers := make([]*io.PipeWriter, 2)
	for i := range writers {
		pr, pw := io.Pipe()
		writers[i] = pw
		t.Cleanup(func() { _ = pw.CloseWithError(io.ErrUnexpectedEOF) })
		wg.Go(func() {
			// Held in the handler while its body is still coming.
			b.do("POST", path("/v1/records/%d/discard", ids[i]), operatorToken, pr)
		})
	}
	require.Eventually(t, func() bool {
		return strings.Contains(string(b.do("GET", "/metrics", "", nil).body), "dlq_admin_requests_in_flight 2")
	}, 30*time.Second, 20*time.Millisecond)

	r := b.do("GET", "/v1/stats", operatorToken, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/stats", viewerToken, nil).status)

	for _, pw := range writers {
		_, _ = pw.Write([]byte(`{"reason":"held"}`))
		require.NoError(t, pw.Close())
	}
	wg.Wait()
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/stats", operatorToken, nil).status)
}

// API4/API6: a caller has at most limits.max_active_jobs pending or running jobs; a
// retried request (same Idempotency-Key) still gets its job; a finished one frees a place.
func TestAbuseActiveJobsPerCaller(t *testing.T) {
	t.Parallel()
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Limits = api.Limits{MaxActiveJobs: 2} })
	ids := b.park("orders", 4)
	var first api.Job
	r := b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, nil, "Idempotency-Key", "one")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	r.decode(t, &first)
	require.Equal(t, http.StatusAccepted, b.do("POST", path("/v1/records/%d/replay", ids[1]), operatorToken, nil).status)

	r = b.do("POST", path("/v1/records/%d/replay", ids[2]), operatorToken, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	n := int64(1)
	r = b.do("POST", "/v1/bulk/discard", adminToken, api.BulkRequest{IDs: []int64{ids[3]}, ConfirmCount: &n, Reason: "x"})
	require.Equal(t, http.StatusAccepted, r.status, "another caller has its own cap: %s", r.body)

	r = b.do("POST", path("/v1/records/%d/replay", ids[0]), operatorToken, nil, "Idempotency-Key", "one")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var again api.Job
	r.decode(t, &again)
	require.Equal(t, first.ID, again.ID)

	require.Equal(t, http.StatusOK, b.do("POST", path("/v1/jobs/%d/cancel", first.ID), operatorToken, nil).status)
	require.Equal(t, http.StatusAccepted, b.do("POST", path("/v1/records/%d/replay", ids[2]), operatorToken, nil).status)

	// Concurrent submissions cannot overshoot the cap.
	more := b.park("payments", 6)
	var wg sync.WaitGroup
	statuses := make([]int, len(more))
	for i, id := range more {
		wg.Go(func() { statuses[i] = b.do("POST", path("/v1/records/%d/replay", id), adminToken, nil).status })
	}
	wg.Wait()
	accepted := 0
	for _, s := range statuses {
		require.Contains(t, []int{http.StatusAccepted, http.StatusTooManyRequests}, s)
		if s == http.StatusAccepted {
			accepted++
		}
	}
	require.Equal(t, 1, accepted, "ada had one active job: %v", statuses)
}

// API4: a statement that runs past database.statement_timeout is cancelled by PostgreSQL
// and answers 503 with Retry-After instead of holding a connection. A lock held by the
// test makes the listing wait, so the timeout fires however fast the machine is.
func TestAbuseStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := storetest.NewWithURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	slow, err := store.Open(ctx, url+sep+"statement_timeout=200")
	require.NoError(t, err)
	t.Cleanup(slow.Close)
	b := setupWith(t, slow)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	r := b.do("GET", "/v1/records", viewerToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	require.Contains(t, r.problem(t).Detail, "statement timeout")
	_, err = strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, http.StatusOK, b.do("GET", "/v1/records", viewerToken, nil).status)
}

// API4: a caller refused for its rate cannot grow the audit log: a ten-second flood by one
// viewer (eight connections; the test's clock moves 10 ms at each reading, so the flood
// spans at least ten seconds of it) adds at most two rows per caller and window, and every refusal is accounted for: the first of a window
// in its own row, the rest in the count (affected) of the window's second row.
func TestAbuseRateLimitedRefusalsAreFolded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(10 * time.Millisecond); return now }
	b := setupWith(t, storetest.New(t), func(c *api.Config) { c.Clock = clock })
	const requests = 1000
	var wg sync.WaitGroup
	var refused, served sync.Map
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < requests; i += 8 {
				switch code := b.do("GET", "/v1/stats", viewerToken, nil).status; code {
				case http.StatusTooManyRequests:
					refused.Store(i, true)
				case http.StatusOK:
					served.Store(i, true)
				default:
					t.Errorf("status %d", code)
				}
			}
		})
	}
	wg.Wait()
	b.api.Close()
	var n429 int64
	refused.Range(func(any, any) bool { n429++; return true })
	require.Greater(t, n429, int64(requests/2), "the flood was refused")

	rows := auditRows(t, b.store)
	require.LessOrEqual(t, len(rows), 100, "the flood grew the audit log")
	var accounted int64
	for _, r := range rows {
		require.Equal(t, "rate_limited", r.Outcome, "%+v", r)
		require.Equal(t, "vera", r.Actor)
		if r.Affected == 0 {
			accounted++
			require.NotEmpty(t, r.RequestID, "the first refusal of a window names its request")
		} else {
			accounted += r.Affected
			require.Contains(t, r.Reason, "more refusals like the first")
		}
	}
	require.Equal(t, n429, accounted, "every refusal is in a row or a row's count: %+v", rows)
}

// API4: however many tokens send expensive scans at once, the requests never run more
// queries at once than limits.max_concurrent_total, below the pool's size, so the pool
// keeps connections for everyone else (the fairness of who goes next is
// TestFairGateServesTheLeastServedFirst).
func TestAbuseDatabaseCapAcrossTokens(t *testing.T) {
	t.Parallel()
	_, url := storetest.NewWithURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 6
	counter := &runningQueries{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	b := setupWith(t, st, func(c *api.Config) {
		c.Limits = api.Limits{RequestsPerSecond: 1e6, Burst: 1e6, MaxConcurrent: 4, MaxConcurrentTotal: 3}
	})
	ids := b.park("orders", 5000)
	counter.most.Store(0)

	var wg sync.WaitGroup
	for _, token := range []string{viewerToken, operatorToken, adminToken} {
		for range 3 {
			wg.Go(func() {
				for range 4 {
					r := b.do("GET", "/v1/records?limit=10&error_contains=no-such-text", token, nil)
					require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				}
			})
		}
	}
	for range 4 {
		require.Equal(t, http.StatusOK, b.do("GET", path("/v1/records/%d", ids[0]), scopedToken, nil).status)
	}
	wg.Wait()
	require.LessOrEqual(t, counter.most.Load(), int64(3), "more queries ran at once than limits.max_concurrent_total")
	require.Positive(t, counter.most.Load())
}

// runningQueries counts the queries running at once on a pool's connections, and the most.
type runningQueries struct{ now, most atomic.Int64 }

func (q *runningQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	n := q.now.Add(1)
	for m := q.most.Load(); n > m && !q.most.CompareAndSwap(m, n); m = q.most.Load() {
	}
	return ctx
}

func (q *runningQueries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {
	q.now.Add(-1)
}
