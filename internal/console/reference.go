package console

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// reference is the readable form of api/openapi.yaml: what each endpoint does, who may
// call it and what it takes and answers.
type reference struct {
	Title, Version, Description string
	Operations                  []operation
}

type operation struct {
	Method, Path, Summary, Description string
	Tags                               []string
	Parameters                         []parameter
	Responses                          []response
	Body                               bool
}

type parameter struct {
	Name, In, Description string
	Required              bool
}

type response struct{ Code, Description string }

// specDoc is the part of an OpenAPI document the reference page shows.
type specDoc struct {
	Info struct {
		Title, Version, Description string
	}
	// Paths maps a path to its operations by method, and to its shared "parameters".
	Paths      map[string]map[string]yaml.Node
	Components struct {
		Parameters map[string]specParam
		Responses  map[string]specResponse
	}
}

type specParam struct {
	Ref                   string `yaml:"$ref"`
	Name, In, Description string
	Required              bool
}

type specResponse struct {
	Ref         string `yaml:"$ref"`
	Description string
}

type specOp struct {
	Tags                 []string
	Summary, Description string
	Parameters           []specParam
	RequestBody          map[string]any `yaml:"requestBody"`
	Responses            map[string]specResponse
}

var methodOrder = []string{"get", "post", "put", "patch", "delete"}

func parseReference(spec []byte) (*reference, error) {
	var doc specDoc
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("console: api spec: %w", err)
	}
	ref := &reference{Title: doc.Info.Title, Version: doc.Info.Version, Description: doc.Info.Description}
	param := func(p specParam) parameter {
		if p.Ref != "" {
			p = doc.Components.Parameters[path.Base(p.Ref)]
		}
		return parameter{Name: p.Name, In: p.In, Description: p.Description, Required: p.Required}
	}
	for route, item := range doc.Paths {
		var shared []specParam
		if n, ok := item["parameters"]; ok {
			if err := n.Decode(&shared); err != nil {
				return nil, fmt.Errorf("console: api spec: %s parameters: %w", route, err)
			}
		}
		for method, n := range item {
			if !slices.Contains(methodOrder, method) {
				continue
			}
			var op specOp
			if err := n.Decode(&op); err != nil {
				return nil, fmt.Errorf("console: api spec: %s %s: %w", method, route, err)
			}
			o := operation{Method: strings.ToUpper(method), Path: route, Summary: op.Summary,
				Description: op.Description, Tags: op.Tags, Body: op.RequestBody != nil}
			for _, p := range append(slices.Clone(shared), op.Parameters...) {
				o.Parameters = append(o.Parameters, param(p))
			}
			for code, r := range op.Responses {
				if r.Ref != "" {
					r = doc.Components.Responses[path.Base(r.Ref)]
				}
				o.Responses = append(o.Responses, response{Code: code, Description: r.Description})
			}
			slices.SortFunc(o.Responses, func(a, b response) int { return strings.Compare(a.Code, b.Code) })
			ref.Operations = append(ref.Operations, o)
		}
	}
	slices.SortFunc(ref.Operations, func(a, b operation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return slices.Index(methodOrder, strings.ToLower(a.Method)) - slices.Index(methodOrder, strings.ToLower(b.Method))
	})
	return ref, nil
}

// spec serves api/openapi.yaml as is.
func (s *Server) spec(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	_, _ = w.Write(s.cfg.Spec) // the client went away; nothing to do
}

// reference shows the API reference; it needs no sign-in, like the spec itself.
func (s *Server) reference(w http.ResponseWriter, r *http.Request) {
	s.render(w, s.sessions.fromRequest(r), http.StatusOK, "reference", "API reference", "reference", s.ref)
}
