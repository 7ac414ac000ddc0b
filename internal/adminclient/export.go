package adminclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/dlqops/dlq/internal/adminclient/oapi"
	"github.com/dlqops/dlq/internal/api"
)

// Export writes the JSON lines of GET /v1/records/export to w and returns how many records
// it wrote. An export the server cut short (its connection aborted, or a last line without
// its end) is an error saying how many whole records arrived: a truncated file never
// passes for a complete one.
func (c *Client) Export(ctx context.Context, params api.ExportRecordsParams, w io.Writer) (int64, error) {
	req, err := oapi.NewExportRecordsRequest(c.api.Server, &params)
	if err != nil {
		return 0, err
	}
	req = req.WithContext(ctx)
	for _, edit := range c.api.RequestEditors {
		if err := edit(ctx, req); err != nil {
			return 0, err
		}
	}
	resp, err := c.streaming.Do(req)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 300 {
		_, err := answer[struct{}](resp, nil)
		return 0, err
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var n int64
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && bytes.HasSuffix(line, []byte("\n")) {
			if _, werr := w.Write(line); werr != nil {
				return n, werr
			}
			n++
		}
		switch {
		case err == io.EOF && len(line) == 0:
			return n, nil
		case err == io.EOF:
			return n, fmt.Errorf("export cut short: %d whole records arrived, then a partial line", n)
		case err != nil:
			return n, fmt.Errorf("export cut short after %d records: %w", n, err)
		}
	}
}
