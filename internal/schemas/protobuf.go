package schemas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// A Protobuf schema is a .proto file; its references are the files it imports, by the
// names it imports them with. The data names its message by the message indexes.

const mainProto = "registry-schema.proto"

func (s *schema) parseProtobuf(refs []reference) error {
	files := map[string]string{mainProto: s.text}
	for _, ref := range refs {
		files[ref.name] = ref.text
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files)})}
	compiled, err := c.Compile(context.Background(), mainProto)
	if err != nil {
		return err
	}
	s.protoFile = compiled[0]
	return nil
}

// messageAt finds the message of the indexes: the top-level message, then nested ones.
func messageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		if i >= msgs.Len() {
			return nil, fmt.Errorf("message index %v is not in the schema", indexes)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("the message indexes %v name no message", indexes)
	}
	return md, nil
}

func decodeProtobuf(fd protoreflect.FileDescriptor, data []byte) (json.RawMessage, error) {
	indexes, rest, err := readMessageIndexes(data)
	if err != nil {
		return nil, err
	}
	md, err := messageAt(fd, indexes)
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rest, msg); err != nil {
		return nil, fmt.Errorf("message %s: %w", md.FullName(), err)
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// encodeProtobuf encodes doc as the message that like names.
func encodeProtobuf(fd protoreflect.FileDescriptor, like, doc []byte) ([]byte, error) {
	indexes, _, err := readMessageIndexes(like)
	if err != nil {
		return nil, err
	}
	md, err := messageAt(fd, indexes)
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(doc, msg); err != nil {
		return nil, protoFieldError(md, err)
	}
	data, err := proto.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return append(writeMessageIndexes(indexes), data...), nil
}

// protoFieldError names the field protojson complains about: its messages quote the
// field (`invalid value for int32 field qty: "x"`, `unknown field "colour"`).
func protoFieldError(md protoreflect.MessageDescriptor, err error) error {
	msg := err.Error()
	for _, marker := range []string{" field ", "unknown field "} {
		if i := strings.LastIndex(msg, marker); i >= 0 {
			name := strings.Trim(strings.Fields(msg[i+len(marker):] + " ")[0], `":`)
			if name != "" {
				return fieldError(name, "does not fit message %s: %s", md.FullName(), msg)
			}
		}
	}
	return fieldError("", "does not fit message %s: %s", md.FullName(), msg)
}
