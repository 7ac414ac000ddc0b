package kafkafast

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/testenv/kafkatest"
)

// The fast path was checked against one confluent-kafka-go release and the librdkafka it
// bundles. Requiring another in go.mod fails here first: go through the upgrade
// checklist in the development docs, then move checkedVersion and checkedLibrdkafka.
func TestCheckedVersionIsTheOneRequired(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{with .Replace}}{{.Path}}{{end}}", checkedModule).Output()
	require.NoError(t, err)
	require.Equal(t, checkedVersion+" ", string(out[:len(out)-1]),
		"go.mod requires another %s than the one whose internals kafkafast was checked against: see the upgrade checklist", checkedModule)

	define := regexp.MustCompile(`#define RD_KAFKA_VERSION\s+(0x[0-9a-f]+)`).FindStringSubmatch(kafkatest.RdkafkaHeader(t))
	require.NotNil(t, define, "rdkafka.h defines RD_KAFKA_VERSION")
	bundled, err := strconv.ParseInt(strings.TrimPrefix(define[1], "0x"), 16, 64)
	require.NoError(t, err)
	require.Equal(t, checkedLibrdkafka, int(bundled), "confluent-kafka-go bundles another librdkafka: see the upgrade checklist")
	require.Equal(t, checkedLibrdkafka, librdkafkaVersion(), "the test binary links another librdkafka (-tags dynamic?)")
	require.NoError(t, Check())
}

// Any other release of either is refused, whichever differs; a binary whose build
// information does not name confluent-kafka-go is judged by librdkafka alone.
func TestCheckRefusesOtherReleases(t *testing.T) {
	require.NoError(t, check(checkedVersion, checkedLibrdkafka))
	require.NoError(t, check("", checkedLibrdkafka))
	for _, c := range []struct {
		module     string
		librdkafka int
	}{
		{"v2.12.0", checkedLibrdkafka},
		{"v2.11.0", checkedLibrdkafka},
		{"/src/confluent-kafka-go@", checkedLibrdkafka}, // a replace by a directory
		{checkedVersion, 0x020c00ff},
		{"", 0x020b00ff},
	} {
		require.ErrorIs(t, check(c.module, c.librdkafka), ErrUnchecked, "%+v", c)
	}
}
