package kafkafast

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// The releases whose internals this package was checked against: confluent-kafka-go's
// Consumer (where its librdkafka handle is) and the librdkafka it bundles (the layout of
// rd_kafka_message_t and every declaration in the cgo preambles). The development docs'
// upgrade checklist says what to check again before changing them.
const (
	checkedModule     = "github.com/confluentinc/confluent-kafka-go/v2"
	checkedLibrdkafka = 0x020b01ff // 2.11.1, as rd_kafka_version() returns it
)

// checkedVersion is a variable only so that a test can build a binary that was checked
// against another release (-ldflags -X) and see it fall back to the public API.
var checkedVersion = "v2.11.1"

// ErrUnchecked is why the fast path is not used: the linked confluent-kafka-go or
// librdkafka is not the release this package was checked against.
var ErrUnchecked = errors.New("kafkafast: not the confluent-kafka-go or librdkafka release the fast path was checked against")

// Check returns nil when the linked confluent-kafka-go and librdkafka are the releases
// this package was checked against, else an error wrapping ErrUnchecked that names
// them; the caller then reads and produces through confluent-kafka-go's public API.
// librdkafka's version covers a build with -tags dynamic, which links the system's
// librdkafka instead of the bundled one.
func Check() error {
	return check(linkedModuleVersion(), librdkafkaVersion())
}

func check(module string, librdkafka int) error {
	if module != "" && module != checkedVersion {
		return fmt.Errorf("%w: %s %s is linked, %s was checked", ErrUnchecked, checkedModule, module, checkedVersion)
	}
	if librdkafka != checkedLibrdkafka {
		return fmt.Errorf("%w: librdkafka %#08x is linked, %#08x was checked", ErrUnchecked, librdkafka, checkedLibrdkafka)
	}
	return nil
}

// linkedModuleVersion is the confluent-kafka-go version the binary was built with, or ""
// when its build information does not list it (a test binary lists no dependencies:
// TestCheckedVersionIsTheOneRequired checks go.mod instead).
func linkedModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == checkedModule {
			if d.Replace != nil {
				return d.Replace.Path + "@" + d.Replace.Version // a replacement is never the checked release
			}
			return d.Version
		}
	}
	return ""
}

func librdkafkaVersion() int {
	v, _ := kafka.LibraryVersion()
	return v
}
