// Package partitioner chooses the partition of a redriven record the way Java producers
// do, so that keyed ordering survives the round trip through the DLQ.
package partitioner

// Murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2), seed
// 0x9747b28c, returned as the Java int it computes.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for ; len(data) >= 4; data = data[4:] {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// ForKey is the Java DefaultPartitioner's choice for a non-null key:
// (murmur2(key) & 0x7fffffff) % numPartitions. numPartitions must be positive.
func ForKey(key []byte, numPartitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % numPartitions
}
