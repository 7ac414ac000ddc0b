package redrive_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/audit"
	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/redrive"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
	"github.com/dlqops/dlq/internal/testenv/metrictest"
)

// seedMixed returns n DLQ records for target: every tenth exhausted (parked), every tenth
// not due for an hour under faultRoute (scheduled), the rest due (redriven).
func seedMixed(n int, target string, now time.Time) []*kafka.Message {
	msgs := make([]*kafka.Message, n)
	for i := range msgs {
		retry, last := "1", now.Add(-2*time.Hour)
		switch i % 10 {
		case 0:
			retry = "5"
		case 1:
			last = now
		}
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Partition: kafka.PartitionAny}, Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte("v"), Headers: []kafka.Header{hdr("retryCount", retry), hdr("originalTopic", target), hdr(headers.KeyLastFailure, ms(last))}}
	}
	return msgs
}

// faultRoute is a route whose runs last ~n/300 s, so that an outage hits them, with a one
// hour backoff (what seedMixed expects).
func faultRoute(prefix, dlq string) routes.Config {
	rc := route(testenv.UniqueName(prefix), dlq)
	rc.Backoff = &routes.Backoff{Base: time.Hour, Factor: 1, Cap: time.Hour}
	rc.RateLimit = 300
	return rc
}

// requireMixedConserved audits a DLQ seeded by seedMixed.
func requireMixedConserved(t *testing.T, kc kafkaclient.Config, st *store.Store, dlq, group string, n int) audit.Report {
	t.Helper()
	rep := requireConservedOn(t, kc, st, dlq, group)
	require.Equal(t, n, rep.Checked)
	require.Equal(t, n/10, rep.InStore[store.StatusParked])
	require.Equal(t, n/10, rep.InStore[store.StatusScheduled])
	require.Equal(t, n*8/10, rep.OnTarget)
	return rep
}

// runInBackground starts a run of route and returns where its outcome arrives.
func runInBackground(e *redrive.Engine, route string) <-chan error {
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out <- e.RunNow(ctx, route)
	}()
	return out
}

// requireResumed waits for a run started by runInBackground, which must resume and
// finish by itself within 3 minutes of the fault's end (after).
func requireResumed(t *testing.T, run <-chan error, after string) {
	t.Helper()
	select {
	case err := <-run:
		require.NoError(t, err, "the run resumes and finishes by itself")
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not finish within 3 minutes of %s", after)
	}
}

// ready reports the engine's readiness as a bool, for Eventually.
func ready(e *redrive.Engine, want bool) func() bool {
	return func() bool { return (e.Ready(context.Background()) == nil) == want }
}

// brokerOutageRun is a run in progress on a private broker, ready for an outage.
type brokerOutageRun struct {
	b       *kafkatest.Broker
	kc      kafkaclient.Config
	st      *store.Store
	dlq     string
	rc      routes.Config
	e       *redrive.Engine
	reg     *prometheus.Registry
	logs    *syncBuffer
	outcome <-chan error
}

// startBrokerOutageRun seeds n mixed records into a DLQ on a private broker, starts an
// engine and a run of faultRoute on it, and returns once a tenth of them reached the
// target: the moment to inject the outage. extra adds client properties for the engine.
func startBrokerOutageRun(t *testing.T, prefix string, n int, extra map[string]string) brokerOutageRun {
	t.Helper()
	r := brokerOutageRun{b: kafkatest.StartBroker(t), st: storetest.New(t), reg: prometheus.NewRegistry()}
	bs := r.b.Bootstrap()
	// Produces in flight when the broker stops time out during the outage, so the
	// worker's own retry of a failed delivery is exercised, not only librdkafka's.
	r.kc = kafkaclient.Config{BootstrapServers: bs, Extra: map[string]string{"message.timeout.ms": strconv.Itoa(int(deliveryTimeout / time.Millisecond))}}
	maps.Copy(r.kc.Extra, extra)
	r.dlq = kafkatest.CreateTopic(t, bs, 2, nil)
	orders := kafkatest.CreateTopic(t, bs, 2, nil)
	produceTo(t, bs, r.dlq, seedMixed(n, orders, time.Now())...)
	r.rc = faultRoute(prefix, r.dlq)
	r.logs = &syncBuffer{}
	r.e = startEngineLogging(t, r.logs, redrive.Options{Store: r.st, Kafka: r.kc, Registry: r.reg}, r.rc)
	waitAssigned(t, bs, r.rc.Group, 1, 2)
	r.outcome = runInBackground(r.e, r.rc.Name)
	targetEnd := watermarks(t, bs, orders)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= int64(n/10) }, 2*time.Minute, 50*time.Millisecond)
	return r
}

