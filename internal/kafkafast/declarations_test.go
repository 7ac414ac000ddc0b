package kafkafast

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The package declares the librdkafka functions, constants and the message struct it
// uses (librdkafka_api.h) instead of including rdkafka.h, which confluent-kafka-go keeps
// in its module: they must be the bundled librdkafka's.
func TestDeclarationsMatchLibrdkafka(t *testing.T) {
	header := kafkatest.RdkafkaHeader(t)
	kafkatest.RequireDeclaredIn(t, header, "librdkafka_api.h")

	body := regexp.MustCompile(`(?s)typedef struct rd_kafka_message_s \{(.*?)\} rd_kafka_message_t;`).FindStringSubmatch(header)
	require.NotNil(t, body, "rdkafka.h defines rd_kafka_message_t")
	var fields []string
	for _, line := range strings.Split(regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(body[1], ""), ";") {
		if f := strings.Fields(strings.ReplaceAll(line, "*", " * ")); len(f) > 0 {
			fields = append(fields, strings.Join(f, " "))
		}
	}
	require.Equal(t, []string{"rd_kafka_resp_err_t err", "rd_kafka_topic_t * rkt", "int32_t partition", "void * payload", "size_t len",
		"void * key", "size_t key_len", "int64_t offset", "void * _private"}, fields)

	enum := regexp.MustCompile(`(?s)typedef enum rd_kafka_vtype_t \{(.*?)\}`).FindStringSubmatch(header)
	require.NotNil(t, enum)
	var vtypes []string
	for _, m := range regexp.MustCompile(`RD_KAFKA_VTYPE_(\w+)`).FindAllStringSubmatch(enum[1], -1) {
		vtypes = append(vtypes, m[1])
	}
	require.Equal(t, []string{"END", "TOPIC", "RKT", "PARTITION", "VALUE", "KEY", "OPAQUE", "MSGFLAGS", "TIMESTAMP", "HEADER", "HEADERS"}, vtypes[:11])
	require.Regexp(t, `#define RD_KAFKA_MSG_F_COPY\s+\\?\s*0x2\b`, header)
	require.Regexp(t, `#define RD_KAFKA_EVENT_DR\s+0x1\b`, header)
	require.Regexp(t, `#define RD_KAFKA_EVENT_LOG\s+0x4\b`, header)
	require.Regexp(t, `#define RD_KAFKA_EVENT_ERROR\s+0x8\b`, header)
	require.Regexp(t, `RD_KAFKA_RESP_ERR__FATAL = -150,`, header)
	require.Regexp(t, `RD_KAFKA_CONF_OK = 0\b`, header)
	require.Regexp(t, `typedef enum rd_kafka_type_t \{\s*RD_KAFKA_PRODUCER,`, header)

	// The cgo preambles declare nothing of librdkafka's themselves: every declaration is
	// in the header checked above.
	for _, file := range []string{"queue.go", "producer.go", "events.go", "config.go", "handle.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Contains(t, string(src), `#include "librdkafka_api.h"`, file)
		require.NotRegexp(t, `(?m)^typedef struct rd_kafka_|^\S.*\brd_kafka_\w+\([^)]*\);$`, string(src), "%s declares part of librdkafka's API", file)
	}
}
