package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/scope"
)

func (c *Console) home(w http.ResponseWriter, r *http.Request, _ *session) {
	c.redirect(w, r, "/admin/webhooks")
}

type endpointRow struct {
	*ops.EndpointView
	*ops.EndpointActivity
	Grant *grantChoice
}

type listData struct {
	Rows    []endpointRow
	NoOwner bool
}

func (c *Console) listEndpoints(w http.ResponseWriter, r *http.Request, s *session) {
	if s.OwnerID == "" {
		c.render(w, r, http.StatusOK, "endpoints", s, msg("title.webhooks"), listData{NoOwner: true})
		return
	}
	ctx := r.Context()
	eps, err := callAs[ops.EndpointList](ctx, c, s, "webhooks.list", &ops.Empty{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	act, err := callAs[ops.ActivityList](ctx, c, s, "webhooks.activity", &ops.Empty{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	grants, err := c.grantsByID(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	byID := map[string]*ops.EndpointActivity{}
	for _, a := range act.Data {
		byID[a.EndpointID] = a
	}
	d := listData{Rows: make([]endpointRow, len(eps.Data))}
	for i, e := range eps.Data {
		a := byID[e.ID]
		if a == nil {
			a = &ops.EndpointActivity{EndpointID: e.ID}
		}
		d.Rows[i] = endpointRow{EndpointView: e, EndpointActivity: a, Grant: grants.of(e)}
	}
	c.render(w, r, http.StatusOK, "endpoints", s, msg("title.webhooks"), d)
}

// endpointForm is the new and edit form: what the user typed, kept when
// the server refuses it, with each error next to its field.
type endpointForm struct {
	ID          string
	Kind        string // "poll" for a polling endpoint (no URL), else "" or "http"
	URL         string
	Description string
	Enabled     bool
	// TraceContext: the endpoint's attempts carry hookd's W3C trace
	// context (the API's trace_context). TraceSent says the form had the
	// checkbox, so a post without it leaves the setting alone.
	TraceContext bool
	TraceSent    bool
	// Developer: the app's developer subscription (the API's developer);
	// DeveloperSent says the form had the checkbox.
	Developer     bool
	DeveloperSent bool
	Selected      map[string]bool
	Other         string
	Groups        []typeGroup
	Errors        map[string]string
	// GrantID is the grant picked; GrantSent says the form sent one (a
	// deleted grant is shown disabled, so it is not sent and stays).
	GrantID   string
	GrantSent bool
	GrantMode string // "store": a picker of the owner's grants; "foreign": a text field; "": none
	Grants    []grantChoice
	// Code is the filter and transformation (code.go); CodeSent says the
	// form had their editors.
	Code     endpoint.Code
	CodeSent bool
	Auth     authForm // endpoint_auth.go
	Dest     destForm // destination_form.go
}

func (c *Console) newEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	f := &endpointForm{Enabled: true, Selected: map[string]bool{}, Auth: newAuthForm(nil, false), Dest: destFormOf("")}
	c.showForm(w, r, s, http.StatusOK, f)
}

func (c *Console) editEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := callAs[ops.EndpointView](r.Context(), c, s, "webhooks.get", &ops.EndpointRef{ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	f := &endpointForm{ID: e.ID, Kind: e.Kind, URL: e.URL, Description: e.Description, Enabled: e.Enabled, TraceContext: e.TraceContext, Developer: e.Developer, Selected: map[string]bool{}, GrantID: e.GrantID, Code: e.Code}
	for _, g := range e.EventTypes {
		f.Selected[g] = true
	}
	f.Auth = newAuthForm(e.Auth, true)
	f.Dest = destFormOf(e.URL)
	c.showForm(w, r, s, http.StatusOK, f)
}

func (c *Console) showForm(w http.ResponseWriter, r *http.Request, s *session, status int, f *endpointForm) {
	types, err := callAs[ops.EventTypeList](r.Context(), c, s, "webhooks.event_types", &ops.Empty{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	f.Groups = groupTypes(types.Data)
	f.Dest = f.Dest.offer(c.cfg.Ops.DestinationKinds(), f.ID != "")
	if err := c.grantPicker(r, s, f); err != nil {
		c.fail(w, r, s, err)
		return
	}
	// Globs that match no checkbox (typed by hand, or set through the API)
	// stay in the "other" field so an edit keeps them.
	var other []string
	known := map[string]bool{"*": true}
	for _, g := range f.Groups {
		known[g.Name+".*"] = true
		for _, t := range g.Types {
			known[t.Name] = true
		}
	}
	for g := range f.Selected {
		if !known[g] {
			other = append(other, g)
		}
	}
	if f.Other == "" {
		f.Other = strings.Join(sorted(other), ", ")
	}
	title := msg("title.new_endpoint")
	if f.ID != "" {
		title = msg("title.edit_endpoint")
	}
	c.render(w, r, status, "endpoint_form", s, title, f)
}

// readForm reads the endpoint form: ticked types, then the "other" globs.
func readForm(r *http.Request) *endpointForm {
	f := &endpointForm{
		ID: r.PathValue("id"), Kind: r.PostFormValue("kind"), URL: strings.TrimSpace(r.PostFormValue("url")), Description: r.PostFormValue("description"),
		Enabled: r.PostFormValue("enabled") == "on", Selected: map[string]bool{}, Other: r.PostFormValue("other"),
		TraceContext: r.PostFormValue("trace_context") == "on", TraceSent: r.PostFormValue("trace_context_shown") != "",
		Developer: r.PostFormValue("developer") == "on", DeveloperSent: r.PostFormValue("developer_shown") != "",
		Code: endpoint.Code{Filter: r.PostFormValue("filter"), Transformation: r.PostFormValue("transformation")}, CodeSent: r.PostFormValue("code_shown") != "",
		Auth: readAuthForm(r), Dest: readDestForm(r),
	}
	if f.Dest.isBroker() {
		f.URL = f.Dest.url()
	}
	if f.Dest.Kind == "" {
		f.Dest = destFormOf(f.URL)
	}
	for _, t := range r.PostForm["types"] {
		f.Selected[t] = true
	}
	if g, ok := r.PostForm["grant_id"]; ok {
		f.GrantID, f.GrantSent = strings.TrimSpace(g[0]), true
	} else {
		f.GrantID = r.PostFormValue("grant_was")
	}
	return f
}

// grantPicker fills the form's grant choices: the owner's grants, and the
// endpoint's own grant when it is gone (shown, disabled). A program that
// answers for grants itself (hookd.Config.Scope) gets a text field; a
// kwork owner, whose profile has no scoped types, sees the picker only
// once it has grants.
func (c *Console) grantPicker(r *http.Request, s *session, f *endpointForm) error {
	if c.cfg.Ops.ForeignGrants {
		f.GrantMode = "foreign"
		return nil
	}
	gs, err := c.grantChoices(r, s)
	if err != nil {
		return err
	}
	f.Grants = gs
	found := f.GrantID == ""
	for _, g := range gs {
		found = found || g.ID == f.GrantID
	}
	if !found {
		f.Grants = append(f.Grants, grantChoice{ID: f.GrantID, Label: f.GrantID, Status: scope.GrantDeleted})
	}
	if c.wordsOf(r, s).Grants || len(f.Grants) > 0 {
		f.GrantMode = "store"
	}
	return nil
}

func (f *endpointForm) globs() []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(g string) {
		if g = strings.TrimSpace(g); g != "" && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	for g := range f.Selected {
		add(g)
	}
	for _, g := range strings.FieldsFunc(f.Other, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		add(g)
	}
	return sorted(out)
}

// refuse re-renders the form with the op's message next to the field it
// names (the ops' messages start with the field they are about).
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, s *session, f *endpointForm, err error) {
	if apperr.CodeOf(err) != apperr.Invalid {
		c.fail(w, r, s, err)
		return
	}
	field := fieldOf(apperr.MessageOf(err))
	if in := f.Dest.destInput(apperr.MessageOf(err)); in != "" {
		field = in
	}
	f.Errors = map[string]string{field: c.localeOf(r, s).Err(err)}
	c.showForm(w, r, s, http.StatusUnprocessableEntity, f)
}

func fieldOf(msg string) string {
	switch {
	case strings.HasPrefix(msg, "url"):
		return "url"
	case strings.HasPrefix(msg, "description"):
		return "description"
	case strings.HasPrefix(msg, "event type"), strings.HasPrefix(msg, "event_types"):
		return "types"
	case strings.HasPrefix(msg, "grant_id"):
		return "grant_id"
	case strings.HasPrefix(msg, "filter"):
		return "filter"
	case strings.HasPrefix(msg, "transformation"):
		return "transformation"
	case strings.HasPrefix(msg, "auth"):
		return "auth"
	}
	return "form"
}

type secretData struct {
	Endpoint *ops.EndpointView
	Created  bool
}

func (c *Console) createEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	f := readForm(r)
	enabled := f.Enabled
	in := &ops.CreateEndpointIn{Kind: f.Kind, URL: f.URL, Description: f.Description, EventTypes: f.globs(), Enabled: &enabled, GrantID: f.GrantID}
	in.TraceContext, in.Developer, in.Auth = f.TraceContext, f.Developer, f.Auth.input()
	in.Filter, in.Transformation = f.Code.Filter, f.Code.Transformation
	e, err := callAs[ops.EndpointView](r.Context(), c, s, "webhooks.create", in)
	if err != nil {
		c.refuse(w, r, s, f, err)
		return
	}
	c.render(w, r, http.StatusCreated, "secret", s, msg("title.endpoint_created"), secretData{Endpoint: e, Created: true})
}

func (c *Console) updateEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	f := readForm(r)
	globs := f.globs()
	in := &ops.UpdateEndpointIn{ID: f.ID, Description: &f.Description, EventTypes: &globs, Auth: f.Auth.input()}
	if f.Kind != "poll" { // a polling endpoint's form has no URL
		in.URL = &f.URL
	}
	if f.GrantSent {
		in.GrantID = &f.GrantID
	}
	if f.TraceSent {
		in.TraceContext = &f.TraceContext
	}
	if f.DeveloperSent {
		in.Developer = &f.Developer
	}
	if f.CodeSent {
		in.Filter, in.Transformation = &f.Code.Filter, &f.Code.Transformation
	}
	if _, err := c.call(r.Context(), s, "webhooks.update", in); err != nil {
		c.refuse(w, r, s, f, err)
		return
	}
	c.done(w, r, f.ID, "saved", 0)
}

func (c *Console) setEnabled(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	on := r.PostFormValue("enabled") == "true"
	if _, err := c.call(r.Context(), s, "webhooks.update", &ops.UpdateEndpointIn{ID: id, Enabled: &on}); err != nil {
		c.fail(w, r, s, err)
		return
	}
	what := "disabled"
	if on {
		what = "enabled"
	}
	c.done(w, r, id, what, 0)
}

type confirmData struct {
	Endpoint *ops.EndpointView
}

// deleteEndpoint asks first: only a post with confirm=yes deletes.
func (c *Console) deleteEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	if r.PostFormValue("confirm") != "yes" {
		e, err := callAs[ops.EndpointView](r.Context(), c, s, "webhooks.get", &ops.EndpointRef{ID: id})
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		c.render(w, r, http.StatusOK, "confirm_delete", s, msg("title.confirm_delete"), confirmData{Endpoint: e})
		return
	}
	if _, err := c.call(r.Context(), s, "webhooks.delete", &ops.EndpointRef{ID: id}); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.redirect(w, r, "/admin/webhooks?deleted="+url.QueryEscape(id))
}

func (c *Console) rotateSecret(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := callAs[ops.EndpointView](r.Context(), c, s, "webhooks.rotate_secret", &ops.RotateSecretIn{ID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "secret", s, msg("title.secret_rotated"), secretData{Endpoint: e})
}

func (c *Console) sendTest(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	out, err := callAs[ops.TestSent](r.Context(), c, s, "webhooks.send_test", &ops.EndpointRef{ID: id})
	if err != nil {
		if wantsJSON(r) {
			writeJSON(w, apperr.Status(apperr.CodeOf(err)), map[string]string{"error": c.localeOf(r, s).Err(err)})
			return
		}
		c.fail(w, r, s, err)
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusAccepted, out)
		return
	}
	c.done(w, r, id, "test", 0)
}

func (c *Console) redeliver(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	out, err := callAs[ops.Redelivered](r.Context(), c, s, "webhooks.redeliver", &ops.EndpointRef{ID: id})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.done(w, r, id, "redelivered", out.Redelivered)
}

func (c *Console) retryNow(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	out, err := callAs[ops.RetriedNow](r.Context(), c, s, "webhooks.retry_now", &ops.EndpointRef{ID: id})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.done(w, r, id, "retried", out.RetriedNow)
}

func (c *Console) expireOldSecrets(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	if _, err := callAs[ops.EndpointView](r.Context(), c, s, "webhooks.expire_old_secrets", &ops.EndpointRef{ID: id}); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.done(w, r, id, "expired", 0)
}

// done sends the browser back to the endpoint page, saying what happened.
func (c *Console) done(w http.ResponseWriter, r *http.Request, id, what string, n int) {
	u := "/admin/webhooks/" + url.PathEscape(id) + "?done=" + what
	if what == "redelivered" || what == "retried" || what == "recovered" {
		u += "&n=" + strconv.Itoa(n)
	}
	c.redirect(w, r, u)
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
