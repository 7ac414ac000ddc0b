package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dlqops/dlq/cmd/dlq-admin/adminconfig"
	"github.com/dlqops/dlq/cmd/dlq-worker/workerconfig"
	"github.com/dlqops/dlq/internal/config"
)

// binary is one configuration the reference documents.
type binary struct {
	name, envPrefix string
	config          config.Validatable
}

// binaries are documented in this order; the prefixes are those of cmd/*/main.go.
func binaries() []binary {
	return []binary{
		{"dlq-worker", "DLQ_WORKER_", &workerconfig.Config{}},
		{"dlq-admin", "DLQ_ADMIN_", &adminconfig.Config{}},
	}
}

// Key is one row of the reference.
type Key struct {
	Path, Type, Default, Env, Meaning string
}

// Reference renders the tables of every binary.
func Reference() ([]byte, error) {
	docs := newComments()
	var b strings.Builder
	for _, bin := range binaries() {
		keys, err := Keys(bin, docs)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "### %s\n\n", bin.name)
		b.WriteString("| key | type | default | environment variable | meaning |\n| --- | --- | --- | --- | --- |\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Path, k.Type, k.Default, k.Env, k.Meaning)
		}
		b.WriteString("\n")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// Keys lists a binary's keys in the order of its structs, with the defaults its
// WithDefaults fills in.
func Keys(bin binary, docs *comments) ([]Key, error) {
	bin.config.WithDefaults()
	var keys []Key
	err := walk(reflect.ValueOf(bin.config).Elem(), "", bin.envPrefix, docs, &keys)
	return keys, err
}

// walk adds the keys of struct v under path; envPrefix is empty inside lists and maps,
// whose keys have no environment variable.
func walk(v reflect.Value, path, envPrefix string, docs *comments, keys *[]Key) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		meaning, err := docs.of(t, f.Name)
		if err != nil {
			return err
		}
		key, fv := path+name, v.Field(i)
		row := func(k Key) error {
			if k.Meaning == "" {
				return fmt.Errorf("%s (%s.%s) has no doc comment: say what the key means", key, t, f.Name)
			}
			*keys = append(*keys, k)
			return nil
		}
		env := "—"
		if envPrefix != "" {
			env = "`" + envPrefix + strings.ToUpper(name) + "`"
		}
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			if err := walk(fv, key+".", nest(envPrefix, name), docs, keys); err != nil {
				return err
			}
			continue
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			if err := row(Key{key, "mapping", "see below", env, meaning}); err != nil {
				return err
			}
			if fv.IsNil() {
				fv = reflect.New(ft.Elem())
			}
			if err := walk(fv.Elem(), key+".", nest(envPrefix, name), docs, keys); err != nil {
				return err
			}
			continue
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			if err := row(Key{key, "list", "—", "—", meaning}); err != nil {
				return err
			}
			if err := walk(defaultedItem(ft.Elem()), key+"[].", "", docs, keys); err != nil {
				return err
			}
			continue
		case ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice:
			env = "—"
		}
		if err := row(Key{key, typeName(ft), defaultOf(fv), env, meaning}); err != nil {
			return err
		}
	}
	return nil
}

func nest(envPrefix, name string) string {
	if envPrefix == "" {
		return ""
	}
	return envPrefix + strings.ToUpper(name) + "_"
}

// itemName stands for a list item's name where a default is derived from it.
const itemName = "<name>"

// defaultedItem is a list item with its defaults filled, named itemName when it has a
// name, so that a default derived from the name reads as such (dlq-worker.<name>).
func defaultedItem(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if f := p.Elem().FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String {
		f.SetString(itemName)
	}
	if d, ok := p.Interface().(interface{ WithDefaults() }); ok {
		d.WithDefaults()
	}
	return p.Elem()
}

var durationType = reflect.TypeOf(time.Duration(0))

// typeName is how the reference names a Go type.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

// defaultOf is a key's value after WithDefaults, as it would be written in YAML.
func defaultOf(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "—"
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		return "`" + formatDuration(time.Duration(v.Int())) + "`"
	case v.Kind() == reflect.String:
		if s := v.String(); s != "" && s != itemName {
			return "`" + s + "`"
		}
		return "—"
	case v.Kind() == reflect.Slice || v.Kind() == reflect.Map:
		if v.Len() == 0 {
			return "—"
		}
	}
	out, err := yaml.Marshal(v.Interface())
	if err != nil {
		return "—"
	}
	return "`" + strings.TrimSpace(string(out)) + "`"
}

