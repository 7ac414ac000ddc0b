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

// FileReader is implemented by configurations that take values from files they name
// (secrets mounted into a container, which must stay out of the file itself): Load calls
// ReadFiles after the environment overrides, before the defaults and validation.
type FileReader interface {
	ReadFiles() error
}

// Load reads path (when not empty) into dst, applies environment overrides, fills defaults
// and validates. Every scalar key has an environment variable: envPrefix followed by its
// YAML path in upper case joined by "_" (database.url → DLQ_WORKER_DATABASE_URL), parsed
// exactly as the YAML value would be. Durations also take days and years (90d, 2y).
// Lists and maps are set in the file only. Then a
// FileReader reads the files it names.
func Load(path, envPrefix string, dst Validatable) error {
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(expandDurationsInFile(raw, dst)))
		dec.KnownFields(true)
		if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("config %s: %w%s", path, err, keysAtErrorLines(raw, err))
		}
	}
	if err := applyEnv(reflect.ValueOf(dst).Elem(), envPrefix); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if f, ok := dst.(FileReader); ok {
		if err := f.ReadFiles(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
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
			switch {
			case fv.Kind() == reflect.String:
				doc = strconv.Quote(val)
			case fv.Type() == durationType:
				doc = expandDays(val)
			}
			if err := yaml.Unmarshal([]byte(doc), fv.Addr().Interface()); err != nil {
				return fmt.Errorf("environment %s=%q: %w", key, val, err)
			}
		}
	}
	return nil
}

// errLine reads yaml.v3's type errors: "line 6: cannot unmarshal !!int `30` into ...";
// values longer than 10 bytes are shown as their first 7 and "...".
var errLine = regexp.MustCompile("line (\\d+): cannot unmarshal \\S+(?: `([^`]*)`)?")

// keyAt is a mapping key: its path and value node.
type keyAt struct {
	path  string
	value *yaml.Node
}

// keysAtErrorLines names the YAML keys an error points at, since yaml.v3 type errors give
// only line numbers: the keys on that line, narrowed to the one holding the quoted value
// when several share the line (a flow mapping). List items are named by their `name`
// key when they have one (routes[orders]), else by their index (routes[0]).
func keysAtErrorLines(raw []byte, err error) string {
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return ""
	}
	byLine := map[int][]keyAt{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := strings.TrimPrefix(path+"."+n.Content[i].Value, ".")
				byLine[n.Content[i].Line] = append(byLine[n.Content[i].Line], keyAt{p, n.Content[i+1]})
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+itemName(c, i)+"]")
			}
		default:
			for _, c := range n.Content {
				walk(c, path)
			}
		}
	}
	walk(&root, "")
	var keys []string
	for _, m := range errLine.FindAllStringSubmatch(err.Error(), -1) {
		line, _ := strconv.Atoi(m[1])
		cands := byLine[line]
		var hits []string
		for _, k := range cands {
			if m[2] != "" && k.value.Kind == yaml.ScalarNode && (k.value.Value == m[2] ||
				strings.HasSuffix(m[2], "...") && strings.HasPrefix(k.value.Value, strings.TrimSuffix(m[2], "..."))) {
				hits = append(hits, k.path)
			}
		}
		if len(hits) == 0 {
			for _, k := range cands {
				hits = append(hits, k.path)
			}
		}
		keys = append(keys, hits...)
	}
	if len(keys) == 0 {
		return ""
	}
	return " (key " + strings.Join(keys, ", ") + ")"
}

// itemName is how a list item is named in a key path: its `name` when it has one.
func itemName(n *yaml.Node, i int) string {
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == "name" && n.Content[j+1].Kind == yaml.ScalarNode && n.Content[j+1].Value != "" {
				return n.Content[j+1].Value
			}
		}
	}
	return strconv.Itoa(i)
}
