package ops

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/egress"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/scope"
	"github.com/hookd/hookd/internal/store"
)

// EndpointView is an endpoint as callers see it. Secret is set only in the
// answers that make a new whsec_ secret: create, rotate_secret, and an
// update that adds hmac to the signature.
type EndpointView struct {
	*endpoint.Endpoint
	State  endpoint.State `json:"state"`
	Secret string         `json:"secret,omitempty"`
	// PollToken is a polling endpoint's token, set only in the answers
	// that make one: create and rotate_poll_token.
	PollToken string `json:"poll_token,omitempty"`
	// GrantStatus is what the endpoint's grant admits now (active, revoked,
	// expired, or deleted: nothing of scoped types until given another).
	GrantStatus scope.GrantStatus `json:"grant_status,omitempty"`
}

func (s *Service) view(e *endpoint.Endpoint) *EndpointView {
	e.Signing = e.Signing.At(s.now())
	if e.Headers == nil {
		e.Headers = map[string]string{} // shown as {}, not null
	}
	return &EndpointView{Endpoint: e, State: e.State()}
}

// EndpointList is webhooks.list's answer.
type EndpointList struct {
	Data []*EndpointView `json:"data"`
}

// EndpointRef names one endpoint.
type EndpointRef struct {
	ID string `json:"id" path:"id" jsonschema:"the endpoint id (ep_…)"`
}

// CreateEndpointIn is webhooks.create's input.
type CreateEndpointIn struct {
	URL         string   `json:"url,omitempty" jsonschema:"absolute http(s) URL that receives the POSTs, or a broker destination: amqp(s)://user:pass@host/vhost?exchange=x&routing_key=k, nats://host/subject, redis(s)://host/db?stream=s&maxlen=n (docs/destinations.md); a password is sealed and shown as *** in every answer after (none for kind poll)"`
	Kind        string   `json:"kind,omitempty" jsonschema:"http (default: hookd POSTs to url) or poll (no url: a consumer reads GET /api/v1/poll/{id} with the poll_token shown in this answer only)"`
	Description string   `json:"description,omitempty"`
	EventTypes  []string `json:"event_types" jsonschema:"event-type globs; * matches any run of characters"`
	Enabled     *bool    `json:"enabled,omitempty" jsonschema:"default true"`
	// MaxInFlight bounds parallel deliveries where the profile allows it
	// (kwork; the standard profile always has one in flight).
	MaxInFlight int    `json:"max_in_flight,omitempty"`
	GrantID     string `json:"grant_id,omitempty" jsonschema:"id of one of the owner's grants (grt_…): it decides which events of scoped types the endpoint gets (empty: the published slice)"`
	Signature   string `json:"signature,omitempty" jsonschema:"hmac (default: v1 with a whsec_ secret), ed25519 (v1a: the receiver verifies with the public_key whpk_ in the record) or both"`
	// Auth is sealed with the keys and never shown again (the record
	// shows its type and non-secret fields).
	Auth *endpoint.Auth `json:"auth,omitempty" audit:"secret" jsonschema:"how hookd authenticates to the receiver besides the signature: type basic (username, password), bearer (token), oauth2_client_credentials (token_url, client_id, client_secret, scopes, audience) or mtls (cert_pem, private_key_pem, ca_pem); never shown again"`
	ControlsIn
	CodeIn
}

// UpdateEndpointIn is webhooks.update's input: a field left out keeps its
// value.
type UpdateEndpointIn struct {
	ID          string         `json:"id" path:"id"`
	URL         *string        `json:"url,omitempty" jsonschema:"a new url; a destination's password given back as *** keeps the stored one (same host and user), a new one replaces it"`
	Description *string        `json:"description,omitempty"`
	EventTypes  *[]string      `json:"event_types,omitempty"`
	Enabled     *bool          `json:"enabled,omitempty" jsonschema:"false disables; true re-enables and clears the failure state"`
	MaxInFlight *int           `json:"max_in_flight,omitempty"`
	GrantID     *string        `json:"grant_id,omitempty" jsonschema:"another grant of the owner's; empty string: none (the published slice)"`
	Signature   *string        `json:"signature,omitempty" jsonschema:"hmac, ed25519 or both; keys the new scheme drops keep signing for 24h (expire_old_secrets ends that), a new whsec_ secret is shown in this answer only"`
	Auth        *endpoint.Auth `json:"auth,omitempty" audit:"secret" jsonschema:"replaces the receiver authentication as a whole (type none removes it); never shown again"`
	ControlsPatch
	CodePatch
}

