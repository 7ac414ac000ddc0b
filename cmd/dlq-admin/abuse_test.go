package main

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/procstat"
)

// The abuse suite against the real binary: each test is one attack of the README's
// security section, named with the OWASP API Security Top 10 (2023) item it covers.

// filler is a body of n bytes: head, then 'x' up to n.
type filler struct {
	head string
	n    int
}

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	k := min(len(p), f.n)
	c := copy(p[:k], f.head)
	f.head = f.head[c:]
	for i := c; i < k; i++ {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// API4 (unrestricted resource consumption): many parallel oversized posts without a token
// (URL-encoded and multipart sign-in forms, with and without a Content-Length, and API
// bodies) leave dlq-admin's peak resident memory flat: no body is buffered before the
// request is known to be allowed one.
func TestAbuseOversizedPostsKeepMemoryFlat(t *testing.T) {
	t.Parallel()
	admin := startAdmin(t, "")
	type attack struct {
		path, contentType, head string
		size, parallel          int
		chunked                 bool
	}
	const boundary = "b0undary"
	attacks := []attack{
		{"/ui/login", "application/x-www-form-urlencoded", "csrf=a&token=", 9 << 20, 24, false},
		{"/ui/login", "application/x-www-form-urlencoded", "csrf=a&token=", 9 << 20, 24, true},
		{"/ui/login", "multipart/form-data; boundary=" + boundary,
			"--" + boundary + "\r\nContent-Disposition: form-data; name=\"token\"; filename=\"t\"\r\n\r\n", 30 << 20, 16, false},
		{"/ui/records/1/discard", "application/x-www-form-urlencoded", "csrf=a&reason=", 9 << 20, 8, true},
		{"/v1/bulk/replay", "application/json", `{"ids":[`, 9 << 20, 8, false},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for _, a := range attacks {
		for range a.parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var body io.Reader = &filler{head: a.head, n: a.size}
				if a.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
				req, err := http.NewRequest(http.MethodPost, admin.url+a.path, body)
				if err != nil {
					return
				}
				if !a.chunked {
					req.ContentLength = int64(a.size)
				}
				req.Header.Set("Content-Type", a.contentType)
				code := 0 // the server closed the connection while the body was sent
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	t.Logf("answers by status (0: connection closed while sending): %v", codes)
	peak, err := procstat.PeakRSSMiB(admin.proc.Pid())
	require.NoError(t, err)
	t.Logf("dlq-admin peak RSS: %.0f MiB", peak)
	require.Less(t, peak, 150.0, "dlq-admin buffered oversized bodies")
	for code := range codes {
		require.True(t, code == 0 || code >= 400, "an oversized post was accepted: %v", codes)
	}
	require.Positive(t, codes[http.StatusRequestEntityTooLarge]+codes[http.StatusUnsupportedMediaType], "%v", codes)
}
