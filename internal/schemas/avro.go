package schemas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// Avro values become JSON as an operator would write them: records as objects in field
// order, a union of null and one type as that type's value (null or the value), any
// other union as {"branch name": value} (Avro's JSON encoding), bytes and fixed as
// base64, decimals as decimal strings, timestamps as RFC 3339, dates as YYYY-MM-DD and
// times of day as Go durations ("1h2m3.5s"). fromAvroJSON reads the same shapes back.

func decodeAvro(s avro.Schema, data []byte) (json.RawMessage, error) {
	var v any
	if err := avro.Unmarshal(s, data, &v); err != nil {
		return nil, err
	}
	// hamba/avro reads short data as zero values without an error, and ignores bytes
	// past the value: only data that encodes back to itself was read whole and alone.
	if back, err := avro.Marshal(s, v); err != nil || !bytes.Equal(back, data) {
		return nil, fmt.Errorf("the %d bytes are not one value of the schema (short, longer, or of another type)", len(data))
	}
	return json.Marshal(toAvroJSON(s, v))
}

func encodeAvro(s avro.Schema, doc []byte) ([]byte, error) {
	v, err := parseJSON(doc)
	if err != nil {
		return nil, err
	}
	native, err := fromAvroJSON(s, v, "")
	if err != nil {
		return nil, err
	}
	return avro.Marshal(s, native)
}

// object is a JSON object that keeps its keys in the schema's order.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func toAvroJSON(s avro.Schema, v any) any {
	if v == nil {
		return nil
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return toAvroJSON(s.Schema(), v)
	case *avro.RecordSchema:
		m, _ := v.(map[string]any)
		out := make(object, 0, len(s.Fields()))
		for _, f := range s.Fields() {
			out = append(out, member{f.Name(), toAvroJSON(f.Type(), m[f.Name()])})
		}
		return out
	case *avro.UnionSchema:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return v
		}
		for name, inner := range m {
			for _, t := range s.Types() {
				if unionName(t) != name {
					continue
				}
				if nullable(s) {
					return toAvroJSON(t, inner)
				}
				return object{{name, toAvroJSON(t, inner)}}
			}
		}
		return v
	case *avro.ArraySchema:
		items, _ := v.([]any)
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = toAvroJSON(s.Items(), it)
		}
		return out
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, it := range m {
			out[k] = toAvroJSON(s.Values(), it)
		}
		return out
	case *avro.FixedSchema:
		if r, ok := v.(*big.Rat); ok {
			return decimalText(r, s.Logical())
		}
		return fixedBytes(v)
	case *avro.PrimitiveSchema:
		return primitiveJSON(s, v)
	}
	return v
}

func primitiveJSON(s *avro.PrimitiveSchema, v any) any {
	switch x := v.(type) {
	case *big.Rat:
		return decimalText(x, s.Logical())
	case time.Time:
		if l := s.Logical(); l != nil && l.Type() == avro.Date {
			return x.UTC().Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x) // JSON has no NaN or infinity
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	}
	return v
}

func decimalText(r *big.Rat, l avro.LogicalSchema) string {
	scale := 0
	if d, ok := l.(*avro.DecimalLogicalSchema); ok {
		scale = d.Scale()
	}
	return r.FloatString(scale)
}

// fixedBytes returns the bytes of a decoded fixed (a byte array of its size).
func fixedBytes(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array {
		return v
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b
}

// nullable reports whether a union is null and exactly one other type.
func nullable(u *avro.UnionSchema) bool {
	return len(u.Types()) == 2 && (u.Types()[0].Type() == avro.Null || u.Types()[1].Type() == avro.Null)
}

// unionName is how hamba/avro names a union's branch: the full name of a named type,
// else the type, with ".logicalType" when it has one.
func unionName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// fromAvroJSON turns a JSON value into what hamba/avro encodes for schema s, naming the
// path of the first value that does not fit.
func fromAvroJSON(s avro.Schema, v any, path string) (any, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return fromAvroJSON(s.Schema(), v, path)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fieldError(path, "must be an object (record %s), got %s", s.FullName(), jsonKind(v))
		}
		out := make(map[string]any, len(s.Fields()))
		known := make(map[string]bool, len(s.Fields()))
		for _, f := range s.Fields() {
			known[f.Name()] = true
			fv, present := m[f.Name()]
			if !present {
				if !f.HasDefault() {
					return nil, fieldError(join(path, f.Name()), "is required by record %s and has no default", s.FullName())
				}
				out[f.Name()] = f.Default()
				continue
			}
			nv, err := fromAvroJSON(f.Type(), fv, join(path, f.Name()))
			if err != nil {
				return nil, err
			}
			out[f.Name()] = nv
		}
		for k := range m {
			if !known[k] {
				return nil, fieldError(join(path, k), "is not a field of record %s", s.FullName())
			}
		}
		return out, nil
	case *avro.UnionSchema:
		return unionFromJSON(s, v, path)
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return nil, fieldError(path, "must be an array, got %s", jsonKind(v))
		}
		out := make([]any, len(items))
		for i, it := range items {
			nv, err := fromAvroJSON(s.Items(), it, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fieldError(path, "must be an object (map), got %s", jsonKind(v))
		}
		out := make(map[string]any, len(m))
		for k, it := range m {
			nv, err := fromAvroJSON(s.Values(), it, join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		return out, nil
	case *avro.EnumSchema:
		sym, ok := v.(string)
		if !ok || !contains(s.Symbols(), sym) {
			return nil, fieldError(path, "must be one of the symbols %q of enum %s", s.Symbols(), s.FullName())
		}
		return sym, nil
	case *avro.FixedSchema:
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return decimalFromJSON(v, d, path)
		}
		b, err := bytesFromJSON(v, path)
		if err != nil {
			return nil, err
		}
		if len(b) != s.Size() {
			return nil, fieldError(path, "must be %d bytes (fixed %s), got %d", s.Size(), s.FullName(), len(b))
		}
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	case *avro.PrimitiveSchema:
		return primitiveFromJSON(s, v, path)
	}
	return nil, fieldError(path, "has an Avro type this product does not edit (%s)", s.Type())
}

