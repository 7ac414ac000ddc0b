package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/config"
	"github.com/dlqops/dlq/internal/redrive/routes"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// `dlq-worker doctor` checks the routes' topics: a share-group DLQ topic the broker would
// never write to is printed and the command fails; a correct one passes.
func TestDoctorCommand(t *testing.T) {
	bs := testenv.KafkaBootstrap(t)
	good := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("doctor-"), 1, map[string]string{"errors.deadletterqueue.group.enable": "true"})
	bad := kafkatest.CreateNamedTopic(t, bs, "dlq."+testenv.UniqueName("doctor-"), 1, nil)
	doctor := func(topics ...string) (string, error) {
		cmd := doctorCommand(func() (*config.Worker, error) {
			return &config.Worker{Kafka: config.Kafka{BootstrapServers: bs}, Routes: []routes.Config{{Name: "r", Topics: topics}}}, nil
		})
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(nil)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root command
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := doctor(good)
	require.NoError(t, err)
	require.Equal(t, "no problem found\n", out)
	out, err = doctor(good, bad)
	require.EqualError(t, err, "1 problem(s) found")
	require.Equal(t, "topic "+bad+": errors.deadletterqueue.group.enable is not true: the broker writes no share-group dead letter to it\n", out)
}
