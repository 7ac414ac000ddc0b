package api

import (
	"net/http"

	"github.com/dlqops/dlq/internal/store"
)

// setRouteBreaker forces a route's breaker open or closed, or gives it back to the
// automatic breaker; the store writes the audit row with the operator's reason.
func setRouteBreaker(st *store.Store) handler {
	return func(c *call) (int, any, error) {
		route, err := routeParam(c)
		if err != nil {
			return 0, nil, err
		}
		var req BreakerRequest
		if err := decodeBody(c, &req, false); err != nil {
			return 0, nil, err
		}
		override := store.BreakerAuto
		switch req.Mode {
		case BreakerRequestModeOpen:
			override = store.BreakerForceOpen
		case BreakerRequestModeClosed:
			override = store.BreakerForceClosed
		case BreakerRequestModeAuto:
		default:
			return 0, nil, badParam("mode", "open, closed or auto")
		}
		why, err := reason("reason", req.Reason)
		if err != nil {
			return 0, nil, err
		}
		rc, err := st.SetBreakerOverride(c.r.Context(), route, override, why, c.actor)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, toRouteControl(&rc), nil
	}
}
