package console

import (
	"net/url"
	"strconv"
	"strings"
)

// selectedIDs are the records an operator ticked on the records page (the form's "id"
// fields), for a bulk job by ids instead of by the view's filter; ok is false when one is
// not a record id.
func selectedIDs(form url.Values) (ids []int64, ok bool) {
	for _, v := range form["id"] {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || id <= 0 {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}