// DeliveriesIn is webhooks.deliveries' input: one endpoint, a page size
// and the filters.
type DeliveriesIn struct {
	ID        string `json:"id" path:"id"`
	Limit     int    `json:"limit,omitempty" query:"limit" jsonschema:"at most this many (default 50, max 500)"`
	Before    string `json:"before,omitempty" query:"before" jsonschema:"page: deliveries older than this delivery id"`
	State     string `json:"state,omitempty" query:"state" jsonschema:"only deliveries in this state: pending, delivered or failed"`
	EventType string `json:"event_type,omitempty" query:"event_type" jsonschema:"only deliveries of this event type"`
	Since     string `json:"since,omitempty" query:"since" jsonschema:"only deliveries created at or after this RFC 3339 time"`
	Until     string `json:"until,omitempty" query:"until" jsonschema:"only deliveries created before this RFC 3339 time"`
}

// DeliveryView is a delivery as callers see it, with the URL of its River
// job.
type DeliveryView struct {
	*endpoint.Delivery
	JobURL string `json:"job_url"`
	// WaitingFor is, on an ordered endpoint, the delivery this pending one
	// waits behind (the endpoint's head).
	WaitingFor string `json:"waiting_for,omitempty"`
}

// DeliveryList is one page of an endpoint's deliveries, newest first.
type DeliveryList struct {
	Data []*DeliveryView `json:"data"`
	// Next is the "before" value of the next page ("" when done).
	Next string `json:"next,omitempty"`
}

// Redelivered is webhooks.redeliver's answer.
type Redelivered struct {
	Redelivered int    `json:"redelivered" jsonschema:"failed deliveries re-enqueued"`
	Note        string `json:"note,omitempty" jsonschema:"what the count covers, when it is 0"`
}

// TestSent is the event webhooks.send_test published.
type TestSent struct {
	EventID string `json:"event_id"`
	Type    string `json:"type"`
}

// EventTypeList is a list of event types.
type EventTypeList struct {
	Data []*event.Type `json:"data"`
}

