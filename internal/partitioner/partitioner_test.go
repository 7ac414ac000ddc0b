package partitioner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// javaVectors are Kafka's UtilsTest.testMurmur2 cases.
var javaVectors = []struct {
	key  string
	hash int32
}{
	{"21", -973932308},
	{"foobar", -790332482},
	{"a-little-bit-long-string", -985981536},
	{"a-little-bit-longer-string", -1486304829},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
	{"abc", 479470107},
}

func TestMurmur2JavaVectors(t *testing.T) {
	for _, v := range javaVectors {
		require.Equal(t, v.hash, Murmur2([]byte(v.key)), v.key)
	}
}

func TestForKey(t *testing.T) {
	for _, v := range javaVectors {
		for _, n := range []int32{1, 3, 7, 12} {
			want := (v.hash & 0x7fffffff) % n
			require.Equal(t, want, ForKey([]byte(v.key), n), "%s over %d", v.key, n)
		}
	}
	require.Equal(t, int32(0), ForKey([]byte{}, 1), "an empty key is a key")
}
