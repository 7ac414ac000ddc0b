package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/masking"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

const editCard = "4111111111111111"

// maskedStack serves the API with the card number of JSON values and the authorization
// header masked, and parks one such record; it returns the masker and the record's id.
func maskedStack(t *testing.T) (stack, *masking.Masker, int64) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "mask.key")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600))
	m, err := masking.New(masking.Config{JSONPaths: []string{"card.number"}, Headers: []string{"authorization"}, HashKeyFile: key})
	require.NoError(t, err)
	st := storetest.New(t)
	a, err := auth.New([]auth.Token{{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin}})
	require.NoError(t, err)
	srv, err := api.New(api.Config{Store: st, Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(),
		Registerer: prometheus.NewRegistry(), Masking: m})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	_, err = st.StoreBatch(context.Background(), []store.NewRecord{{
		DLQ: store.Coordinates{Topic: "orders.dlq"}, Origin: store.Origin{Topic: "orders", Partition: 0, Offset: 7},
		Value: []byte(`{"card":{"number":"` + editCard + `"},"name":"Ann"}`),
		Headers: []store.Header{{Key: "trace", Value: []byte{0xff, 0, 1}}, {Key: "authorization", Value: []byte("Bearer s3cr3t")},
			{Key: "note", Value: []byte("\x1b[31mred\x1b[0m")}},
		Timestamp: time.UnixMilli(1_700_000_000_000).UTC(), Reason: store.ReasonExhausted, Status: store.StatusParked, Route: "orders",
	}}, nil)
	require.NoError(t, err)
	page, err := st.List(context.Background(), store.Filter{}, "", 1)
	require.NoError(t, err)
	return stack{store: st, url: ts.URL}, m, page.Records[0].ID
}

// cliIn is stack.cli with stdin and the diff's stream (stderr) returned.
func (s stack) cliIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot(&clientFlags{http: apitest.Client(t)})
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"--url", s.url, "--token", adminToken}, args...))
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func jobsOf(t *testing.T, st *store.Store) []store.Job {
	t.Helper()
	jobs, err := st.ListJobs(context.Background(), 0, 10)
	require.NoError(t, err)
	return jobs
}

// TestReplayEditShowsDiffAndConfirms: replay --edit-value/--edit-header/--drop-header
// shows the diff of the masked view, replays nothing unless confirmed, and once confirmed
// sends the edit with the masked fields as stored.
func TestReplayEditShowsDiffAndConfirms(t *testing.T) {
	t.Parallel()
	s, m, id := maskedStack(t)
	card := m.Placeholder([]byte(editCard))
	file := filepath.Join(t.TempDir(), "value.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"card":{"number":"`+card+`"},"name":"Anna"}`), 0o600))
	args := []string{"replay", strconv.FormatInt(id, 10), "--edit-value", "@" + file, "--edit-header", "fixed-by=ops", "--drop-header", "trace"}

	_, diff, err := s.cliIn(t, "n\n", args...)
	require.ErrorContains(t, err, "not confirmed")
	require.Empty(t, jobsOf(t, s.store), "nothing replayed without confirmation")
	for _, line := range []string{
		`-   "name": "Ann"`, `+   "name": "Anna"`, `      "number": "` + card + `"`,
		"header + fixed-by: ops", "header - trace: base64:/wAB", "Replay record " + strconv.FormatInt(id, 10) + " with these changes? [y/N]",
	} {
		require.Contains(t, diff, line)
	}
	require.NotContains(t, diff, editCard, "the diff is of the masked view")
	require.NotContains(t, diff, "s3cr3t")
	require.NotContains(t, diff, "\x1b", "a sender's text is written inert")

	out, _, err := s.cliIn(t, "y\n", args...)
	require.NoError(t, err)
	require.Contains(t, out, "pending")
	jobs := jobsOf(t, s.store)
	require.Len(t, jobs, 1)
	require.Equal(t, `{"card":{"number":"`+editCard+`"},"name":"Anna"}`, string(jobs[0].Edit.Value), "the masked card is sent as stored")
	require.Equal(t, []store.EditHeader{{Key: "authorization", Value: []byte("Bearer s3cr3t")},
		{Key: "note", Value: []byte("\x1b[31mred\x1b[0m")}, {Key: "fixed-by", Value: []byte("ops")}}, jobs[0].Edit.Headers)
}

// TestReplayEditFromStdin: --edit-value - reads the value from stdin and so needs --yes;
// an edit that changes nothing says so.
func TestReplayEditFromStdin(t *testing.T) {
	t.Parallel()
	s, _, id := maskedStack(t)
	_, _, err := s.cliIn(t, "{}", "replay", strconv.FormatInt(id, 10), "--edit-value", "-")
	require.ErrorContains(t, err, "add --yes")
	_, _, err = s.cliIn(t, "", "replay", strconv.FormatInt(id, 10), "--edit-value", "value.json", "--yes")
	require.ErrorContains(t, err, "neither @FILE nor -")
	_, _, err = s.cliIn(t, "", "replay", strconv.FormatInt(id, 10), "--edit-header", "novalue", "--yes")
	require.ErrorContains(t, err, "not name=value")
	require.Empty(t, jobsOf(t, s.store))

	_, diff, err := s.cliIn(t, "plain text", "replay", strconv.FormatInt(id, 10), "--edit-value", "-", "--yes")
	require.NoError(t, err)
	require.Contains(t, diff, "+ plain text")
	require.NotContains(t, diff, "[y/N]")
	jobs := jobsOf(t, s.store)
	require.Len(t, jobs, 1)
	require.Equal(t, "plain text", string(jobs[0].Edit.Value))
}
