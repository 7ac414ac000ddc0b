package masking

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// span is the bytes [start, end) of one JSON value a path selects.
type span struct{ start, end int }

// maskJSON replaces the values the paths select by placeholder strings, splicing them into
// the stored bytes so that the rest of the document reads exactly as it was sent.
func (m *Masker) maskJSON(v []byte, into Restore) []byte {
	w := &jsonWalker{data: v, dec: json.NewDecoder(bytes.NewReader(v))}
	if err := w.value(m.paths); err != nil {
		return v // json.Valid said it parses; nothing to mask if it somehow does not
	}
	var out bytes.Buffer
	last := 0
	for _, s := range w.spans {
		raw := v[s.start:s.end]
		p := strconv.Quote(m.Placeholder(hashInput(raw)))
		into[p] = raw
		out.Write(v[last:s.start])
		out.WriteString(p)
		last = s.end
	}
	out.Write(v[last:])
	return out.Bytes()
}

// hashInput is what a JSON value's placeholder hashes: a string's text, so that the value a
// caller searches for is the one they would type, else the value as written.
func hashInput(raw []byte) []byte {
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	return raw
}

// jsonWalker reads a document token by token and notes the spans of the values that
// complete a path.
type jsonWalker struct {
	data  []byte
	dec   *json.Decoder
	spans []span
}

// start is where the next value begins: past the separators the decoder has not consumed.
func (w *jsonWalker) start() int {
	i := int(w.dec.InputOffset())
	for i < len(w.data) {
		switch w.data[i] {
		case ' ', '\t', '\r', '\n', ':', ',':
			i++
			continue
		}
		break
	}
	return i
}

// value reads one value; live are the rest of the paths that reach it.
func (w *jsonWalker) value(live [][]string) error {
	for _, p := range live {
		if len(p) == 0 { // a path ends here: mask the whole value
			start := w.start()
			if err := w.skip(); err != nil {
				return err
			}
			w.spans = append(w.spans, span{start, int(w.dec.InputOffset())})
			return nil
		}
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	switch {
	case !ok:
		return nil // a scalar no path selects
	case len(live) == 0:
		return w.rest() // nothing below is masked
	}
	for i := 0; w.dec.More(); i++ {
		name := strconv.Itoa(i)
		if delim == '{' {
			k, err := w.dec.Token()
			if err != nil {
				return err
			}
			name, _ = k.(string)
		}
		if err := w.value(follow(live, name)); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // the closing delimiter
	return err
}

// follow is the rest of the live paths past a member or element called name.
func follow(live [][]string, name string) [][]string {
	var out [][]string
	for _, p := range live {
		if p[0] == "*" || p[0] == name {
			out = append(out, p[1:])
		}
	}
	return out
}

// skip reads one whole value.
func (w *jsonWalker) skip() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if _, ok := tok.(json.Delim); ok {
		return w.rest()
	}
	return nil
}

// rest reads the remainder of an object or array whose opening delimiter was read.
func (w *jsonWalker) rest() error {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}
