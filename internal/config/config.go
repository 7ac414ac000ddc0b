// Package config loads a binary's configuration: a YAML file, strictly decoded so that an
// unknown key stops start-up, then environment-variable overrides, then defaults and
// validation supplied by the configuration type itself.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Validatable is implemented by every binary's configuration struct.
type Validatable interface {
	// WithDefaults fills the zero values that have a sane default.
	WithDefaults()
	// Validate reports the first invalid value, naming its key.
	Validate() error
}

// Load reads path (when not empty) into dst, applies environment overrides, fills defaults
// and validates. Every scalar key has an environment variable: envPrefix followed by its
// YAML path in upper case joined by "_" (database.url → DLQ_WORKER_DATABASE_URL), parsed
// exactly as the YAML value would be. Lists and maps are set in the file only.
func Load(path, envPrefix string, dst Validatable) error {
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("config %s: %w%s", path, err, keysAtErrorLines(raw, err))
		}
	}
	if err := applyEnv(reflect.ValueOf(dst).Elem(), envPrefix); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dst.WithDefaults()
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// applyEnv overrides each scalar field of v whose environment variable is set.
func applyEnv(v reflect.Value, prefix string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + strings.ToUpper(name)
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			if err := applyEnv(fv, key+"_"); err != nil {
				return err
			}
		case reflect.Map, reflect.Slice:
		default:
			val, ok := os.LookupEnv(key)
			if !ok {
				continue
			}
			// Quoting keeps a string value a string (yes, 0123) while durations,
			// numbers and booleans parse as they do in the file.
			doc := val
			if fv.Kind() == reflect.String {
				doc = strconv.Quote(val)
			}
			if err := yaml.Unmarshal([]byte(doc), fv.Addr().Interface()); err != nil {
				return fmt.Errorf("environment %s=%q: %w", key, val, err)
			}
		}
	}
	return nil
}

var errLine = regexp.MustCompile(`line (\d+):`)

// keysAtErrorLines names the YAML keys on the lines a decode error points at, since
// yaml.v3 type errors give only line numbers.
func keysAtErrorLines(raw []byte, err error) string {
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return ""
	}
	byLine := map[int]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := strings.TrimPrefix(path+"."+n.Content[i].Value, ".")
				byLine[n.Content[i].Line] = p
				walk(n.Content[i+1], p)
			}
			return
		}
		for _, c := range n.Content {
			walk(c, path)
		}
	}
	walk(&root, "")
	var keys []string
	for _, m := range errLine.FindAllStringSubmatch(err.Error(), -1) {
		line, _ := strconv.Atoi(m[1])
		if k, ok := byLine[line]; ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return " (key " + strings.Join(keys, ", ") + ")"
}
