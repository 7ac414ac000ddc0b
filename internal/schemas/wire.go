package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The Confluent wire format: magic byte 0, the schema id as 4 bytes big-endian, then
// the Avro, Protobuf or JSON bytes (Protobuf's preceded by its message indexes).
const (
	magicByte  = 0
	headerSize = 5
)

// splitWire returns the schema id and the serialized data of bytes in the wire format;
// ok is false for anything else (nil, shorter than the header, another first byte).
func splitWire(b []byte) (id int, data []byte, ok bool) {
	if len(b) < headerSize || b[0] != magicByte {
		return 0, nil, false
	}
	return int(binary.BigEndian.Uint32(b[1:headerSize])), b[headerSize:], true
}

// joinWire prefixes data with the header naming schema id.
func joinWire(id int, data []byte) []byte {
	out := make([]byte, headerSize, headerSize+len(data))
	binary.BigEndian.PutUint32(out[1:headerSize], uint32(id))
	return append(out, data...)
}

// readMessageIndexes reads the Protobuf message indexes that follow the header: the path
// of the message in the schema's file (first the top-level message, then nested ones),
// as a zig-zag varint count and that many zig-zag varints. A single 0 byte stands for
// [0], the first message of the file.
func readMessageIndexes(data []byte) (indexes []int, rest []byte, err error) {
	n, size := binary.Varint(data)
	if size <= 0 {
		return nil, nil, errors.New("the Protobuf message indexes are truncated")
	}
	data = data[size:]
	if n == 0 {
		return []int{0}, data, nil
	}
	if n < 0 || n > int64(len(data)) {
		return nil, nil, fmt.Errorf("the Protobuf message index count %d does not fit the %d bytes", n, len(data))
	}
	indexes = make([]int, n)
	for i := range indexes {
		v, size := binary.Varint(data)
		if size <= 0 || v < 0 {
			return nil, nil, errors.New("a Protobuf message index is truncated or negative")
		}
		indexes[i], data = int(v), data[size:]
	}
	return indexes, data, nil
}

// writeMessageIndexes is readMessageIndexes' inverse, with the single 0 byte for [0].
func writeMessageIndexes(indexes []int) []byte {
	if len(indexes) == 1 && indexes[0] == 0 {
		return []byte{0}
	}
	out := binary.AppendVarint(nil, int64(len(indexes)))
	for _, i := range indexes {
		out = binary.AppendVarint(out, int64(i))
	}
	return out
}
