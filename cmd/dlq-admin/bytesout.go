package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlqops/dlq/internal/api"
)

// raw is the bytes the API carried: base64 always holds them, UTF-8 text only a reading.
func raw(b api.Bytes) ([]byte, error) {
	return base64.StdEncoding.DecodeString(b.Base64)
}

// hexBlock is a hex dump of b on lines of its own (the table's cell starts on the next
// line): offsets, bytes and their printable characters, nothing a sender wrote that could
// drive the terminal.
func hexBlock(b api.Bytes) string {
	if b.Null {
		return "(null)"
	}
	data, err := raw(b)
	if err != nil {
		return "(not base64: " + err.Error() + ")"
	}
	if len(data) == 0 {
		return "(empty)"
	}
	return fmt.Sprintf("%d bytes\n%s", len(data), strings.TrimRight(hex.Dump(data), "\n"))
}

// writeValue writes the record's value, byte for byte, to the file path; a null value
// (a tombstone) has no bytes to write and is refused rather than written as an empty file.
func writeValue(cmd *cobra.Command, path string, d api.RecordDetail) error {
	if d.Value.Null {
		return errors.New("the value is null (a tombstone): nothing to write")
	}
	data, err := raw(d.Value)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d bytes of record %d's value to %s\n", len(data), d.Record.ID, path)
	return nil
}