// outage is how long the fault tests keep a service down; deliveryTimeout, the producer's
// message.timeout.ms on a private broker, is shorter.
const (
	outage          = 30 * time.Second
	deliveryTimeout = 10 * time.Second
)

// outageSession is the group session (session.timeout.ms) of the fault tests whose
// outage must not cost the group's assignment: longer than the outage plus the private
// broker's restart and its group coordinator's load (kafkatest.Broker.Start allows the
// restart three minutes; the coordinator answered three minutes after the stop on a
// loaded machine). librdkafka gives the assignment up as lost after a session without an
// answer from the coordinator.
const outageSession = "300000"

// waitOutage returns once d has passed since from: the injected fault's duration, not a
// synchronization.
func waitOutage(from time.Time, d time.Duration) {
	<-time.After(time.Until(from.Add(d)))
}

// The broker (holding the DLQ, the target and the group) stops for 30 s in the middle of
// a run: readiness turns false, the run resumes by itself once the broker is back and
// finishes, readiness turns true, and nothing is lost.
func TestBrokerOutageMidRun(t *testing.T) {
	t.Parallel()
	const n = 6000
	// The outage plus the private broker's restart must stay within the group session
	// (45 s by default; a loaded machine restarts the broker slowly): an outage longer than
	// the session loses the assignment, which TestLostAssignmentFailsTheRun covers.
	r := startBrokerOutageRun(t, "broker-", n, map[string]string{"session.timeout.ms": outageSession})
	b, bs, kc, st, dlq, rc, e, run := r.b, r.b.Bootstrap(), r.kc, r.st, r.dlq, r.rc, r.e, r.outcome

	down := time.Now()
	b.Stop()
	require.Eventually(t, ready(e, false), outage, 100*time.Millisecond, "ready while the broker is down")
	waitOutage(down, outage)
	select {
	case err := <-run:
		t.Fatalf("the run ended during the outage: %v", err)
	default:
	}
	b.Start()

	requireResumed(t, run, "the broker's return")
	require.Eventually(t, ready(e, true), time.Minute, 100*time.Millisecond)
	waitCommitted(t, committedOffsets(t, bs, dlq, rc.Group, 2), watermarks(t, bs, dlq), time.Minute)
	failed := metrictest.Sum(t, r.reg, "dlq_worker_errors_total", map[string]string{"kind": "produce"})
	require.Positive(t, failed, "no delivery timed out during the outage: the worker's own retry went untested")
	t.Logf("%.0f failed deliveries retried; %s", failed, requireMixedConserved(t, kc, st, dlq, rc.Group, n))
}

// PostgreSQL stops for 20 s in the middle of a run: readiness turns false, no offset is
// committed past a record that was to be parked or scheduled and is not stored yet, and
// after the restart the run finishes and every record is accounted for.
func TestPostgresOutageMidRun(t *testing.T) {
	t.Parallel()
	const n = 6000
	r := startPGOutageRun(t, "pg-", n)
	pg, st, bs, dlq, rc, e, run := r.pg, r.st, r.bs, r.dlq, r.rc, r.e, r.outcome
	committed := committedOffsets(t, bs, dlq, rc.Group, 2)

	pg.Stop()
	down := time.Now()
	require.Eventually(t, ready(e, false), pgOutage, 100*time.Millisecond, "ready while PostgreSQL is down")
	waitOutage(down, pgOutage)
	atRestart := committed()
	restarted := time.Now()
	pg.Start()

	requireResumed(t, run, "PostgreSQL's return")
	require.Eventually(t, ready(e, true), time.Minute, 100*time.Millisecond)
	waitCommitted(t, committed, watermarks(t, bs, dlq), time.Minute)
	rep := requireMixedConserved(t, kcfg(t), st, dlq, rc.Group, n)

	// A row written after the restart is of a record the group had not committed past.
	late := 0
	for after := int64(0); ; {
		rs, err := st.ListAfter(context.Background(), store.Filter{StoredFrom: restarted}, after, store.MaxPageSize)
		require.NoError(t, err)
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			require.GreaterOrEqual(t, r.DLQ.Offset, atRestart[r.DLQ.Partition],
				"%s/%d/%d was committed during the outage but stored only after it", r.DLQ.Topic, r.DLQ.Partition, r.DLQ.Offset)
			late++
			after = r.ID
		}
	}
	require.Positive(t, late, "the outage did not hit records to park or schedule")
	t.Logf("committed during the outage %v; %d rows stored after the restart; %s", atRestart, late, rep)
}

