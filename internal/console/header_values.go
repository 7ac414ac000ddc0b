package console

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// Header values a person reads differently from their bytes: Spring Kafka's dead-letter
// headers carry the original partition and offset as 4- and 8-byte big-endian numbers
// (kafka_dlt-original-partition, -offset, -timestamp) and the failure's stack trace as
// many lines of text (kafka_dlt-exception-stacktrace).

// bigEndianNumber reads a 4- or 8-byte value as the signed big-endian integer Java's
// ByteBuffer wrote; ok is false for any other length.
func bigEndianNumber(v []byte) (string, bool) {
	switch len(v) {
	case 4:
		return strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(v))), 10), true
	case 8:
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10), true
	}
	return "", false
}

// foldLines is how a multi-line header value is shown folded: its first line and its
// number of lines; lines is 0 for a value of one line.
func foldLines(v string) (first string, lines int) {
	v = strings.TrimRight(v, "\r\n")
	n := strings.Count(v, "\n")
	if n == 0 {
		return v, 0
	}
	first, _, _ = strings.Cut(v, "\n")
	return strings.TrimRight(first, "\r"), n + 1
}
