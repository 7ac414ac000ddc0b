package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/kafkaclient"
	"github.com/dlqops/dlq/internal/routes"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// runDoctor runs `dlq-worker doctor args...` on cfg as the root command would, and returns
// what it printed and its error.
func runDoctor(cfg *workerconfig.Config, args ...string) (string, error) {
	cmd := doctorCommand(func() (*workerconfig.Config, error) { return cfg, nil })
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root command
	err := cmd.Execute()
	return out.String(), err
}

// workerConfig is a worker configuration on the test broker and a migrated schema, with
// one route reading topics.
func workerConfig(t *testing.T, topics ...string) *workerconfig.Config {
	_, dbURL := storetest.NewWithURL(t)
	return &workerconfig.Config{Database: store.Config{URL: dbURL}, Kafka: kafkaclient.Config{BootstrapServers: testenv.KafkaBootstrap(t)},
		Routes: []routes.Config{{Name: "r", Topics: topics}}}
}

// setGroupDLQ sets a share group's errors.deadletterqueue.topic.name, as
// kafka-configs.sh --alter --group would.
func setGroupDLQ(t *testing.T, group, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kafkatest.Admin(t, testenv.KafkaBootstrap(t)).IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceGroup, Name: group,
		Config: []kafka.ConfigEntry{{Name: "errors.deadletterqueue.topic.name", Value: topic, IncrementalOperation: kafka.AlterConfigOpTypeSet}}}})
	require.NoError(t, err)
	require.Equal(t, kafka.ErrNoError, res[0].Error.Code(), res[0].Error.String())
}

// `dlq-worker doctor` checks the routes' topics: a share group's DLQ topic the broker
// would never write to is printed with the group it is about, and the command fails; a
// correct one passes.
func TestDoctorCommand(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	good := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("doctor-"), 1, map[string]string{"errors.deadletterqueue.group.enable": "true"})
	bad := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("doctor-"), 1, nil)
	goodGroup, badGroup := testenv.UniqueName("good-"), testenv.UniqueName("bad-")
	setGroupDLQ(t, goodGroup, good)
	setGroupDLQ(t, badGroup, bad)

	out, err := runDoctor(workerConfig(t, good), "--share-group", goodGroup)
	require.NoError(t, err)
	require.Equal(t, "no problem found\n", out)
	out, err = runDoctor(workerConfig(t, good, bad), "--share-group", goodGroup+","+badGroup)
	require.EqualError(t, err, "1 problem(s) found")
	require.Equal(t, "topic "+bad+" (share group "+badGroup+"): errors.deadletterqueue.group.enable is not true: the broker writes no share-group dead letter to it\n", out)
}

// A Kafka Streams DLQ that happens to carry the brokers' share-group DLQ prefix (dlq.*)
// and that no share group names is no problem: doctor passes, with a note, so that it can
// gate CI.
func TestDoctorPassesAStreamsDLQWithTheSharePrefix(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	streams := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("streams-"), 1, nil)

	out, err := runDoctor(workerConfig(t, streams))
	require.NoError(t, err, out)
	require.Equal(t, "note: topic "+streams+": has the brokers' share-group DLQ prefix \"dlq.\" but errors.deadletterqueue.group.enable is not true: "+
		"fine for a Kafka Streams, Connect or Spring DLQ; if a share group dead-letters to it, enable it and name the group with --share-group\n"+
		"no problem found\n", out)
}

// Doctor checks what a newcomer expects before the first run: a route topic that does not
// exist, a route pattern matching nothing and a database without the migrations are each
// a problem line, and the command fails; each network check has a 10 s bound by default.
func TestDoctorChecksTopicsAndMigrations(t *testing.T) {
	cfg := workerConfig(t, testenv.UniqueName("absent-"), "^"+testenv.UniqueName("nomatch-"))
	cfg.Database.URL = testenv.Schema(t) // not migrated
	out, err := runDoctor(cfg)
	require.Error(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, "route r: topic "+cfg.Routes[0].Topics[0]+" does not exist", lines[0])
	require.Equal(t, "route r: pattern "+cfg.Routes[0].Topics[1]+" matches no topic", lines[1])
	require.Regexp(t, `^postgresql: \d+ migration\(s\) not applied \(the first: 00001_parking_store.sql\): run `+"`dlq-worker migrate up`", lines[2])
	require.NotContains(t, out, "no problem found")
	require.Equal(t, "10s", doctorCommand(nil).Flags().Lookup("timeout").DefValue)
}

// With no broker at the bootstrap address, doctor fails with a line that says so and names
// its bound (--timeout), and librdkafka writes no raw "%3|…|FAIL|…" line to the process's
// stderr. It runs in a child process, whose stderr is librdkafka's.
func TestDoctorUnreachableBroker(t *testing.T) {
	if addr := os.Getenv("DOCTOR_CHILD_BOOTSTRAP"); addr != "" {
		cfg := &workerconfig.Config{Database: store.Config{URL: os.Getenv("DOCTOR_CHILD_DATABASE")}, Kafka: kafkaclient.Config{BootstrapServers: addr},
			Routes: []routes.Config{{Name: "r", Topics: []string{"orders.dlq"}}}}
		out, err := runDoctor(cfg, "--timeout", "2s")
		os.Stdout.WriteString(out)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
		}
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	_, dbURL := storetest.NewWithURL(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "DOCTOR_CHILD_BOOTSTRAP="+addr, "DOCTOR_CHILD_DATABASE="+dbURL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "kafka: no broker of "+addr+" answered within 2s")
	require.Contains(t, string(out), "error: 1 problem(s) found")
	require.NotContains(t, string(out), "no problem found")
	require.NotRegexp(t, regexp.MustCompile(`(?m)^%\d\|`), string(out), "a raw librdkafka line")
}
