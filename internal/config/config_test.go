package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// sample stands for a binary's configuration: a section, a list of named items, a map,
// durations, and a value read from a file it names. steps records the order in which
// Load calls it.
type sample struct {
	Name    string        `yaml:"name"`
	Grace   time.Duration `yaml:"grace"`
	Count   int           `yaml:"count"`
	Section struct {
		URL     string        `yaml:"url"`
		Timeout time.Duration `yaml:"timeout"`
	} `yaml:"section"`
	Items []struct {
		Name string        `yaml:"name"`
		Wait time.Duration `yaml:"wait"`
		Max  int           `yaml:"max"`
	} `yaml:"items"`
	Extra      map[string]string `yaml:"extra"`
	SecretFile string            `yaml:"secret_file"`

	secret string
	steps  []string
}

func (s *sample) ReadFiles() error {
	s.steps = append(s.steps, "files")
	if s.SecretFile == "" {
		return nil
	}
	raw, err := os.ReadFile(s.SecretFile)
	if err != nil {
		return fmt.Errorf("secret_file: %w", err)
	}
	s.secret = string(raw)
	return nil
}

func (s *sample) WithDefaults() {
	s.steps = append(s.steps, "defaults")
	if s.Count == 0 {
		s.Count = 3
	}
}

func (s *sample) Validate() error {
	s.steps = append(s.steps, "validate")
	if s.Count < 1 {
		return fmt.Errorf("count: must be at least 1, got %d", s.Count)
	}
	return nil
}

// The file is read first, then each scalar key's environment variable overrides it (a
// string stays a string), then the files it names are read, then defaults fill what is
// left and validation runs.
func TestLoadFileEnvDefaults(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cr3t"), 0o600))
	p := writeFile(t, "name: file\nsection:\n  url: postgres://file\n  timeout: 5s\nextra:\n  a: b\n")
	t.Setenv("SAMPLE_SECTION_URL", "postgres://env")
	t.Setenv("SAMPLE_NAME", "0123")
	t.Setenv("SAMPLE_GRACE", "1m30s")
	t.Setenv("SAMPLE_SECRET_FILE", secret)
	t.Setenv("SAMPLE_EXTRA", "ignored: maps are set in the file only")
	var s sample
	require.NoError(t, Load(p, "SAMPLE_", &s))
	require.Equal(t, "postgres://env", s.Section.URL, "environment overrides the file")
	require.Equal(t, 5*time.Second, s.Section.Timeout, "the file's value stays where no variable is set")
	require.Equal(t, "0123", s.Name, "a string variable stays a string")
	require.Equal(t, 90*time.Second, s.Grace)
	require.Equal(t, map[string]string{"a": "b"}, s.Extra)
	require.Equal(t, "s3cr3t", s.secret, "the file named by the environment is read")
	require.Equal(t, 3, s.Count, "defaulted")
	require.Equal(t, []string{"files", "defaults", "validate"}, s.steps)

	var none sample
	require.NoError(t, Load("", "SAMPLE_", &none), "no file: the environment and defaults only")
	require.Equal(t, "postgres://env", none.Section.URL)
}

func TestLoadRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		file, env, want string
	}{
		"unknown key":        {file: "section:\n  url: x\n  ulr: y\n", want: "field ulr not found"},
		"bad env duration":   {env: "soon", want: "SAMPLE_GRACE"},
		"wrong type in file": {file: "count: many\n", want: "(key count)"},
		"invalid value":      {file: "count: -1\n", want: "count: must be at least 1, got -1"},
		"missing named file": {file: "secret_file: /nonexistent/secret\n", want: "secret_file: open /nonexistent/secret"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("SAMPLE_GRACE", tc.env)
			}
			var s sample
			err := Load(writeFile(t, tc.file), "SAMPLE_", &s)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	var s sample
	err := Load(filepath.Join(t.TempDir(), "nope.yaml"), "SAMPLE_", &s)
	require.ErrorContains(t, err, "no such file")
	require.True(t, errors.Is(err, os.ErrNotExist))
}

// A type error names the key that holds the bad value, also inside a flow mapping (all keys
// on one line) and inside a list of named items.
func TestLoadTypeErrorNamesTheKey(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"flow mapping": {
			file: "items:\n  - {name: a, wait: 30, max: 2}\n",
			want: "(key items[a].wait)",
		},
		"block mapping": {
			file: "items:\n  - name: a\n    wait: 1s\n  - name: b\n    wait: forever\n",
			want: "(key items[b].wait)",
		},
		"unnamed item": {
			file: "items:\n  - wait: 1s\n    max: lots\n",
			want: "(key items[0].max)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var s sample
			err := Load(writeFile(t, tc.file), "SAMPLE_", &s)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Durations take days and years, in the file (plain, quoted, in a flow mapping, in a list)
// and in the environment; a value the parser refuses is still named by its key.
func TestLoadDurationsTakeDaysAndYears(t *testing.T) {
	const day = 24 * time.Hour
	t.Setenv("SAMPLE_GRACE", "1y")
	var s sample
	require.NoError(t, Load(writeFile(t, "section: {url: x, timeout: '400d'}\n"+
		"items:\n  - name: a\n    wait: \"1d12h\"\n  - {name: b, wait: 90d}\n"), "SAMPLE_", &s))
	require.Equal(t, 365*day, s.Grace, "from the environment")
	require.Equal(t, 400*day, s.Section.Timeout)
	require.Equal(t, 36*time.Hour, s.Items[0].Wait)
	require.Equal(t, 90*day, s.Items[1].Wait)

	var bad sample
	err := Load(writeFile(t, "section:\n  timeout: 2yx\n"), "SAMPLE_", &bad)
	require.ErrorContains(t, err, "(key section.timeout)")
}