func (s *Service) endpointOps() []*Op {
	const base = "/api/admin/webhooks"
	return []*Op{
		define(Op{Name: "webhooks.list", Summary: "List the owner's endpoints.", Method: http.MethodGet, Path: base, Status: 200, Role: owner.Admin, OwnerScoped: true}, s.listEndpoints),
		define(Op{Name: "webhooks.create", Audit: "endpoint", Summary: "Create an endpoint; its secret is shown in this answer only.", Method: http.MethodPost, Path: base, Status: 201, Role: owner.Admin, OwnerScoped: true}, s.createEndpoint),
		define(Op{Name: "webhooks.get", Summary: "Get one endpoint.", Method: http.MethodGet, Path: base + "/{id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.getEndpoint),
		define(Op{Name: "webhooks.update", Audit: "endpoint", Summary: "Change an endpoint; enabled=false disables it, enabled=true re-enables it and clears its failure.", Method: http.MethodPatch, Path: base + "/{id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.updateEndpoint),
		define(Op{Name: "webhooks.delete", Audit: "endpoint", Summary: "Delete an endpoint with its deliveries.", Method: http.MethodDelete, Path: base + "/{id}", Status: 204, Role: owner.Admin, OwnerScoped: true}, s.deleteEndpoint),
		define(Op{Name: "webhooks.send_test", Audit: "endpoint", Summary: "Send one test event to this endpoint only.", Method: http.MethodPost, Path: base + "/{id}/send_test", Status: 202, Role: owner.Admin, OwnerScoped: true}, s.sendTest),
		define(Op{Name: "webhooks.deliveries", Summary: "The endpoint's deliveries, newest first.", Method: http.MethodGet, Path: base + "/{id}/deliveries", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.deliveries),
		define(Op{Name: "webhooks.redeliver", Audit: "endpoint", Summary: "Re-enqueue every failed delivery of the endpoint.", Method: http.MethodPost, Path: base + "/{id}/redeliver", Status: 202, Role: owner.Admin, OwnerScoped: true}, s.redeliver),
		define(Op{Name: "webhooks.event_types", Summary: "List the event types the owner's endpoints can subscribe to: exposure webhook, offered by the owner's profile and the server's catalogs, or registered by the owner.", Method: http.MethodGet, Path: base + "/event_types", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.endpointEventTypes),
	}
}

func (s *Service) listEndpoints(ctx context.Context, p Principal, _ *Empty) (*EndpointList, error) {
	eps, err := s.DB.Q().ListEndpoints(ctx, p.OwnerID, false)
	if err != nil {
		return nil, err
	}
	out := &EndpointList{Data: make([]*EndpointView, len(eps))}
	for i, e := range eps {
		out.Data[i] = s.view(e)
	}
	return out, s.withGrantStatus(ctx, p.OwnerID, out.Data...)
}

func (s *Service) getEndpoint(ctx context.Context, p Principal, in *EndpointRef) (*EndpointView, error) {
	e, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	v := s.view(e)
	return v, s.withGrantStatus(ctx, p.OwnerID, v)
}

func (s *Service) createEndpoint(ctx context.Context, p Principal, in *CreateEndpointIn) (*EndpointView, error) {
	_, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	q := s.DB.Q()
	kind, err := endpointKind(in.Kind, in.URL)
	if err != nil {
		return nil, err
	}
	if kind != endpoint.KindPoll && in.URL != "" {
		if err := s.checkKind(in.URL); err != nil {
			return nil, err
		}
	}
	if err := s.checkEndpoint(ctx, q, p.OwnerID, kind, in.URL, in.Description, in.EventTypes, in.MaxInFlight); err != nil {
		return nil, err
	}
	if err := s.checkGrantID(ctx, q, p.OwnerID, in.GrantID); err != nil {
		return nil, err
	}
	keys, sealed, err := s.newEndpointKeys(prof, in.Signature)
	if err != nil {
		return nil, err
	}
	now := s.now()
	id := event.NewID("ep_", now)
	url, urlSealed, err := s.sealDestination(ctx, q, id, in.URL)
	if err != nil {
		return nil, err
	}
	e := &endpoint.Endpoint{
		ID: id, OwnerID: p.OwnerID, URL: url, Kind: kind, Description: in.Description,
		EventTypes: normGlobs(in.EventTypes), SecretSealed: sealed, GrantID: in.GrantID,
		Enabled: in.Enabled == nil || *in.Enabled, MaxInFlight: prof.MaxInFlight(in.MaxInFlight),
		CreatedAt: now, UpdatedAt: now, Signing: keys.Signing(now),
	}
	if err := applyControls(e, in.ControlsIn.patch(), e.MaxInFlight, prof); err != nil {
		return nil, err
	}
	if err := s.checkCode(in.CodeIn.patch()); err != nil {
		return nil, err
	}
	applyCode(&e.Code, in.CodeIn.patch())
	if in.Auth != nil {
		if err := s.checkAuth(e, in.Auth); err != nil {
			return nil, err
		}
		if err := s.setAuth(e, in.Auth, now); err != nil {
			return nil, err
		}
	}
	var token string
	var tokenHash []byte
	if e.Polled() {
		token, tokenHash = NewPollToken()
	}
	audit.SetResource(ctx, e.ID)
	err = s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		if err := checkDeveloper(ctx, q, e); err != nil {
			return err
		}
		if err := q.CreateEndpoint(ctx, e); err != nil {
			return err
		}
		if urlSealed != nil {
			if err := q.SetEndpointCredentials(ctx, e.ID, urlSealed); err != nil {
				return err
			}
		}
		if e.Polled() {
			return q.CreatePollEndpoint(ctx, e.ID, tokenHash)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v := s.view(e)
	v.Secret, v.PollToken = keys.Current.Secret, token
	return v, s.withGrantStatus(ctx, p.OwnerID, v)
}

func (s *Service) updateEndpoint(ctx context.Context, p Principal, in *UpdateEndpointIn) (*EndpointView, error) {
	_, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	if err := s.checkCode(in.CodePatch); err != nil {
		return nil, err
	}
	var out *endpoint.Endpoint
	var secret string
	err = s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		e, err := q.GetEndpoint(ctx, p.OwnerID, in.ID)
		if err != nil {
			return err
		}
		audit.Before(ctx, s.view(e))
		if in.Signature != nil {
			if secret, err = s.changeScheme(prof, e, *in.Signature, s.now()); err != nil {
				return err
			}
		}
		if in.Auth != nil {
			if err := s.checkAuth(e, in.Auth); err != nil {
				return err
			}
			if err := s.setAuth(e, in.Auth, s.now()); err != nil {
				return err
			}
		}
		if in.URL != nil {
			if e.Polled() && *in.URL != "" {
				return invalid("url: endpoint %s is a polling endpoint and has no url (its kind cannot change: create an http endpoint instead)", e.ID)
			}
			if *in.URL != e.URL { // the url as stored, given back, is no new destination
				if err := s.checkKind(*in.URL); err != nil {
					return err
				}
			}
			e.URL = *in.URL
		}
		if in.Description != nil {
			e.Description = *in.Description
		}
		if in.EventTypes != nil {
			e.EventTypes = normGlobs(*in.EventTypes)
		}
		if in.GrantID != nil {
			if err := s.checkGrantID(ctx, q, p.OwnerID, *in.GrantID); err != nil {
				return err
			}
			e.GrantID = *in.GrantID
		}
		maxInFlight := e.MaxInFlight
		if in.MaxInFlight != nil {
			maxInFlight = *in.MaxInFlight
		}
		if err := s.checkEndpoint(ctx, q, p.OwnerID, e.KindOrHTTP(), e.URL, e.Description, e.EventTypes, maxInFlight); err != nil {
			return err
		}
		e.MaxInFlight = prof.MaxInFlight(maxInFlight)
		if err := applyControls(e, in.ControlsPatch, e.MaxInFlight, prof); err != nil {
			return err
		}
		applyCode(&e.Code, in.CodePatch)
		if err := checkDeveloper(ctx, q, e); err != nil {
			return err
		}
		if in.Enabled != nil {
			if *in.Enabled && !e.Enabled || *in.Enabled && e.FailingSince != nil {
				// Re-enabling clears the failure (the standard profile's endpoint rule).
				e.FailingSince, e.DisabledReason = nil, ""
			}
			if !*in.Enabled && e.Enabled {
				e.DisabledReason = "disabled by owner"
			}
			e.Enabled = *in.Enabled
		}
		if in.URL != nil {
			url, urlSealed, err := s.sealDestination(ctx, q, e.ID, e.URL)
			if err != nil {
				return err
			}
			if err := q.SetEndpointCredentials(ctx, e.ID, urlSealed); err != nil {
				return err
			}
			e.URL = url
		}
		e.UpdatedAt = s.now()
		out = e
		audit.After(ctx, s.view(e))
		return q.UpdateEndpoint(ctx, e)
	})
	if err != nil {
		return nil, err
	}
	v := s.view(out)
	v.Secret = secret
	return v, s.withGrantStatus(ctx, p.OwnerID, v)
}

func (s *Service) deleteEndpoint(ctx context.Context, p Principal, in *EndpointRef) (*Empty, error) {
	return &Empty{}, s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		e, err := q.GetEndpoint(ctx, p.OwnerID, in.ID)
		if err != nil {
			return err
		}
		audit.Before(ctx, s.view(e))
		return q.DeleteEndpoint(ctx, p.OwnerID, in.ID)
	})
}

// enabledEndpoint reads the principal's endpoint id and its owner's
// profile for something that sends to it (doing: "sending a test"), which
// a disabled endpoint refuses with a Conflict.
func (s *Service) enabledEndpoint(ctx context.Context, p Principal, id, doing string) (*endpoint.Endpoint, profile.Profile, error) {
	_, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, nil, err
	}
	e, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, id)
	if err != nil {
		return nil, nil, err
	}
	if !e.Enabled {
		return nil, nil, apperr.New(apperr.Conflict, "endpoint %s is disabled; enable it (PATCH enabled=true) before %s", e.ID, doing).Keyed("endpoint.disabled")
	}
	return e, prof, nil
}

func (s *Service) sendTest(ctx context.Context, p Principal, in *EndpointRef) (*TestSent, error) {
	e, prof, err := s.enabledEndpoint(ctx, p, in.ID, "sending a test")
	if err != nil {
		return nil, err
	}
	pub, err := s.Delivery.SendTest(ctx, e, prof)
	if err != nil {
		return nil, err
	}
	return &TestSent{EventID: pub.ID, Type: prof.TestEventType()}, nil
}

func (s *Service) deliveries(ctx context.Context, p Principal, in *DeliveriesIn) (*DeliveryList, error) {
	_, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	q := s.DB.Q()
	e, err := q.GetEndpoint(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	limit := in.Limit
	switch {
	case limit < 0 || limit > 500:
		return nil, apperr.New(apperr.Invalid, "limit must be between 1 and 500")
	case limit == 0:
		limit = 50
	}
	window := prof.LogWindow()
	if window > 0 {
		// The profile shows only its latest N (kwork: 50); no paging past them.
		if in.Before != "" {
			return &DeliveryList{Data: []*DeliveryView{}}, nil
		}
		limit = min(limit, window)
	}
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	f.OwnerID, f.EndpointID, f.Limit, f.Before = p.OwnerID, in.ID, limit, in.Before
	ds, err := q.ListDeliveriesWhere(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &DeliveryList{Data: make([]*DeliveryView, len(ds))}
	for i, d := range ds {
		out.Data[i] = &DeliveryView{Delivery: d, JobURL: jobURL(ctx, d.JobID)}
	}
	if len(ds) == limit && window == 0 {
		out.Next = ds[len(ds)-1].ID
	}
	if e.Ordered {
		if err := markWaiting(ctx, q, e.ID, out.Data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jobURL is the task page of a delivery's job, under the path the API is
// served at (WithBasePath); "" for a delivery no job has attempted.
func jobURL(ctx context.Context, id int64) string {
	if id == 0 {
		return ""
	}
	base, _ := ctx.Value(basePathKey{}).(string)
	return base + "/admin/tasks?job=" + strconv.FormatInt(id, 10)
}

type basePathKey struct{}

// WithBasePath tells the ops that their caller reaches hookd under prefix
// (Hookd.Mount's "/webhooks"), so the links they answer with (job_url)
// carry it.
func WithBasePath(ctx context.Context, prefix string) context.Context {
	return context.WithValue(ctx, basePathKey{}, prefix)
}

func (s *Service) redeliver(ctx context.Context, p Principal, in *EndpointRef) (*Redelivered, error) {
	e, prof, err := s.enabledEndpoint(ctx, p, in.ID, "redelivering")
	if err != nil {
		return nil, err
	}
	n, err := s.Delivery.Redeliver(ctx, e, prof)
	if err != nil {
		return nil, err
	}
	out := &Redelivered{Redelivered: n}
	if n == 0 {
		out.Note = "no failed delivery: redeliver re-sends failed ones only (discarded, or out of attempts); pending ones waiting for a retry or the failing cooldown are brought forward by retry_now"
	}
	return out, nil
}

func (s *Service) endpointEventTypes(ctx context.Context, p Principal, _ *Empty) (*EventTypeList, error) {
	ts, err := s.DB.Q().ListEventTypes(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	out := &EventTypeList{Data: []*event.Type{}}
	for _, t := range ts {
		if t.Exposure == event.Webhook {
			out.Data = append(out.Data, t)
		}
	}
	return out, nil
}

// checkEndpoint validates an endpoint's caller-supplied fields.
func (s *Service) checkEndpoint(ctx context.Context, q *store.Q, ownerID, kind, url, description string, globs []string, maxInFlight int) error {
	if url == "" && kind != endpoint.KindPoll {
		return apperr.New(apperr.Invalid, "url is required: the absolute http(s) URL that receives the events (or kind poll, for an endpoint read by polling)").Keyed("endpoint.url_required")
	}
	if err := s.checkURL(kind, url); err != nil {
		return err
	}
	if len(description) > 1024 {
		return apperr.New(apperr.Invalid, "description is %d bytes; at most 1024", len(description)).Keyed("endpoint.description", 1024)
	}
	if len(globs) > 100 {
		return apperr.New(apperr.Invalid, "event_types has %d entries; at most 100", len(globs))
	}
	if maxInFlight < 0 || maxInFlight > 256 {
		return apperr.New(apperr.Invalid, "max_in_flight must be between 1 and 256 (0: the profile's default)")
	}
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if err := event.ValidateGlob(g); err != nil {
			return err
		}
		if !event.IsLiteral(g) {
			continue
		}
		exp, registered, err := q.Exposure(ctx, ownerID, g)
		if err != nil {
			return err
		}
		if !registered {
			return apperr.New(apperr.Invalid, "event type %q is not registered: register it first with PUT /api/admin/event_types/%s and body {\"exposure\": \"webhook\"} (or load a catalog with --catalog)", g, g).Keyed("endpoint.type_unregistered", g)
		}
		if exp != event.Webhook {
			return apperr.New(apperr.Invalid, "event type %q is internal and never leaves hookd: set its exposure to webhook with PUT /api/admin/event_types/%s {\"exposure\": \"webhook\"}", g, g).Keyed("endpoint.type_internal", g)
		}
	}
	return nil
}

// checkURL checks an http endpoint's url (a polling one has none).
func (s *Service) checkURL(kind, url string) error {
	if kind == endpoint.KindPoll {
		return nil
	}
	if destination.Is(url) {
		return s.checkDestination(url)
	}
	if err := egress.CheckURL(url, s.EgressAllow); err != nil {
		if errors.Is(err, egress.ErrBlocked) {
			return apperr.New(apperr.Invalid, "url %q is not reachable by hookd: %v", url, err).Keyed("endpoint.url_unreachable", url)
		}
		return apperr.New(apperr.Invalid, "url %q is not valid: %v", url, err).Keyed("endpoint.url_invalid", url)
	}
	return nil
}

func normGlobs(gs []string) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, strings.TrimSpace(g))
	}
	return out
}
