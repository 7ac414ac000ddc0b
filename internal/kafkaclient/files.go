package kafkaclient

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// ReadFiles reads each of ExtraFiles into Extra, without one trailing newline (as a
// file written by `echo` or an editor ends). A property may not be in both maps.
// Errors name the key and the file, never what the file holds.
func (k *Config) ReadFiles() error {
	props := slices.Sorted(maps.Keys(k.ExtraFiles))
	for _, prop := range props {
		if _, both := k.Extra[prop]; both {
			return fmt.Errorf("kafka.extra_files.%s: also set in kafka.extra; keep one", prop)
		}
		raw, err := os.ReadFile(k.ExtraFiles[prop])
		if err != nil {
			return fmt.Errorf("kafka.extra_files.%s: %w", prop, err)
		}
		if k.Extra == nil {
			k.Extra = map[string]string{}
		}
		v := strings.TrimSuffix(string(raw), "\n")
		k.Extra[prop] = strings.TrimSuffix(v, "\r")
	}
	return nil
}