// pgOutage is how long TestPostgresOutageMidRun keeps PostgreSQL down.
const pgOutage = 20 * time.Second

// pgOutageRun is a run in progress against a private PostgreSQL, ready for a fault.
type pgOutageRun struct {
	pg      *testenv.PGServer
	st      *store.Store
	bs, dlq string
	rc      routes.Config
	e       *redrive.Engine
	outcome <-chan error
}

// startPGOutageRun starts a private PostgreSQL with a migrated store, seeds n mixed
// records into a DLQ, starts an engine and a run of faultRoute on them, and returns once
// a fiftieth of them is stored: the moment to inject the fault.
func startPGOutageRun(t *testing.T, prefix string, n int) pgOutageRun {
	t.Helper()
	r := pgOutageRun{bs: testenv.KafkaBootstrap(t)}
	r.st, r.pg = storetest.NewPrivate(t)
	r.dlq = kafkatest.CreateTopic(t, r.bs, 2, nil)
	orders := kafkatest.CreateTopic(t, r.bs, 2, nil)
	produce(t, r.dlq, seedMixed(n, orders, time.Now())...)
	r.rc = faultRoute(prefix, r.dlq)
	r.e = startEngineWith(t, redrive.Options{Store: r.st, Kafka: kcfg(t)}, r.rc)
	waitAssigned(t, r.bs, r.rc.Group, 1, 2)
	r.outcome = runInBackground(r.e, r.rc.Name)
	require.Eventually(t, func() bool {
		got, err := r.st.Count(context.Background(), store.Filter{})
		return err == nil && got >= int64(n/50)
	}, 2*time.Minute, 50*time.Millisecond)
	return r
}

// A second engine joins the group in the middle of a run: the first one's revocation
// finishes its in-flight work and commits exactly what is done, so the new owners start
// where it stopped. Nothing is lost and, without a crash, nothing is redriven twice.
func TestRevokeMidRunCommitsWhatIsDone(t *testing.T) {
	t.Parallel()
	const n, partitions = 6000, 4
	bs := testenv.KafkaBootstrap(t)
	dlq := kafkatest.CreateTopic(t, bs, partitions, nil)
	orders := kafkatest.CreateTopic(t, bs, partitions, nil)
	st := storetest.New(t)
	produce(t, dlq, seedMixed(n, orders, time.Now())...)

	rc := faultRoute("revoke-", dlq)
	first := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	waitAssigned(t, bs, rc.Group, 1, partitions)
	run := runInBackground(first, rc.Name)
	targetEnd := watermarks(t, bs, orders)
	require.Eventually(t, func() bool { return kafkatest.Total(targetEnd()) >= n/5 }, 2*time.Minute, 20*time.Millisecond)

	second := startEngineWith(t, redrive.Options{Store: st, Kafka: kcfg(t)}, rc)
	owned := waitAssigned(t, bs, rc.Group, 2, partitions)
	require.NoError(t, <-run, "the first run ends with what it still owns")
	committed := committedOffsets(t, bs, dlq, rc.Group, partitions)
	end := watermarks(t, bs, dlq)()
	require.Eventually(t, func() bool {
		errs := make(chan error, 2)
		for _, e := range []*redrive.Engine{first, second} {
			go func() { errs <- <-runInBackground(e, rc.Name) }()
		}
		<-errs
		<-errs
		got := committed()
		for p, off := range end {
			if got[p] < off {
				return false
			}
		}
		return true
	}, 3*time.Minute, 100*time.Millisecond)
	rep := requireMixedConserved(t, kcfg(t), st, dlq, rc.Group, n)
	require.Empty(t, rep.Duplicated, "a revocation left acknowledged records uncommitted")
	t.Logf("after the join %v; %s", owned, rep)
}

