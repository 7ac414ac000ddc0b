// Package apitest checks admin API responses against api/openapi.yaml, for the tests of
// every package that talks to the API.
package apitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	specfile "github.com/dlqops/dlq/api"
)

// An export's JSON lines are read as text here; its test compares each line with what the
// record's own endpoint answers, which is checked against the spec.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson",
		func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			raw, err := io.ReadAll(body)
			return string(raw), err
		})
}

var router = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(specfile.OpenAPI)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	doc.Servers = nil // match any host: test servers listen on random ports
	return legacy.NewRouter(doc)
})

// Spec returns the parsed, validated contract.
func Spec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(specfile.OpenAPI)
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	return doc
}

// Validate fails the test unless the response matches the spec. A path the spec does not
// have must answer a 404 or 405 problem.
func Validate(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	rt, err := router()
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	route, params, err := rt.FindRoute(req)
	if err != nil {
		if (status != http.StatusNotFound && status != http.StatusMethodNotAllowed) || header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s %s is not in the spec and answered %d %s", req.Method, req.URL.Path, status, header.Get("Content-Type"))
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Fatalf("%s %s → %d does not match the spec: %v\n%s", req.Method, req.URL, status, err, body)
	}
}

// Client is an HTTP client that validates every response it receives.
func Client(t testing.TB) *http.Client {
	return &http.Client{Transport: transport{t}}
}

type transport struct{ t testing.TB }

func (v transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	Validate(v.t, req, resp.StatusCode, resp.Header, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
