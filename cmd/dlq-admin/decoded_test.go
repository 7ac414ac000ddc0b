package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/jobs/jobstest"
	"github.com/dlqops/dlq/internal/schemas"
	"github.com/dlqops/dlq/internal/schemas/schematest"
	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/testenv"
	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// An Avro dead letter is shown decoded by `show`, edited as JSON with `replay
// --value-json`, and what lands on the topic decodes with the real registry to the edit
// under the same schema id; an edit that does not fit is refused naming the field.
func TestAvroEditedAsJSONIsReplayed(t *testing.T) {
	t.Parallel()
	sr := schematest.Connect(t)
	schema := `{"type":"record","name":"Invoice","namespace":"bill","doc":"` + testenv.UniqueName("cli ") +
		`","fields":[{"name":"number","type":"string"},{"name":"total_cents","type":"long"},` +
		`{"name":"due","type":["null",{"type":"int","logicalType":"date"}],"default":null}]}`
	id, subject := sr.Register(t, "AVRO", schema)
	registry, err := schemas.New(schemas.Config{URL: sr.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(registry.Close)

	topic := kafkatest.CreateTopic(t, testenv.KafkaBootstrap(t), 1, nil)
	s := newStackWith(t, func(c *api.Config) { c.Schemas = registry }, []string{topic})
	data, err := avro.Marshal(avro.MustParse(schema), map[string]any{"number": "INV-7", "total_cents": int64(-100), "due": nil})
	require.NoError(t, err)
	_, err = s.store.StoreBatch(context.Background(), []store.NewRecord{{
		DLQ: store.Coordinates{Topic: topic + ".dlq"}, Origin: store.Origin{Topic: topic, Partition: 0, Offset: 3},
		Value: schematest.Wire(id, data), Timestamp: time.Now().UTC(), RetryCount: 5, ErrorClass: "Validation",
		ErrorMessage: "total_cents must be positive", Reason: store.ReasonExhausted, Status: store.StatusParked, Route: topic,
	}}, nil)
	require.NoError(t, err)

	out, err := s.cli(t, "show", "1")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^value decoded\s+avro schema id `+strconv.Itoa(id)+` \(`+subject+` v1\): `+
		`\{"number":"INV-7","total_cents":-100,"due":null\}$`, out)

	_, err = s.cli(t, "replay", "1", "--value-json", `{"number":"INV-7","total_cents":"a lot"}`)
	require.ErrorContains(t, err, "value_json.total_cents")

	edit := `{"number":"INV-7","total_cents":100,"due":"2027-01-31"}`
	out, err = s.cli(t, "-o", "json", "replay", "1", "--value-json", edit, "--wait")
	require.NoError(t, err)
	var job api.Job
	require.NoError(t, json.Unmarshal([]byte(out), &job), out)
	require.Equal(t, store.JobSucceeded, job.Status, job.Error)

	msgs := jobstest.Consume(t, topic, 1, 1)
	landed := msgs[0].Value
	require.Equal(t, byte(0), landed[0], "magic byte")
	require.Equal(t, uint32(id), binary.BigEndian.Uint32(landed[1:5]), "the record's schema id")
	d := registry.Decode(landed)
	require.Empty(t, d.Error)
	require.JSONEq(t, edit, string(d.JSON))

	out, err = s.cli(t, "-o", "json", "audit", "--job", strconv.FormatInt(job.ID, 10))
	require.NoError(t, err)
	var audit api.AuditList
	require.NoError(t, json.Unmarshal([]byte(out), &audit), out)
	var shown bool
	for _, e := range audit.Entries {
		shown = shown || strings.Contains(e.Reason, `value_json {"number":"INV-7","total_cents":100,"due":"2027-01-31"}`)
	}
	require.True(t, shown, "the audit row shows the JSON: %s", out)
}
