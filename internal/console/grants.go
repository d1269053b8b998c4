package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/scope"
)

// grantRow is a grant with the owner's endpoints attached to it.
type grantRow struct {
	*ops.GrantView
	Endpoints []*ops.EndpointView
}

type grantsData struct {
	Rows   []grantRow
	Notice string
}

// grantRows is the owner's grants (grants.list) each with the endpoints
// (webhooks.list) whose grant_id names it.
func (c *Console) grantRows(r *http.Request, s *session) ([]grantRow, error) {
	gs, err := callAs[ops.GrantList](r.Context(), c, s, "grants.list", &ops.Empty{})
	if err != nil {
		return nil, err
	}
	eps, err := callAs[ops.EndpointList](r.Context(), c, s, "webhooks.list", &ops.Empty{})
	if err != nil {
		return nil, err
	}
	rows := make([]grantRow, len(gs.Data))
	idx := map[string]int{}
	for i, g := range gs.Data {
		rows[i] = grantRow{GrantView: g}
		idx[g.ID] = i
	}
	for _, e := range eps.Data {
		if i, ok := idx[e.GrantID]; ok && e.GrantID != "" {
			rows[i].Endpoints = append(rows[i].Endpoints, e)
		}
	}
	return rows, nil
}

func (c *Console) listGrants(w http.ResponseWriter, r *http.Request, s *session) {
	rows, err := c.grantRows(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d := grantsData{Rows: rows}
	if r.URL.Query().Get("done") == "deleted" {
		d.Notice = c.localeOf(r, s).T("notice.grant_deleted")
	}
	c.render(w, r, http.StatusOK, "grants", s, msg("nav.grants"), d)
}

type grantData struct {
	Grant  grantRow
	Notice string
}

// grantWithEndpoints is one grant (grants.get: another owner's is not
// found) with the endpoints using it.
func (c *Console) grantWithEndpoints(r *http.Request, s *session, id string) (grantRow, error) {
	g, err := callAs[ops.GrantView](r.Context(), c, s, "grants.get", &ops.GrantRef{ID: id})
	if err != nil {
		return grantRow{}, err
	}
	rows, err := c.grantRows(r, s)
	for _, row := range rows {
		if row.ID == g.ID {
			return row, err
		}
	}
	return grantRow{GrantView: g}, err
}

func (c *Console) showGrant(w http.ResponseWriter, r *http.Request, s *session) {
	row, err := c.grantWithEndpoints(r, s, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	g := row.GrantView
	d := grantData{Grant: row}
	switch r.URL.Query().Get("done") {
	case "saved":
		d.Notice = c.localeOf(r, s).T("notice.grant_saved")
	case "revoked":
		d.Notice = c.localeOf(r, s).T("notice.grant_revoked")
	}
	title := g.Description
	if title == "" {
		title = g.ID
	}
	c.render(w, r, http.StatusOK, "grant", s, raw(title), d)
}

// grantForm is the new and edit form as typed: one glob per line.
type grantForm struct {
	ID            string
	Description   string
	Allow         string
	Deny          string
	PublishedOnly bool
	ExpiresAt     string // datetime-local, UTC
	HadExpiry     bool
	Errors        map[string]string
}

func (c *Console) newGrant(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, http.StatusOK, "grant_form", s, msg("title.new_grant"), &grantForm{})
}

func (c *Console) editGrant(w http.ResponseWriter, r *http.Request, s *session) {
	g, err := callAs[ops.GrantView](r.Context(), c, s, "grants.get", &ops.GrantRef{ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "grant_form", s, msg("title.edit_grant"), grantFormOf(g))
}

func grantFormOf(g *ops.GrantView) *grantForm {
	f := &grantForm{ID: g.ID, Description: g.Description, Allow: strings.Join(g.Allow, "\n"), Deny: strings.Join(g.Deny, "\n"), PublishedOnly: g.PublishedOnly}
	if g.ExpiresAt != nil {
		f.ExpiresAt, f.HadExpiry = g.ExpiresAt.UTC().Format(localTime), true
	}
	return f
}

func readGrantForm(r *http.Request) *grantForm {
	return &grantForm{
		ID: r.PathValue("id"), Description: r.PostFormValue("description"), Allow: r.PostFormValue("allow"), Deny: r.PostFormValue("deny"),
		PublishedOnly: r.PostFormValue("published_only") == "on", ExpiresAt: strings.TrimSpace(r.PostFormValue("expires_at")),
	}
}

// lines splits a textarea into its non-empty lines.
func lines(s string) []string {
	out := []string{}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// expiry reads the datetime-local field (UTC); nil when empty.
func (f *grantForm) expiry() (*time.Time, error) {
	if f.ExpiresAt == "" {
		return nil, nil
	}
	t, err := time.Parse(localTime, f.ExpiresAt)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "expires_at %q is not a date and time: enter it as YYYY-MM-DDTHH:MM (UTC)", f.ExpiresAt)
	}
	return &t, nil
}

func (c *Console) createGrant(w http.ResponseWriter, r *http.Request, s *session) {
	f := readGrantForm(r)
	exp, err := f.expiry()
	if err == nil {
		var g *ops.GrantView
		g, err = callAs[ops.GrantView](r.Context(), c, s, "grants.create", &ops.CreateGrantIn{
			Description: f.Description, Allow: lines(f.Allow), Deny: lines(f.Deny), PublishedOnly: f.PublishedOnly, ExpiresAt: exp,
		})
		if err == nil {
			c.redirect(w, r, "/admin/grants/"+url.PathEscape(g.ID)+"?done=saved")
			return
		}
	}
	c.refuseGrant(w, r, s, f, err)
}

func (c *Console) updateGrant(w http.ResponseWriter, r *http.Request, s *session) {
	f := readGrantForm(r)
	was, err := callAs[ops.GrantView](r.Context(), c, s, "grants.get", &ops.GrantRef{ID: f.ID})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	old := grantFormOf(was)
	f.HadExpiry = old.HadExpiry
	allow, deny := lines(f.Allow), lines(f.Deny)
	in := &ops.UpdateGrantIn{ID: f.ID, Description: &f.Description, Allow: &allow, Deny: &deny, PublishedOnly: &f.PublishedOnly}
	// An unchanged expiry is not sent again: the op refuses one in the
	// past, and editing an expired grant's text must still work.
	if f.ExpiresAt != old.ExpiresAt {
		if in.ExpiresAt, err = f.expiry(); err == nil && in.ExpiresAt == nil {
			err = apperr.New(apperr.Invalid, "expires_at cannot be removed once set: move it later, or revoke the grant to end it now")
		}
	}
	if err == nil {
		if _, err = c.call(r.Context(), s, "grants.update", in); err == nil {
			c.redirect(w, r, "/admin/grants/"+url.PathEscape(f.ID)+"?done=saved")
			return
		}
	}
	c.refuseGrant(w, r, s, f, err)
}

// refuseGrant re-renders the grant form with the op's message next to the
// field it names.
func (c *Console) refuseGrant(w http.ResponseWriter, r *http.Request, s *session, f *grantForm, err error) {
	if apperr.CodeOf(err) != apperr.Invalid {
		c.fail(w, r, s, err)
		return
	}
	says := apperr.MessageOf(err)
	field := "form"
	for _, name := range []string{"description", "allow", "deny", "expires_at", "published_only"} {
		if strings.HasPrefix(says, name) {
			field = name
		}
	}
	f.Errors = map[string]string{field: c.localeOf(r, s).Err(err)}
	title := msg("title.new_grant")
	if f.ID != "" {
		title = msg("title.edit_grant")
	}
	c.render(w, r, http.StatusUnprocessableEntity, "grant_form", s, title, f)
}

type confirmGrantData struct {
	Grant  grantRow
	Action string // "revoke" or "delete"
}

// grantAction revokes or deletes a grant; like deleting an endpoint, it
// asks first, and only a post with confirm=yes acts.
func (c *Console) grantAction(action string) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		ref := &ops.GrantRef{ID: r.PathValue("id")}
		if r.PostFormValue("confirm") != "yes" {
			row, err := c.grantWithEndpoints(r, s, ref.ID)
			if err != nil {
				c.fail(w, r, s, err)
				return
			}
			c.render(w, r, http.StatusOK, "confirm_grant", s, msg("grant.confirm."+action+".title"), confirmGrantData{Grant: row, Action: action})
			return
		}
		if _, err := c.call(r.Context(), s, "grants."+action, ref); err != nil {
			c.fail(w, r, s, err)
			return
		}
		if action == "delete" {
			c.redirect(w, r, "/admin/grants?done=deleted")
			return
		}
		c.redirect(w, r, "/admin/grants/"+url.PathEscape(ref.ID)+"?done=revoked")
	}
}

