package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/store"
)

// Route controls, retry-now, runs and the audit log from the CLI, against a live server;
// the tables print readable values.
func TestCLIOperate(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	require.NoError(t, s.store.RegisterRoutes(ctx, []string{"orders", "payments"}, "worker-1"))

	out, err := s.cli(t, "pause", "orders")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^orders\s+paused\s+-\s+ada\s+\d{4}-`, out)
	out, err = s.cli(t, "run", "payments")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^payments\s+active\s+\d{4}-\S+\s+ada\s`, out, "the run request's time")
	require.NoError(t, s.store.SetNextRun(ctx, "payments", "@every 1m", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	out, err = s.cli(t, "routes")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^orders\s+paused\s.*\s-$`, out, "no next run reported")
	require.Regexp(t, `(?m)^payments\s+active\s.*\s2027-01-01T00:00:00Z$`, out, "the next run a worker reported")
	require.Regexp(t, `(?m)^payments\s+active\s`, out)
	out, err = s.cli(t, "resume", "orders")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^orders\s+active\s`, out)
	_, err = s.cli(t, "pause", "nosuchroute")
	require.ErrorContains(t, err, "404")

	// A scheduled record without an error class, due in an hour, made due now.
	due := time.Now().Add(time.Hour).UTC()
	_, err = s.store.StoreBatch(ctx, []store.NewRecord{{
		DLQ: store.Coordinates{Topic: "orders.dlq", Offset: 7}, Origin: store.Origin{Topic: "orders", Partition: -1, Offset: -1},
		Value: []byte("v"), Timestamp: time.Now(), RetryCount: 1, ErrorMessage: "timed out",
		Reason: store.ReasonBackoff, Status: store.StatusScheduled, DueAt: due, Route: "orders",
	}}, nil)
	require.NoError(t, err)
	out, err = s.cli(t, "list")
	require.NoError(t, err)
	require.Contains(t, out, "  timed out  ")
	require.NotContains(t, out, ": timed out", "no leading ': ' without an error class")
	out, err = s.cli(t, "show", "1")
	require.NoError(t, err)
	for _, want := range []string{
		`(?m)^status\s+scheduled \(backoff\)$`, `(?m)^error\s+timed out$`, `(?m)^route\s+orders$`,
		`(?m)^due\s+` + regexp.QuoteMeta(due.Format(time.RFC3339)) + `$`, `(?m)^stored\s+\d{4}-`, `(?m)^timestamp\s+\d{4}-`,
		`(?m)^changed\s+\d{4}-\S+ by \S+$`,
	} {
		require.Regexp(t, want, out)
	}
	require.NotContains(t, out, "map[", "no Go map syntax")
	out, err = s.cli(t, "retry-now", "1")
	require.NoError(t, err)
	require.Regexp(t, `^record 1 scheduled, due \d{4}-\S+, changed by ada\n$`, out)
	rec, err := s.store.Get(ctx, 1)
	require.NoError(t, err)
	require.True(t, rec.DueAt.Before(due), "retry-now moved the due time")

	// A run with its ledger.
	run, err := s.store.BeginRun(ctx, "orders", "worker-1")
	require.NoError(t, err)
	require.NoError(t, s.store.RecordLedger(ctx, store.LedgerEntry{RunID: run.ID, Topic: "orders.dlq", Partition: 2,
		From: 100, To: 150, Redriven: 40, Scheduled: 6, Parked: 4}))
	require.NoError(t, s.store.EndRun(ctx, store.RunEnd{ID: run.ID, Status: store.RunSucceeded}))
	out, err = s.cli(t, "runs", "--route", "orders")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^\d+\s+orders\s+succeeded\s+\d{4}-\S+\s+\d{4}-\S+\s+orders\.dlq/2\s+100-150\s+40\s+6\s+4\s+0\s+0$`, out)

	out, err = s.cli(t, "audit")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^\d+\s+\d{4}-\S+\s+ada\s+retry_now\s+\S+\s+record 1\s+1\s`, out)
	require.Regexp(t, `(?m)\s+ada\s+pause\S*\s+\S+\s+route orders\s`, out)
	out, err = s.cli(t, "audit", "--record", "1")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^\d+\s+\d{4}-\S+\s+ada\s+retry_now\s+\S+\s+record 1\s+1\s`, out, "the record's history")
	require.NotContains(t, out, "route orders")
	out, err = s.cli(t, "audit", "--action", "pause_route", "--actor", "ada")
	require.NoError(t, err)
	require.Regexp(t, `(?m)\s+ada\s+pause_route\s+\S+\s+route orders\s`, out)
	require.NotContains(t, out, "retry_now")
	_, err = s.cli(t, "audit", "--from", "last week")
	require.ErrorContains(t, err, "from")
}

// Flag values complete from the statuses, the reasons and the server's routes.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	require.NoError(t, s.store.RegisterRoutes(context.Background(), []string{"orders", "payments"}, "worker-1"))
	complete := func(args ...string) []string {
		out, err := s.cli(t, append([]string{"__complete"}, args...)...)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[:len(lines)-1] // the last line is cobra's directive
	}
	require.Equal(t, []string{"parked"}, complete("list", "--status", "pa"))
	require.Equal(t, []string{"parked,replaying", "parked,replayed"}, complete("list", "--status", "parked,rep"))
	require.Contains(t, complete("bulk", "replay", "--park-reason", ""), "invalid_retry_count")
	require.Equal(t, []string{"orders", "payments"}, complete("list", "--route", ""))
	require.Equal(t, []string{"payments"}, complete("pause", "p"))
	require.Empty(t, complete("pause", "orders", ""))
}

// Bulk progress: one plain line per change when stderr is not a terminal, and a bar with
// percentage, rate and time left when it is.
func TestProgress(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var buf bytes.Buffer
	p := newProgress(&buf, clock)
	require.False(t, p.tty, "a buffer is not a terminal")
	job := api.Job{ID: 7, Status: store.JobRunning, Total: 1000}
	p.update(job)
	now = now.Add(2 * time.Second)
	job.Done, job.Failed = 390, 10
	p.update(job)
	p.update(job) // unchanged: no new line
	now = now.Add(3 * time.Second)
	job.Status, job.Done, job.Skipped = store.JobSucceeded, 980, 10
	p.update(job)
	p.done()
	require.Equal(t, "job 7 running: 0/1000 (0.0%) done, 0 failed, 0 skipped, -/s, ETA -\n"+
		"job 7 running: 390/1000 (40.0%) done, 10 failed, 0 skipped, 200/s, ETA 3s\n"+
		"job 7 succeeded: 980/1000 (100.0%) done, 10 failed, 10 skipped, 200/s, ETA 0s\n", buf.String())

	tty := &progress{tty: true, now: clock}
	tty.observe(now.Add(-2*time.Second), 0)
	tty.observe(now, 400)
	line := tty.line(api.Job{ID: 7, Status: store.JobRunning, Total: 1000, Done: 380, Skipped: 20})
	require.Equal(t, "job 7 running   ████████████░░░░░░░░░░░░░░░░░░  40.0% 400/1000 failed 0 skipped 20 200/s ETA 3s", line)
}