// Stop while the broker is down in the middle of a run returns when its grace runs out,
// although librdkafka's commit and close wait for the group coordinator; the route ends
// closing once the broker is back, and nothing is lost.
func TestStopDuringBrokerOutageIsBounded(t *testing.T) {
	t.Parallel()
	const n = 6000
	r := startBrokerOutageRun(t, "stop-", n, nil)
	b, kc, st, dlq, rc, e, run := r.b, r.kc, r.st, r.dlq, r.rc, r.e, r.outcome

	b.Stop()
	require.Eventually(t, ready(e, false), outage, 100*time.Millisecond)
	const grace = 5 * time.Second
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		stopped <- e.Stop(ctx)
	}()
	select {
	case err := <-stopped:
		// Before the fix Stop took about three session timeouts (2m20s here).
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	case <-time.After(grace + time.Minute):
		t.Fatal("Stop ignored its grace while the broker was down")
	}

	b.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, e.Stop(ctx), "the route ends closing once the broker is back")
	<-run // its outcome arrives once the run's last commit gave up
	rep := requireConservedOn(t, kc, st, dlq, rc.Group)
	t.Logf("%s", rep)
}

// The broker stops for longer than the group session in the middle of a run: the group
// takes the partitions away without a handover, so the run is no success. It fails naming
// the lost partitions, the loss is counted, last-success does not move, and the next runs
// redrive the rest: every record is accounted for.
func TestLostAssignmentFailsTheRun(t *testing.T) {
	t.Parallel()
	const n = 6000
	r := startBrokerOutageRun(t, "lost-", n, map[string]string{"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"})
	bs, rc, e := r.b.Bootstrap(), r.rc, r.e

	down := time.Now()
	r.b.Stop()
	waitOutage(down, outage) // five sessions
	r.b.Start()
	var err error
	select {
	case err = <-r.outcome:
	case <-time.After(3 * time.Minute):
		t.Fatal("the run did not end within 3 minutes of the broker's return")
	}
	require.ErrorIs(t, err, redrive.ErrRunIncomplete)
	require.Contains(t, err.Error(), "revoked")
	require.Positive(t, metrictest.Sum(t, r.reg, "dlq_worker_partitions_lost_total", map[string]string{"route": rc.Name}))
	require.Zero(t, gaugeValue(t, r.reg, "dlq_worker_last_success_timestamp_seconds", rc.Name))
	runs, err := r.st.ListRuns(context.Background(), rc.Name, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "revoked")
	lost := r.logs.lines(t, "partition lost mid-run")
	require.NotEmpty(t, lost)
	for _, l := range lost {
		require.Equal(t, "error", l["level"])
		require.Equal(t, r.dlq, l["topic"])
		require.Contains(t, []any{0.0, 1.0}, l["partition"])
	}

	// The records the lost run did not finish wait for the next runs, which succeed. (No
	// admin request to the group here: librdkafka's coordinator requests have aborted the
	// test binary right after a broker restart.)
	committed, end := committedOffsets(t, bs, r.dlq, rc.Group, 2), watermarks(t, bs, r.dlq)
	require.Eventually(t, func() bool {
		if runOnce(e, rc.Name) != nil {
			return false
		}
		got := committed()
		for p, off := range end() {
			if got[p] < off {
				return false
			}
		}
		return true
	}, 3*time.Minute, 100*time.Millisecond)
	require.Positive(t, gaugeValue(t, r.reg, "dlq_worker_last_success_timestamp_seconds", rc.Name))
	t.Logf("%s", requireMixedConserved(t, r.kc, r.st, r.dlq, rc.Group, n))
}