func unionFromJSON(u *avro.UnionSchema, v any, path string) (any, error) {
	if v == nil {
		if _, i := u.Types().Get(string(avro.Null)); i >= 0 {
			return nil, nil
		}
		return nil, fieldError(path, "must not be null")
	}
	// {"branch name": value}, Avro's JSON encoding of a union.
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, inner := range m {
			for _, t := range u.Types() {
				if unionName(t) == name {
					nv, err := fromAvroJSON(t, inner, path)
					if err != nil {
						return nil, err
					}
					return map[string]any{name: nv}, nil
				}
			}
		}
	}
	// Otherwise the first branch the value fits.
	var names []string
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			continue
		}
		names = append(names, unionName(t))
		if nv, err := fromAvroJSON(t, v, path); err == nil {
			return map[string]any{unionName(t): nv}, nil
		}
	}
	return nil, fieldError(path, "fits none of the union's types %q", names)
}

func primitiveFromJSON(s *avro.PrimitiveSchema, v any, path string) (any, error) {
	if l := s.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			return decimalFromJSON(v, l.(*avro.DecimalLogicalSchema), path)
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			str, ok := v.(string)
			if !ok {
				return nil, fieldError(path, "must be an RFC 3339 timestamp string (%s), got %s", l.Type(), jsonKind(v))
			}
			t, err := time.Parse(time.RFC3339Nano, str)
			if err != nil {
				return nil, fieldError(path, "must be an RFC 3339 timestamp (%s): %v", l.Type(), err)
			}
			return t, nil
		case avro.Date:
			str, ok := v.(string)
			t, err := time.Parse(time.DateOnly, str)
			if !ok || err != nil {
				return nil, fieldError(path, "must be a date YYYY-MM-DD, got %s", jsonKind(v))
			}
			return t, nil
		case avro.TimeMillis, avro.TimeMicros:
			str, ok := v.(string)
			d, err := time.ParseDuration(str)
			if !ok || err != nil {
				return nil, fieldError(path, "must be a time of day as a duration (\"13h5m2.5s\"), got %s", jsonKind(v))
			}
			return d, nil
		}
	}
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return nil, fieldError(path, "must be null, got %s", jsonKind(v))
		}
		return nil, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fieldError(path, "must be a boolean, got %s", jsonKind(v))
		}
		return b, nil
	case avro.Int:
		n, err := integer(v, path, math.MinInt32, math.MaxInt32, "int")
		return int32(n), err
	case avro.Long:
		return integer(v, path, math.MinInt64, math.MaxInt64, "long")
	case avro.Float:
		f, err := number(v, path)
		return float32(f), err
	case avro.Double:
		return number(v, path)
	case avro.String:
		str, ok := v.(string)
		if !ok {
			return nil, fieldError(path, "must be a string, got %s", jsonKind(v))
		}
		return str, nil
	case avro.Bytes:
		return bytesFromJSON(v, path)
	}
	return nil, fieldError(path, "has an Avro type this product does not edit (%s)", s.Type())
}

func decimalFromJSON(v any, d *avro.DecimalLogicalSchema, path string) (any, error) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case json.Number:
		text = x.String()
	default:
		return nil, fieldError(path, "must be a decimal (a string or number), got %s", jsonKind(v))
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fieldError(path, "must be a decimal, got %q", text)
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale())), nil)))
	if !scaled.IsInt() {
		return nil, fieldError(path, "has more than the %d decimal places of its decimal type", d.Scale())
	}
	if digits := len(new(big.Int).Abs(scaled.Num()).String()); digits > d.Precision() {
		return nil, fieldError(path, "has more than the %d digits of its decimal type", d.Precision())
	}
	return r, nil
}

func bytesFromJSON(v any, path string) ([]byte, error) {
	str, ok := v.(string)
	if !ok {
		return nil, fieldError(path, "must be base64 text, got %s", jsonKind(v))
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, fieldError(path, "must be standard base64")
	}
	return b, nil
}

func integer(v any, path string, lo, hi int64, kind string) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldError(path, "must be an integer (%s), got %s", kind, jsonKind(v))
	}
	i, err := n.Int64()
	if err != nil || i < lo || i > hi {
		return 0, fieldError(path, "must be an integer within Avro %s, got %s", kind, n)
	}
	return i, nil
}

func number(v any, path string) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldError(path, "must be a number, got %s", jsonKind(v))
	}
	f, err := n.Float64()
	if err != nil {
		return 0, fieldError(path, "must be a number, got %s", n)
	}
	return f, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
