package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dlqops/dlq/internal/store"
)

// maxNamedRoutes bounds how many registered routes a refused route filter names.
const maxNamedRoutes = 20

// knownRoute refuses a route filter that names no route a dlq-worker registered: a typo
// (order for orders) would otherwise select nothing and read as "no records". Until a
// worker registered its routes the API does not know them and lets any name through. A
// token scoped to topics does not see the routes, so its filter is not checked: the
// answer would tell it which routes exist.
func knownRoute(c *call, st *store.Store, field, route string) error {
	if route == "" || len(c.principal.Topics) > 0 {
		return nil
	}
	names, err := st.RegisteredRoutes(c.r.Context())
	if err != nil {
		return err
	}
	if len(names) == 0 || slices.Contains(names, route) {
		return nil
	}
	more := ""
	if len(names) > maxNamedRoutes {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamedRoutes)
		names = names[:maxNamedRoutes]
	}
	return badParam(field, "unknown route %q; registered routes: %s%s", route, strings.Join(names, ", "), more)
}
