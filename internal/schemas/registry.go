// Package schemas decodes keys and values in the Confluent Schema Registry wire format
// (Avro, Protobuf, JSON Schema) into JSON, and encodes an operator's JSON back under a
// schema id, through a real Confluent-compatible registry. Schemas are immutable under
// their id, so each is fetched and parsed once.
package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry"
	"github.com/prometheus/client_golang/prometheus"
)

// The formats, as the API names them.
const (
	FormatAvro     = "avro"
	FormatProtobuf = "protobuf"
	FormatJSON     = "json"
)

// Decoded is what the registry made of a key or value in the wire format.
type Decoded struct {
	Format   string
	SchemaID int
	// Subject and Version name the schema where the registry says (empty and 0 else).
	Subject string
	Version int
	// Schema is the schema's text, for the operator to read beside the data.
	Schema string
	// JSON is the decoded data; nil when it did not decode, and Error says why.
	JSON  json.RawMessage
	Error string
}

// Registry decodes and encodes through one Schema Registry.
type Registry struct {
	client  schemaregistry.Client
	http    *http.Client
	mu      sync.Mutex
	parsed  map[int]*schema
	decodes *prometheus.CounterVec
}

// New connects to the registry of cfg (nil when none is configured) and registers the
// decode counter.
func New(cfg Config, reg prometheus.Registerer) (*Registry, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	cc, err := cfg.clientConfig()
	if err != nil {
		return nil, err
	}
	client, err := schemaregistry.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	r := &Registry{client: client, http: cc.HTTPClient, parsed: map[int]*schema{},
		decodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dlq_admin_schema_decodes_total",
			Help: "Keys and values in the Schema Registry wire format by format and outcome (decoded, unknown_schema, undecodable).",
		}, []string{"format", "outcome"})}
	if reg != nil {
		if err := reg.Register(r.decodes); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Close drops the connections to the registry.
func (r *Registry) Close() {
	if r != nil {
		r.http.CloseIdleConnections()
	}
}

// Decode decodes b when it is in the wire format; nil when it is not. A schema the
// registry does not know, or bytes that do not fit their schema, give a Decoded without
// JSON that says why: the caller still shows the bytes.
func (r *Registry) Decode(b []byte) *Decoded {
	id, data, ok := splitWire(b)
	if !ok {
		return nil
	}
	d := &Decoded{SchemaID: id}
	s, err := r.schema(id)
	if err != nil {
		d.Error = err.Error()
		r.decodes.WithLabelValues("unknown", "unknown_schema").Inc()
		return d
	}
	d.Format, d.Subject, d.Version, d.Schema = s.format, s.subject, s.version, s.text
	d.JSON, err = s.decode(data)
	if err != nil {
		d.JSON, d.Error = nil, fmt.Sprintf("the bytes do not decode with %s schema %d: %v", s.format, id, err)
		r.decodes.WithLabelValues(s.format, "undecodable").Inc()
		return d
	}
	r.decodes.WithLabelValues(s.format, "decoded").Inc()
	return d
}

// ErrNotWireFormat: the bytes an edit replaces are not in the wire format, so no schema
// says how to encode the JSON.
var ErrNotWireFormat = errors.New("not in the Schema Registry wire format")

// Encode encodes a JSON document as the bytes like were: under like's schema id (and,
// for Protobuf, its message), in the wire format. A document that does not fit the
// schema gives a *FieldError naming where.
func (r *Registry) Encode(like, doc []byte) ([]byte, error) {
	id, likeData, ok := splitWire(like)
	if !ok {
		return nil, ErrNotWireFormat
	}
	s, err := r.schema(id)
	if err != nil {
		return nil, err
	}
	data, err := s.encode(likeData, doc)
	if err != nil {
		return nil, err
	}
	return joinWire(id, data), nil
}

// ErrNoSuchVersion: the version asked for is not one of the subject of the schema the
// record's bytes were written with.
var ErrNoSuchVersion = errors.New("no such version of the subject")

// EncodeVersion encodes a JSON document as Encode does, but under version of the subject
// of like's schema: a newer (or older) compatible version chosen by the operator. Only a
// version of that subject is taken, so an edit never changes what the data is.
func (r *Registry) EncodeVersion(like, doc []byte, version int) ([]byte, error) {
	id, likeData, ok := splitWire(like)
	if !ok {
		return nil, ErrNotWireFormat
	}
	s, err := r.schema(id)
	if err != nil {
		return nil, err
	}
	if s.subject == "" {
		return nil, fmt.Errorf("%w: the registry names no subject for schema %d", ErrNoSuchVersion, id)
	}
	md, err := r.client.GetSchemaMetadata(s.subject, version)
	if err != nil {
		return nil, fmt.Errorf("%w: subject %q has no version %d (%v)", ErrNoSuchVersion, s.subject, version, err)
	}
	target, err := r.schema(md.ID)
	if err != nil {
		return nil, err
	}
	data, err := target.encode(likeData, doc)
	if err != nil {
		return nil, err
	}
	return joinWire(md.ID, data), nil
}

// ErrUnknownSchema: the registry does not know the schema id (or cannot be asked).
var ErrUnknownSchema = errors.New("unknown schema")

// schema fetches and parses schema id once; failures are not kept, so a schema
// registered later, or a registry back from an outage, is found on the next call.
func (r *Registry) schema(id int) (*schema, error) {
	r.mu.Lock()
	s, ok := r.parsed[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	info, err := r.client.GetBySubjectAndID("", id)
	if err != nil {
		return nil, fmt.Errorf("%w: the registry has no schema %d (%v)", ErrUnknownSchema, id, err)
	}
	s = &schema{id: id, text: info.Schema}
	if versions, err := r.client.GetSubjectsAndVersionsByID(id); err == nil && len(versions) > 0 {
		s.subject, s.version = versions[0].Subject, versions[0].Version
	}
	refs, err := r.references(info.References, map[string]bool{})
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrUnknownSchema, id, err)
	}
	switch strings.ToUpper(info.SchemaType) {
	case "", "AVRO":
		s.format = FormatAvro
		err = s.parseAvro(refs)
	case "PROTOBUF":
		s.format = FormatProtobuf
		err = s.parseProtobuf(refs)
	case "JSON":
		s.format = FormatJSON
		err = s.parseJSONSchema(refs)
	default:
		err = fmt.Errorf("schema type %q is not supported", info.SchemaType)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d does not parse: %v", ErrUnknownSchema, id, err)
	}
	r.mu.Lock()
	r.parsed[id] = s
	r.mu.Unlock()
	return s, nil
}

// reference is a schema another one refers to, dependencies first.
type reference struct{ name, text string }

func (r *Registry) references(refs []schemaregistry.Reference, seen map[string]bool) ([]reference, error) {
	var out []reference
	for _, ref := range refs {
		if seen[ref.Name] {
			continue
		}
		seen[ref.Name] = true
		md, err := r.client.GetSchemaMetadata(ref.Subject, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("reference %q (subject %q version %d): %v", ref.Name, ref.Subject, ref.Version, err)
		}
		deeper, err := r.references(md.References, seen)
		if err != nil {
			return nil, err
		}
		out = append(append(out, deeper...), reference{ref.Name, md.Schema})
	}
	return out, nil
}
