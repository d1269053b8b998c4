package console

import (
	"net/http"

	"github.com/hookd/hookd/internal/ops"
)

// workers is the operators' view of who holds the delivery workers now:
// the owners holding the most lease slots, by lane, across every process
// (owners.in_flight). An owner's outage shows here as one owner holding
// its share of a lane (docs/design.md, "Isolation").
func (c *Console) workers(w http.ResponseWriter, r *http.Request, s *session) {
	out, err := callAs[ops.InFlightList](r.Context(), c, s, "owners.in_flight", &ops.InFlightIn{Limit: 20})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "workers", s, msg("nav.workers"), out)
}
