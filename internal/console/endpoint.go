package console

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/hookd/hookd/internal/ops"
)

type endpointData struct {
	Endpoint   *ops.EndpointView
	Chart      template.HTML
	Totals     ops.HourOutcomes
	Deliveries *ops.DeliveryList
	Notice     string
	Grant      *grantChoice
	ShowGrant  bool
}

// notices are what the endpoint page says after an action (?done=…).
func notice(r *http.Request, w words) string {
	switch r.URL.Query().Get("done") {
	case "saved":
		return "Saved."
	case "enabled":
		return "Enabled: its failure state is cleared and deliveries resume."
	case "disabled":
		return "Disabled: it gets no new deliveries until you enable it."
	case "test":
		return "Test event sent; its delivery appears below."
	case "redelivered":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n == 0 {
			return "Nothing to redeliver: this " + w.Endpoint + " has no failed deliveries."
		}
		return fmt.Sprintf("%d failed deliveries queued again.", n)
	case "retried":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n == 0 {
			return "Nothing was waiting: every pending delivery of this " + w.Endpoint + " is already due."
		}
		return fmt.Sprintf("%d waiting deliveries are due now.", n)
	case "expired":
		return "Old keys no longer sign: deliveries carry only the current key's signature."
	}
	return ""
}

func (c *Console) showEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	ref := &ops.EndpointRef{ID: r.PathValue("id")}
	e, err := callAs[ops.EndpointView](ctx, c, s, "webhooks.get", ref)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	st, err := callAs[ops.EndpointStats](ctx, c, s, "webhooks.stats", ref)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	ds, err := callAs[ops.DeliveryList](ctx, c, s, "webhooks.deliveries", &ops.DeliveriesIn{ID: e.ID, Limit: 20})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	grants, err := c.grantsByID(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := c.wordsOf(r, s)
	d := endpointData{Endpoint: e, Chart: chart(st.Hours), Deliveries: ds, Grant: grants.of(e), ShowGrant: v.Grants || e.GrantID != ""}
	for _, h := range st.Hours {
		d.Totals.Delivered += h.Delivered
		d.Totals.Failed += h.Failed
		d.Totals.Pending += h.Pending
	}
	d.Notice = notice(r, v)
	c.render(w, r, http.StatusOK, "endpoint", s, e.URL, d)
}

// wordsOf is the session owner's words (the layout's, for handlers).
func (c *Console) wordsOf(r *http.Request, s *session) words {
	if o, err := c.cfg.DB.Q().GetOwner(r.Context(), s.OwnerID); err == nil {
		return wordsFor(o.Profile)
	}
	return standardWords
}
