package kafkatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// RdkafkaHeader returns the text of rdkafka.h as vendored by the confluent-kafka-go
// module the build links: the header our cgo declarations are checked against.
func RdkafkaHeader(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/confluentinc/confluent-kafka-go/v2").Output()
	if err != nil {
		t.Fatalf("go list confluent-kafka-go: %v", err)
	}
	h, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "kafka", "librdkafka_vendor", "rdkafka.h"))
	if err != nil {
		t.Fatalf("read rdkafka.h: %v", err)
	}
	return string(h)
}

// RequireDeclaredIn fails t unless every librdkafka function that the cgo preamble of
// file declares (a line starting with its return type) is one of header's.
func RequireDeclaredIn(t testing.TB, header, file string) {
	t.Helper()
	self, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	decls := regexp.MustCompile(`(?m)^(?:int|void|size_t|int32_t|int64_t|(?:const )?(?:char|rd_kafka_\w+_t) \*)\s*(rd_kafka_\w+)\(`).FindAllStringSubmatch(string(self), -1)
	if len(decls) == 0 {
		t.Fatalf("%s declares no librdkafka function", file)
	}
	for _, decl := range decls {
		if !regexp.MustCompile(`\b` + decl[1] + `\s*\(`).MatchString(header) {
			t.Errorf("%s declares %s, which rdkafka.h does not", file, decl[1])
		}
	}
}
