package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/api/apitest"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/jobs"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The route's allowed_targets change between the admin accepting a replay and the job
// runner producing it: the admin accepted on the rules published then (any topic), the
// runner applies its own at produce time and parks the record target_not_allowed without
// producing it. Once the runner has published its rules, the admin refuses the same
// replay up front (422).
func TestAllowedTargetsCheckedAgainAtProduce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 3, nil)
	st := storetest.New(t)
	jobstest.Park(t, st, topic, 1)
	require.NoError(t, st.PublishRouteTargets(ctx, map[string][]string{topic: nil}, "old-config"))
	a, err := auth.New([]auth.Token{{Name: "ada", SHA256: auth.Hash(adminToken), Role: auth.Admin}})
	require.NoError(t, err)
	srv, err := api.New(api.Config{Store: st, Auth: a, MaxBodyBytes: 1 << 20, Log: zerolog.Nop(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	replay := func() *http.Response {
		req, err := http.NewRequest("POST", ts.URL+"/v1/records/1/replay", bytes.NewReader([]byte("{}")))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := apitest.Client(t).Do(req) // checked against the spec
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	resp := replay()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	var job api.Job
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&job))

	// The new configuration allows only another topic.
	jobstest.StartRunner(t, jobs.Config{Store: st, Routes: []routes.Config{jobstest.Route(topic, topic+".elsewhere")}, Owner: "new-config"})
	require.Eventually(t, func() bool {
		j, err := st.GetJob(ctx, job.ID)
		require.NoError(t, err)
		return j.Status == store.JobFailed
	}, time.Minute, 20*time.Millisecond)
	rec, err := st.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, store.StatusParked, rec.Status)
	require.Equal(t, store.ReasonTargetNotAllowed, rec.Reason)
	require.Zero(t, jobstest.Records(t, topic), "nothing reached the topic the route now forbids")

	require.Eventually(t, func() bool { return replay().StatusCode == http.StatusUnprocessableEntity },
		time.Minute, 50*time.Millisecond, "the runner's rules refuse it up front once published")
}
