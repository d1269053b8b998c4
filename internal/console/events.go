package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// eventsFilter is the events page's search as typed (datetime-local
// values, UTC).
type eventsFilter struct {
	Type, Subject, Since, Until string
}

func (f eventsFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"type": f.Type, "subject_prefix": f.Subject, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

type eventsData struct {
	Filter  eventsFilter
	Events  *ops.EventList
	Error   string
	Notice  string
	NextURL string
	// Back is the search to come back to after a resend.
	Back string
}

// listEvents is the events page: the owner's events found by type glob,
// subject prefix and window (events.list), each with a resend button.
func (c *Console) listEvents(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := eventsFilter{Type: q.Get("type"), Subject: q.Get("subject_prefix"), Since: q.Get("since"), Until: q.Get("until")}
	l := c.localeOf(r, s)
	d := eventsData{Filter: f, Back: f.query().Encode(), Notice: resentNotice(r, l)}
	status := http.StatusOK
	evs, err := callAs[ops.EventList](r.Context(), c, s, "events.list", &ops.EventsListIn{Type: f.Type, SubjectPrefix: f.Subject,
		Since: rfc3339(f.Since), Until: rfc3339(f.Until), Cursor: q.Get("cursor"), Limit: 50})
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		d.Error, status = l.Err(err), http.StatusUnprocessableEntity
		evs = &ops.EventList{Data: []ops.EventSummary{}}
	case err != nil:
		c.fail(w, r, s, err)
		return
	}
	d.Events = evs
	if evs.NextCursor != "" {
		next := f.query()
		next.Set("cursor", evs.NextCursor)
		d.NextURL = "?" + next.Encode()
	}
	c.render(w, r, status, "events", s, msg("title.events"), d)
}

// resentNotice says what the last resend did (?done=resent&n=…&pending=…).
func resentNotice(r *http.Request, l *locale) string {
	q := r.URL.Query()
	if q.Get("done") != "resent" {
		return ""
	}
	n, _ := strconv.Atoi(q.Get("n"))
	pending, _ := strconv.Atoi(q.Get("pending"))
	switch {
	case n > 0:
		return l.T("notice.resent", n)
	case pending > 0:
		return l.T("notice.resent.pending")
	}
	return l.T("notice.resent.none")
}

// resendEvent sends one event again to its endpoints (events.resend) and
// comes back to the search it was found by.
func (c *Console) resendEvent(w http.ResponseWriter, r *http.Request, s *session) {
	out, err := callAs[ops.Resent](r.Context(), c, s, "events.resend", &ops.ResendIn{ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	back, _ := url.ParseQuery(r.PostFormValue("back"))
	q := eventsFilter{Type: back.Get("type"), Subject: back.Get("subject_prefix"), Since: back.Get("since"), Until: back.Get("until")}.query()
	q.Set("done", "resent")
	q.Set("n", strconv.Itoa(len(out.Resent)))
	q.Set("pending", strconv.Itoa(len(out.Pending)))
	c.redirect(w, r, "/admin/events?"+q.Encode())
}
