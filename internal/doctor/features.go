package doctor

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// FinalizedFeatures asks the broker at addr (host:port of a PLAINTEXT listener) for the
// cluster's finalized feature levels (share.version among them), which confluent-kafka-go
// does not expose: one ApiVersions v3 request (KIP-511, KIP-584), whose response carries
// them in tagged field 2. A feature that is not finalized is absent (level 0).
func FinalizedFeatures(ctx context.Context, addr string) (map[string]int16, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	const correlation = 1
	var req []byte
	req = binary.BigEndian.AppendUint16(req, 18) // ApiVersions
	req = binary.BigEndian.AppendUint16(req, 3)
	req = binary.BigEndian.AppendUint32(req, correlation)
	req = binary.BigEndian.AppendUint16(req, uint16(len("dlq-doctor")))
	req = append(req, "dlq-doctor"...)
	req = append(req, 0) // header tagged fields
	for _, s := range []string{"dlq-doctor", "1"} {
		req = binary.AppendUvarint(req, uint64(len(s)+1))
		req = append(req, s...)
	}
	req = append(req, 0) // body tagged fields
	if _, err := conn.Write(binary.BigEndian.AppendUint32(nil, uint32(len(req)))); err != nil {
		return nil, err
	}
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	var size int32
	if err := binary.Read(r, binary.BigEndian, &size); err != nil {
		return nil, err
	}
	if size < 4 || size > 1<<20 {
		return nil, fmt.Errorf("apiversions: response of %d bytes", size)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	p := &parser{b: buf}
	if p.int32() != correlation {
		return nil, errors.New("apiversions: unexpected correlation id")
	}
	if code := p.int16(); code != 0 {
		return nil, fmt.Errorf("apiversions: error code %d", code)
	}
	for n := p.arrayLen(); n > 0 && p.err == nil; n-- { // api keys
		p.skip(6)
		p.skipTags()
	}
	p.skip(4) // throttle_time_ms
	features := map[string]int16{}
	for n := p.uvarint(); n > 0 && p.err == nil; n-- {
		tag, size := p.uvarint(), int(p.uvarint())
		if tag != 2 {
			p.skip(size)
			continue
		}
		for m := p.arrayLen(); m > 0 && p.err == nil; m-- {
			name := p.compactString()
			maxLevel := p.int16()
			p.int16() // min level
			p.skipTags()
			features[name] = maxLevel
		}
	}
	if p.err != nil {
		return nil, fmt.Errorf("apiversions: %w", p.err)
	}
	return features, nil
}

// parser reads Kafka's wire types from a response, remembering the first overrun.
type parser struct {
	b   []byte
	err error
}

func (p *parser) take(n int) []byte {
	if p.err != nil || n < 0 || n > len(p.b) {
		if p.err == nil {
			p.err = errors.New("truncated response")
		}
		return make([]byte, max(n, 0))
	}
	out := p.b[:n]
	p.b = p.b[n:]
	return out
}

func (p *parser) skip(n int)   { p.take(n) }
func (p *parser) int16() int16 { return int16(binary.BigEndian.Uint16(p.take(2))) }
func (p *parser) int32() int32 { return int32(binary.BigEndian.Uint32(p.take(4))) }
func (p *parser) compactString() string {
	n := int(p.uvarint()) - 1
	return string(p.take(max(n, 0)))
}

// arrayLen reads a compact array's length (0 for a null array).
func (p *parser) arrayLen() int {
	return max(int(p.uvarint())-1, 0)
}

func (p *parser) uvarint() uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.err = errors.New("bad varint")
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) skipTags() {
	for n := p.uvarint(); n > 0 && p.err == nil; n-- {
		p.uvarint()
		p.skip(int(p.uvarint()))
	}
}
