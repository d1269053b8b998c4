package console

import (
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
	// Recover is the Recover… dialog's form: open, with its error, when
	// the last one was refused.
	Recover recoverForm
	// Export is the Export… dialog's form, likewise.
	Export exportForm
}

// notices are what the endpoint page says after an action (?done=…).
func notice(r *http.Request, l *locale, w wordsView) string {
	switch done := r.URL.Query().Get("done"); done {
	case "saved", "enabled", "disabled", "test", "expired":
		return l.T("notice." + done)
	case "redelivered", "retried", "recovered":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n == 0 {
			return l.T("notice."+done+".none", w.Endpoint)
		}
		return l.T("notice."+done, n)
	}
	return ""
}

func (c *Console) showEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	c.endpointPage(w, r, s, http.StatusOK, endpointForms{Recover: recoverForm{States: []string{"failed"}}})
}

// endpointPage renders the endpoint page with the Recover… dialog's form
// as given.
// endpointForms are the endpoint page's dialogs as typed.
type endpointForms struct {
	Recover recoverForm
	Export  exportForm
}

func (c *Console) endpointPage(w http.ResponseWriter, r *http.Request, s *session, status int, forms endpointForms) {
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
	d := endpointData{Endpoint: e, Chart: chart(st.Hours), Deliveries: ds, Grant: grants.of(e), ShowGrant: v.Grants || e.GrantID != "", Recover: forms.Recover, Export: forms.Export}
	for _, h := range st.Hours {
		d.Totals.Delivered += h.Delivered
		d.Totals.Failed += h.Failed
		d.Totals.Pending += h.Pending
	}
	l := c.localeOf(r, s)
	d.Notice = notice(r, l, v.in(l))
	c.render(w, r, status, "endpoint", s, raw(e.URL), d)
}

// wordsOf is the session owner's words (the layout's, for handlers).
func (c *Console) wordsOf(r *http.Request, s *session) words {
	if o, err := c.cfg.Ops.Pages().GetOwner(r.Context(), s.OwnerID); err == nil {
		return wordsFor(o.Profile)
	}
	return standardWords
}
