package store

import "fmt"

// MaxContainsBytes bounds what a content search looks for.
const MaxContainsBytes = 1024

// renderContent adds the content searches of f to conds. position() on bytea compares
// bytes: no case folding, no encoding, and % or _ are plain bytes. A GIN trigram index
// (pg_trgm) would index text only, not the payloads' bytes, so the search is a scan of
// the rows the other filters and the id order select, bounded by the statement timeout.
func (f *Filter) renderContent(conds []string, args []any) ([]string, []any) {
	add := func(cond string, vs ...any) {
		n := make([]any, len(vs))
		for i, v := range vs {
			args = append(args, v)
			n[i] = len(args)
		}
		conds = append(conds, fmt.Sprintf(cond, n...))
	}
	if f.ValueContains != nil {
		add("position($%d::bytea in value) > 0", f.ValueContains)
	}
	if f.KeyContains != nil {
		add("position($%d::bytea in key) > 0", f.KeyContains)
	}
	switch {
	case f.Header != "" && f.HeaderValueContains != nil:
		add(`EXISTS (SELECT 1 FROM unnest(header_keys, header_values) h(k, v)
			WHERE h.k = $%d AND position($%d::bytea in h.v) > 0)`, f.Header, f.HeaderValueContains)
	case f.Header != "":
		add("$%d = ANY(header_keys)", f.Header)
	}
	return conds, args
}
