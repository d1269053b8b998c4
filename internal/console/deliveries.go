package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

type logData struct {
	Endpoint   *ops.EndpointView
	Deliveries *ops.DeliveryList
	Filter     logFilter
	Types      []string
	Error      string
	NextURL    string
}

// logFilter is the log's filter form as typed (datetime-local values).
type logFilter struct {
	State, EventType, Since, Until string
}

const localTime = "2006-01-02T15:04"

// rfc3339 turns a datetime-local value (UTC) into the op's RFC 3339.
func rfc3339(v string) string {
	if v == "" {
		return ""
	}
	if t, err := time.Parse(localTime, v); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return v // the op says what is wrong with it
}

func (c *Console) deliveryLog(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	id := r.PathValue("id")
	e, err := callAs[ops.EndpointView](ctx, c, s, "webhooks.get", &ops.EndpointRef{ID: id})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	f := logFilter{State: q.Get("state"), EventType: q.Get("event_type"), Since: q.Get("since"), Until: q.Get("until")}
	in := &ops.DeliveriesIn{ID: id, Limit: 50, Before: q.Get("before"), State: f.State, EventType: f.EventType, Since: rfc3339(f.Since), Until: rfc3339(f.Until)}
	d := logData{Endpoint: e, Filter: f, Types: e.EventTypes}
	ds, err := callAs[ops.DeliveryList](ctx, c, s, "webhooks.deliveries", in)
	status := http.StatusOK
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		d.Error, status = c.localeOf(r, s).Err(err), http.StatusUnprocessableEntity
		ds = &ops.DeliveryList{Data: []*ops.DeliveryView{}}
	case err != nil:
		c.fail(w, r, s, err)
		return
	}
	d.Deliveries = ds
	if ds.Next != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("before", ds.Next)
		d.NextURL = "?" + next.Encode()
	}
	if q.Get("fragment") == "rows" {
		// The endpoint page's live refresh: only the rows.
		c.renderFragment(w, r, s, "rows", d.Deliveries)
		return
	}
	c.render(w, r, status, "deliveries", s, msg("title.deliveries"), d)
}

func (c *Console) showDelivery(w http.ResponseWriter, r *http.Request, s *session) {
	d, err := callAs[ops.DeliveryDetail](r.Context(), c, s, "webhooks.delivery", &ops.DeliveryRef{EndpointID: r.PathValue("id"), ID: r.PathValue("delivery")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "delivery", s, msg("title.delivery", d.ID), d)
}