// grantChoice is one option of the endpoint form's grant picker.
type grantChoice struct {
	ID, Label string
	Status    scope.GrantStatus
}

// grantChoices is the owner's grants for the picker.
func (c *Console) grantChoices(r *http.Request, s *session) ([]grantChoice, error) {
	gs, err := callAs[ops.GrantList](r.Context(), c, s, "grants.list", &ops.Empty{})
	if err != nil {
		return nil, err
	}
	out := make([]grantChoice, len(gs.Data))
	for i, g := range gs.Data {
		label := g.Description
		if label == "" {
			label = strings.Join(g.Allow, ", ")
		}
		out[i] = grantChoice{ID: g.ID, Label: label, Status: g.Status}
	}
	return out, nil
}

type grantIndex map[string]grantChoice

// grantsByID indexes the owner's grants for the endpoint list and page
// (none when the program answers for grants itself).
func (c *Console) grantsByID(r *http.Request, s *session) (grantIndex, error) {
	idx := grantIndex{}
	if c.cfg.Ops.ForeignGrants {
		return idx, nil
	}
	gs, err := c.grantChoices(r, s)
	for _, g := range gs {
		idx[g.ID] = g
	}
	return idx, err
}

// of is e's grant as the pages show it: its label and what it admits now
// (the op's grant_status; "deleted" when it is gone). nil: no grant.
func (idx grantIndex) of(e *ops.EndpointView) *grantChoice {
	if e.GrantID == "" {
		return nil
	}
	g, ok := idx[e.GrantID]
	if !ok {
		g = grantChoice{ID: e.GrantID, Label: e.GrantID}
	}
	g.Status = e.GrantStatus
	return &g
}

// Admits reports whether the grant admits anything now (its status is
// active, or unknown: the program answers for it).
func (g grantChoice) Admits() bool {
	return g.Status == scope.GrantActive || g.Status == ""
}
