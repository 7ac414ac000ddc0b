package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const adminToken = "e2e-admin-bJrR-em_MD5xeJ5zP1mxNolpc-Zmw3zd"

// stack is an API server on a fresh schema, with a job runner next to it.
type stack struct {
	store *store.Store
	url   string
}

// newStack runs the routes of routeNames (records of other routes are not replayed).
func newStack(t *testing.T, routeNames []string, replayTopics ...string) stack {
	t.Helper()
	return newStackWith(t, func(*api.Config) {}, routeNames, replayTopics...)
}

// newStackWith is newStack with the API's configuration adjusted by opt.
func newStackWith(t *testing.T, opt func(*api.Config), routeNames []string, replayTopics ...string) stack {
	t.Helper()
	st := storetest.New(t)
	a, err := auth.New([]auth.Token{{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin}})
	require.NoError(t, err)
	cfg := api.Config{Store: st, Auth: a, ReplayTopics: replayTopics, MaxBodyBytes: 1 << 20,
		Log: zerolog.Nop(), Registerer: prometheus.NewRegistry()}
	opt(&cfg)
	srv, err := api.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	jobstest.StartRunner(t, jobs.Config{Store: st, Routes: jobstest.Routes(routeNames...), Owner: "e2e"})
	return stack{store: st, url: ts.URL}
}

// cli runs dlq-admin with args against the stack, every response checked against the spec.
func (s stack) cli(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot(&clientFlags{http: apitest.Client(t)})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"--url", s.url, "--token", adminToken}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// 10,000 parked records → bulk replay by filter from the CLI → every one on the target
// topic, exact, with our headers; every row replayed; the audit log has the job.
func TestBulkReplayEndToEnd(t *testing.T) {
	t.Parallel()
	const n = 10_000
	target := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	s := newStack(t, []string{"orders", "payments"}, target)
	jobstest.Park(t, s.store, "orders", n)
	jobstest.Park(t, s.store, "payments", 10)

	out, err := s.cli(t, "bulk", "replay", "--original-topic", "orders", "--to", target)
	require.NoError(t, err)
	require.Contains(t, out, strconv.Itoa(n)+" records selected (dry run)")

	out, err = s.cli(t, "-o", "json", "bulk", "replay", "--original-topic", "orders", "--to", target, "--yes")
	require.NoError(t, err)
	var job api.Job
	require.NoError(t, json.Unmarshal([]byte(out), &job), out)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)
	require.EqualValues(t, n, job.Done)
	require.Zero(t, job.Failed)

	msgs := jobstest.Consume(t, target, 3, n)
	require.Len(t, jobstest.CheckReplayed(t, s.store, msgs, job.ID, "ada", false), n)
	replayed, err := s.store.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusReplayed}})
	require.NoError(t, err)
	require.EqualValues(t, n, replayed)
	parked, err := s.store.Count(context.Background(), store.Filter{Statuses: []store.Status{store.StatusParked}})
	require.NoError(t, err)
	require.EqualValues(t, 10, parked, "payments untouched")

	entries, err := s.store.ListAudit(context.Background(), 0, store.MaxPageSize)
	require.NoError(t, err)
	var finished int64
	var created bool
	for _, e := range entries {
		if e.JobID != job.ID {
			continue
		}
		switch e.Action {
		case "create_replay_job":
			created = true
			require.Equal(t, "ada", e.Actor)
			require.EqualValues(t, n, e.Affected)
		case "finish_replay":
			require.Equal(t, "ada", e.Actor, "the worker acts for the job's creator")
			finished += e.Affected
		}
	}
	require.True(t, created)
	require.EqualValues(t, n, finished, "an audit row for every batch")

	out, err = s.cli(t, "jobs")
	require.NoError(t, err)
	require.Contains(t, out, "succeeded")
}