// formatDuration writes d as a user would: 30s, 1m, 36h, 90d, 1y; zero is 0 (none).
func formatDuration(d time.Duration) string {
	const day, year = 24 * time.Hour, 365 * 24 * time.Hour
	switch {
	case d == 0:
		return "0"
	case d%year == 0:
		return strconv.FormatInt(int64(d/year), 10) + "y"
	case d%day == 0 && d >= 2*day:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	for _, zero := range []string{"0s", "0m"} {
		if strings.HasSuffix(s, "m"+zero) || strings.HasSuffix(s, "h"+zero) {
			s = strings.TrimSuffix(s, zero)
		}
	}
	return s
}

// comments reads the doc comments of the configuration structs' fields from their source.
type comments struct {
	root  string // the module's directory
	fset  *token.FileSet
	files map[string][]*ast.File // parsed packages, by directory
	cache map[reflect.Type]map[string]string
}

func newComments() *comments {
	return &comments{fset: token.NewFileSet(), files: map[string][]*ast.File{}, cache: map[reflect.Type]map[string]string{}}
}

// of is the meaning of field name of struct t: its doc comment (or trailing comment) as
// one line, with the struct's Go field names replaced by their YAML keys. A field without
// a comment of its own shares the one of the field declared on the line above it (a group
// such as tls_cert_file and tls_key_file).
func (c *comments) of(t reflect.Type, field string) (string, error) {
	m, ok := c.cache[t]
	if !ok {
		var err error
		if m, err = c.read(t); err != nil {
			return "", err
		}
		c.cache[t] = m
	}
	return m[field], nil
}

func (c *comments) read(t reflect.Type) (map[string]string, error) {
	dir, err := c.dir(t.PkgPath())
	if err != nil {
		return nil, err
	}
	files, ok := c.files[dir]
	if !ok {
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(c.fset, n, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		c.files[dir] = files
	}
	keys := yamlKeys(t)
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if ts.Name.Name != t.Name() || !ok {
					continue
				}
				return fieldComments(c.fset, st, keys), nil
			}
		}
	}
	return nil, fmt.Errorf("type %s not found in %s", t, dir)
}

// fieldComments maps each field of st to its comment; a field without one shares the
// comment of the field on the line above it.
func fieldComments(fset *token.FileSet, st *ast.StructType, keys map[string]string) map[string]string {
	out := map[string]string{}
	prev, prevEnd := "", -1
	for _, f := range st.Fields.List {
		text := ""
		switch {
		case f.Doc != nil:
			text = f.Doc.Text()
		case f.Comment != nil:
			text = f.Comment.Text()
		case fset.Position(f.Pos()).Line == prevEnd+1:
			text = prev
		}
		for _, n := range f.Names {
			out[n.Name] = capitalize(oneLine(withoutSubject(text, n.Name), keys))
		}
		prev, prevEnd = text, fset.Position(f.End()).Line
	}
	return out
}

var space = regexp.MustCompile(`\s+`)

// withoutSubject drops the field's own name that opens a Go doc comment ("MaxRetries:",
// "Level is", "Extra holds"), which the key column already says.
func withoutSubject(text, name string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), name)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != ':') {
		return text
	}
	rest = strings.TrimLeft(rest, ": ")
	if strings.HasPrefix(rest, "and ") || strings.HasPrefix(rest, "(") {
		return text // a group's comment names its fields together
	}
	for _, verb := range []string{"is ", "are "} {
		rest = strings.TrimPrefix(rest, verb)
	}
	if rest == "" {
		return text
	}
	return rest
}

// capitalize starts a sentence.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

// oneLine joins a comment into one table cell and names fields by their keys.
func oneLine(text string, keys map[string]string) string {
	s := strings.TrimSpace(space.ReplaceAllString(text, " "))
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		s = regexp.MustCompile(`\b`+n+`\b`).ReplaceAllString(s, "`"+keys[n]+"`")
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// yamlKeys maps t's Go field names to their YAML keys.
func yamlKeys(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			out[f.Name] = name
		}
	}
	return out
}

// dir is the source directory of a package of this module.
func (c *comments) dir(pkgPath string) (string, error) {
	if c.root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				c.root = d
				break
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("no go.mod above %s", wd)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(c.root, "go.mod"))
	if err != nil {
		return "", err
	}
	module := ""
	for _, l := range strings.Split(string(raw), "\n") {
		if m, ok := strings.CutPrefix(l, "module "); ok {
			module = strings.TrimSpace(m)
			break
		}
	}
	rel, ok := strings.CutPrefix(pkgPath, module)
	if !ok {
		return "", fmt.Errorf("%s is not in module %s", pkgPath, module)
	}
	return filepath.Join(c.root, rel), nil
}