// The other client commands against a live server.
func TestCLICommands(t *testing.T) {
	t.Parallel()
	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	s := newStack(t, []string{topic})
	jobstest.Park(t, s.store, topic, 4)

	out, err := s.cli(t, "list", "--original-topic", topic, "--limit", "2")
	require.NoError(t, err)
	require.Contains(t, out, "next page: --cursor")
	require.Contains(t, out, "\nmatching records: 4\n")
	require.Equal(t, 5, strings.Count(out, "\n"), out) // header, 2 records, the total, next page

	out, err = s.cli(t, "show", "1")
	require.NoError(t, err)
	require.Contains(t, out, `"k0"`)
	require.Contains(t, out, "header trace")

	out, err = s.cli(t, "replay", "1", "--reset-retry", "--wait")
	require.NoError(t, err)
	require.Contains(t, out, "succeeded")
	msgs := jobstest.Consume(t, topic, 3, 1)
	require.Len(t, jobstest.CheckReplayed(t, s.store, msgs, 1, "ada", true), 1)

	_, err = s.cli(t, "discard", "2")
	require.ErrorContains(t, err, "reason")
	out, err = s.cli(t, "discard", "2", "--reason", "bad data")
	require.NoError(t, err)
	require.Contains(t, out, "discarded")
	_, err = s.cli(t, "replay", "2")
	require.ErrorContains(t, err, "409")

	out, err = s.cli(t, "bulk", "discard", "--ids", "3,4", "--reason", "cleanup", "--yes")
	require.NoError(t, err)
	require.Contains(t, out, "succeeded")

	out, err = s.cli(t, "stats")
	require.NoError(t, err)
	require.Contains(t, out, "discarded")

	_, err = s.cli(t, "jobs", "cancel", "1")
	require.ErrorContains(t, err, "409")
	out, err = s.cli(t, "-o", "json", "jobs", "show", "1")
	require.NoError(t, err)
	require.Contains(t, out, `"status": "succeeded"`)

	root := newRoot(&clientFlags{})
	root.SetArgs([]string{"list", "--url", s.url, "--token", ""})
	require.ErrorContains(t, root.Execute(), "no token")
}

// dlq-admin --help never prints the token the environment holds.
func TestHelpHidesToken(t *testing.T) {
	const secret = "dlq_do-not-print-this-0123456789"
	t.Setenv("DLQ_ADMIN_TOKEN", secret)
	for _, args := range [][]string{{"--help"}, {"list", "--help"}, {"bulk", "replay", "--help"}} {
		root := newRoot(&clientFlags{})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		require.NoError(t, root.ExecuteContext(context.Background()))
		require.Contains(t, out.String(), "DLQ_ADMIN_TOKEN", args)
		require.NotContains(t, out.String(), secret, args)
	}
}

// dlq-admin token hash refuses a weak token and hashes a strong one.
func TestTokenHashRefusesWeak(t *testing.T) {
	t.Parallel()
	for tok, ok := range map[string]bool{"tok-viewer": false, "strong-_LovETWSInMC5Xw8WL6It8whCsmKLOTZ": true} {
		root := newRoot(&clientFlags{})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetIn(strings.NewReader(tok + "\n"))
		root.SetArgs([]string{"token", "hash"})
		err := root.ExecuteContext(context.Background())
		if !ok {
			require.ErrorContains(t, err, "at least 20 characters")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, auth.Hash(tok)+"\n", out.String())
	}
}

// --key is the key as text and --key-b64 its bytes in base64, in listings and bulk
// selections alike; the two together are refused.
func TestCLIKeyFilter(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	jobstest.Park(t, s.store, "orders", 4)
	_, err := s.store.StoreBatch(context.Background(), []store.NewRecord{{
		DLQ: store.Coordinates{Topic: "orders.dlq", Offset: 99}, Origin: store.Origin{Topic: "orders", Partition: -1, Offset: -1},
		Key: []byte{0xff, 0x00}, Value: []byte("v"), Timestamp: time.Now(), RetryCount: 1,
		Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "orders",
	}}, nil)
	require.NoError(t, err)
	list := func(args ...string) []int64 {
		t.Helper()
		out, err := s.cli(t, append([]string{"-o", "json", "list"}, args...)...)
		require.NoError(t, err)
		var page api.RecordPage
		require.NoError(t, json.Unmarshal([]byte(out), &page), out)
		var ids []int64
		for _, r := range page.Records {
			ids = append(ids, r.ID)
		}
		return ids
	}
	require.Equal(t, []int64{3}, list("--key", "k2"))
	require.Equal(t, []int64{5}, list("--key-b64", base64.StdEncoding.EncodeToString([]byte{0xff, 0x00})))
	_, err = s.cli(t, "list", "--key", "k2", "--key-b64", "azI=")
	require.ErrorContains(t, err, "key-b64")
	_, err = s.cli(t, "list", "--key-b64", "k2!")
	require.ErrorContains(t, err, "key_b64")

	out, err := s.cli(t, "bulk", "discard", "--key", "k3", "--reason", "by key")
	require.NoError(t, err)
	require.Contains(t, out, "1 records selected (dry run)")
}
