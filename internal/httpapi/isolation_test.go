package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// waitLimit only bounds a broken test; every wait ends on a signal.
const waitLimit = 15 * time.Second

// world is a running hookd with two owners, alice and bob, each with an
// admin and a publisher key, and bob with an endpoint, an event type of
// his own, a published event and its delivery.
type world struct {
	t        *testing.T
	h        hookdtest.Hookd
	api      *httptest.Server
	receiver *httptest.Server
	received chan struct{}
	logs     *hookdtest.Logs
	operator string
	keys     map[string]string // "alice/admin" → key secret
	sessions map[string]*mcp.ClientSession
	ops      []*ops.Op
	bob      struct {
		endpoint, event, keyID, delivery, grant string
		job                                     int64
	}
}

func newWorld(t *testing.T, backend dbtest.Backend) *world {
	t.Helper()
	ctx := context.Background()
	logs := hookdtest.NewLogs()
	cfg := hookdtest.Config(backend.Config(t))
	cfg.Log = logs.Logger(slog.LevelInfo)
	h, api := hookdtest.Start(t, cfg)
	w := &world{t: t, h: h, api: api, keys: map[string]string{}, sessions: map[string]*mcp.ClientSession{}, ops: h.Ops.Ops(), received: make(chan struct{}, 100), logs: logs}
	w.receiver = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.received <- struct{}{}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		for _, cs := range w.sessions {
			cs.Close()
		}
		w.receiver.Close()
	})
	w.operator = w.newKey("", owner.Operator)
	for _, o := range []string{"alice", "bob"} {
		for _, r := range []owner.Role{owner.Admin, owner.Publisher} {
			w.keys[o+"/"+string(r)] = w.newKey(o, r)
		}
	}

	// Bob's things, made through REST with his own keys.
	bob := w.keys["bob/admin"]
	w.must(w.rest(w.op("event_types.put"), bob, "", map[string]any{"name": "invoice.paid", "exposure": "webhook"}))
	ep := w.must(w.rest(w.op("webhooks.create"), bob, "", map[string]any{"url": w.receiver.URL + "/bob-only", "event_types": []string{"invoice.paid"}}))
	w.bob.endpoint = field(t, ep.body, "id")
	w.bob.grant = field(t, w.must(w.rest(w.op("grants.create"), bob, "", map[string]any{"allow": []string{"wiki://bob/*"}})).body, "id")
	ev := w.must(w.rest(w.op("events.publish"), w.keys["bob/publisher"], "", map[string]any{"type": "invoice.paid", "data": map[string]any{"published": true}}))
	w.bob.event = field(t, ev.body, "id")
	keys := w.must(w.rest(w.op("api_keys.list"), bob, "", nil))
	var list struct{ Data []struct{ ID string } }
	_ = json.Unmarshal(keys.body, &list)
	w.bob.keyID = list.Data[0].ID
	w.waitDelivered("bob", w.bob.endpoint)
	ds, err := w.h.DB.Q().ListDeliveries(ctx, "bob", w.bob.endpoint, 1, "")
	if err != nil || len(ds) != 1 || ds[0].JobID == 0 {
		t.Fatalf("bob's delivery: %v %+v", err, ds)
	}
	w.bob.delivery, w.bob.job = ds[0].ID, ds[0].JobID
	return w
}

func (w *world) newKey(ownerID string, role owner.Role) string {
	w.t.Helper()
	k, err := w.h.Ops.CreateKey(context.Background(), ownerID, role)
	if err != nil {
		w.t.Fatal(err)
	}
	return k.Secret
}

func (w *world) op(name string) *ops.Op {
	for _, o := range w.ops {
		if o.Name == name {
			return o
		}
	}
	w.t.Fatalf("no op %s", name)
	return nil
}

// waitDelivered waits for the receiver, then for the endpoint's one
// delivery to be recorded as delivered.
func (w *world) waitDelivered(ownerID, endpointID string) {
	w.t.Helper()
	select {
	case <-w.received:
	case <-time.After(waitLimit):
		w.t.Fatal("the receiver got nothing")
	}
	// The delivery record settles right after, and hookd logs the attempt.
	var ds []*endpoint.Delivery
	if !hookdtest.WaitFor(waitLimit, w.logs.Wrote(), func() bool {
		var err error
		ds, err = w.h.DB.Q().ListDeliveries(context.Background(), ownerID, endpointID, 10, "")
		if err != nil {
			w.t.Fatal(err)
		}
		return len(ds) == 1 && ds[0].State == "delivered"
	}) {
		w.t.Fatalf("deliveries %+v: want one delivered", ds)
	}
}

// result is one op call's outcome on either transport.
type result struct {
	status int
	code   string // the error code; "" on success
	body   []byte // the answer (the error body on failure)
}

func (r result) String() string { return fmt.Sprintf("%d %s %.300s", r.status, r.code, r.body) }

func (w *world) must(r result) result {
	w.t.Helper()
	if r.code != "" {
		w.t.Fatalf("want success, got %s", r)
	}
	return r
}

// caller calls an op on one transport with a key, naming ownerName ("" for
// none), with args keyed by the input's JSON names.
type caller func(w *world, op *ops.Op, key, ownerName string, args map[string]any) result

var callers = []struct {
	name string
	call caller
}{
	{"rest", (*world).rest},
	{"mcp", (*world).mcp},
}

// rest calls op's route as its declaration says: args tagged path, query or
// header go there, the rest in the JSON body.
func (w *world) rest(op *ops.Op, key, ownerName string, args map[string]any) result {
	w.t.Helper()
	path, q, hdr := op.Path, url.Values{}, http.Header{}
	body := map[string]any{}
	for k, v := range args {
		body[k] = v
	}
	for _, f := range reflect.VisibleFields(op.In) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v, ok := args[name]
		switch {
		case f.Tag.Get("path") != "":
			path = strings.ReplaceAll(path, "{"+f.Tag.Get("path")+"}", url.PathEscape(fmt.Sprint(v)))
		case f.Tag.Get("query") != "" && ok:
			q.Set(f.Tag.Get("query"), fmt.Sprint(v))
		case f.Tag.Get("header") != "" && ok:
			hdr.Set(f.Tag.Get("header"), fmt.Sprint(v))
		default:
			continue
		}
		delete(body, name)
	}
	var rd io.Reader
	if op.Method == http.MethodPost || op.Method == http.MethodPut || op.Method == http.MethodPatch {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	u := w.api.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, _ := http.NewRequest(op.Method, u, rd)
	req.Header = hdr
	req.Header.Set("Authorization", "Bearer "+key)
	if ownerName != "" {
		req.Header.Set("Hookd-Owner", ownerName)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, body: raw}
	if resp.StatusCode >= 400 {
		r.code = errorCode(w.t, raw)
	}
	return r
}

// mcp calls op's tool over streamable HTTP at /mcp with the key.
func (w *world) mcp(op *ops.Op, key, ownerName string, args map[string]any) result {
	w.t.Helper()
	cs := w.sessions[key]
	if cs == nil {
		var err error
		cs, err = dialMCP(w.api.URL+"/mcp", key)
		if err != nil {
			w.t.Fatalf("mcp connect: %v", err)
		}
		w.sessions[key] = cs
	}
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	if ownerName != "" {
		a["owner"] = ownerName
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: op.Name, Arguments: a})
	if err != nil {
		w.t.Fatalf("%s: %v", op.Name, err)
	}
	text := []byte(res.Content[0].(*mcp.TextContent).Text)
	if res.IsError {
		code := errorCode(w.t, text)
		return result{status: apperr.Status(apperr.Code(code)), code: code, body: text}
	}
	return result{status: op.Status, body: text}
}

func dialMCP(endpoint, key string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           &http.Client{Transport: bearer(key)},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("error body %q is not {\"error\":{\"code\",\"message\"}}", body)
	}
	return e.Error.Code
}

func field(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	s, _ := m[name].(string)
	if s == "" {
		t.Fatalf("%s has no %s", body, name)
	}
	return s
}

// foreignArgs are, per op, arguments aimed at bob's resources: his ids
// wherever the op takes one. Every op must have an entry, so a new op
// cannot escape the isolation walk.
func (w *world) foreignArgs() map[string]map[string]any {
	ep, ev, key, gr := w.bob.endpoint, w.bob.event, w.bob.keyID, w.bob.grant
	return map[string]map[string]any{
		"webhooks.list":                nil,
		"grants.list":                  nil,
		"grants.get":                   {"id": gr},
		"grants.create":                {"allow": []string{"wiki://alice/*"}},
		"grants.update":                {"id": gr, "allow": []string{"*"}},
		"grants.revoke":                {"id": gr},
		"grants.delete":                {"id": gr},
		"webhooks.create":              {"url": w.receiver.URL + "/alice", "event_types": []string{"webhook.test"}},
		"webhooks.get":                 {"id": ep},
		"webhooks.update":              {"id": ep, "description": "pwned", "enabled": false, "url": w.receiver.URL + "/stolen"},
		"webhooks.delete":              {"id": ep},
		"webhooks.rotate_secret":       {"id": ep},
		"webhooks.expire_old_secrets":  {"id": ep},
		"webhooks.rotate_poll_token":   {"id": ep},
		"webhooks.poll":                {"id": ep},
		"webhooks.poll_seek":           {"id": ep, "cursor": "pc_x"},
		"webhooks.send_test":           {"id": ep},
		"webhooks.deliveries":          {"id": ep},
		"webhooks.redeliver":           {"id": ep},
		"webhooks.retry_now":           {"id": ep},
		"webhooks.event_types":         nil,
		"webhooks.test_filter":         {"filter": "data.n > 1", "event_type": "alice.thing", "data": map[string]any{"n": 2}},
		"webhooks.test_transformation": {"transformation": "function handler(w) { return w }", "event_type": "alice.thing", "data": map[string]any{"n": 2}},
		"event_types.put":              {"name": "alice.thing", "exposure": "webhook"},
		"event_types.get":              {"name": "alice.thing"},
		"event_types.list":             nil,
		"events.publish":               {"type": "alice.thing", "data": map[string]any{"published": true}},
		"events.publish_batch":         {"events": []any{map[string]any{"type": "alice.thing"}}},
		"events.get":                   {"id": ev},
		"events.list":                  nil,
		"events.resend":                {"id": ev},
		"owners.list":                  nil,
		"owners.create":                {"id": "mallory"},
		"owners.get":                   {"id": "bob"},
		"owners.update":                {"id": "bob", "attributes": map[string]string{"pwned": "yes"}},
		"owners.delete":                {"id": "bob"},
		"api_keys.list":                nil,
		"api_keys.create":              {"role": "admin"},
		"api_keys.revoke":              {"id": key},
		"webhooks.activity":            nil,
		"webhooks.stats":               {"id": ep},
		"webhooks.delivery":            {"id": ep, "delivery_id": w.bob.delivery},
		"tasks.get":                    {"job": w.bob.job},
		"portal.create_link":           {"ttl": "1h", "features": []string{"endpoints"}},
		"portal.revoke_sessions":       nil,
		"portal.get_branding":          nil,
		"portal.update_branding":       {"title": "pwned"},
		"owners.in_flight":             nil,
		"webhooks.recover":             {"id": ep, "since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		"webhooks.recovery":            {"id": ep, "task_id": w.bob.job},
		"webhooks.export_page":         {"id": ep, "state": "all"},
		"audit.list":                   nil,
	}
}

// withMissingIDs replaces every id in args with one that exists nowhere.
func withMissingIDs(op *ops.Op, args map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for _, f := range reflect.VisibleFields(op.In) {
		if f.Tag.Get("path") != "" {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = "nobody_01J0000000000000000000000"
			if f.Type.Kind() == reflect.Int64 {
				out[name] = 987654321
			}
		}
	}
	return out
}

// bobSnapshot is everything of bob's a foreign key could try to change,
// secrets and all, read straight from the store.
func (w *world) bobSnapshot() string {
	w.t.Helper()
	ctx := context.Background()
	q := w.h.DB.Q()
	o, err1 := q.GetOwner(ctx, "bob")
	ep, err2 := q.GetEndpoint(ctx, "bob", w.bob.endpoint)
	ev, err3 := q.GetEvent(ctx, "bob", w.bob.event)
	ds, err4 := q.ListDeliveries(ctx, "bob", w.bob.endpoint, 100, "")
	ks, err5 := q.ListAPIKeys(ctx, "bob")
	ts, err6 := q.ListEventTypes(ctx, "bob")
	gs, err7 := q.ListGrants(ctx, "bob")
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if err != nil {
			w.t.Fatalf("bob's data: %v", err)
		}
	}
	b, _ := json.Marshal([]any{o, ep, ep.SecretSealed, ep.Enabled, ev, ds, ks, ts, gs})
	return string(b)
}

// TestIsolation walks every op, over REST and MCP, with alice's admin and
// publisher keys aimed at bob's resources: each is answered exactly as for
// an id that exists nowhere (404, or 403 where the role may not call the op
// at all), naming bob as the owner is answered 404, no answer mentions
// anything of bob's, and afterwards bob's data is byte for byte unchanged.
func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			before := w.bobSnapshot()
			bobMarks := []string{w.bob.endpoint, w.bob.event, w.bob.keyID, w.bob.grant, "bob-only", "invoice.paid"}
			args := w.foreignArgs()
			for _, c := range callers {
				t.Run(c.name, func(t *testing.T) {
					for _, op := range w.ops {
						a, ok := args[op.Name]
						if !ok {
							t.Fatalf("op %s has no foreign arguments: add it to foreignArgs", op.Name)
						}
						raw, _ := json.Marshal(a)
						foreign := false // aimed at one of bob's resources
						for _, id := range []string{w.bob.endpoint, w.bob.event, w.bob.keyID, w.bob.grant, `"bob"`, fmt.Sprintf(`"job":%d`, w.bob.job)} {
							foreign = foreign || bytes.Contains(raw, []byte(id))
						}
						for _, role := range []owner.Role{owner.Admin, owner.Publisher} {
							key := w.keys["alice/"+string(role)]
							got := c.call(w, op, key, "", a)
							switch {
							case !role.Allows(op.Role):
								expect(t, op, role, "bob's", got, "forbidden")
							case foreign:
								expect(t, op, role, "bob's", got, "not_found")
							case got.code != "":
								t.Errorf("%s as alice %s on her own: %s", op.Name, role, got)
							}
							if foreign {
								missing := c.call(w, op, key, "", withMissingIDs(op, a))
								if missing.status != got.status || missing.code != got.code {
									t.Errorf("%s as alice %s: bob's id answered %d %s, a missing id %d %s: they must look the same",
										op.Name, role, got.status, got.code, missing.status, missing.code)
								}
							} else {
								for _, m := range bobMarks {
									if bytes.Contains(got.body, []byte(m)) {
										t.Errorf("%s as alice %s mentions bob's %q: %s", op.Name, role, m, got)
									}
								}
							}
							if op.TakesOwner() {
								expect(t, op, role, "naming owner bob", c.call(w, op, key, "bob", a), "not_found")
							}
						}
					}
				})
			}
			if after := w.bobSnapshot(); after != before {
				t.Errorf("bob's data changed:\nbefore %s\nafter  %s", before, after)
			}
			// The job page linked from the delivery log is owner-scoped too.
			ds, _ := w.h.DB.Q().ListDeliveries(context.Background(), "bob", w.bob.endpoint, 1, "")
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/admin/tasks?job=%d", w.api.URL, ds[0].JobID), nil)
			req.Header.Set("Authorization", "Bearer "+w.keys["alice/admin"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("alice reading bob's job %d: %d, want 404", ds[0].JobID, resp.StatusCode)
			}
		})
	}
}

func expect(t *testing.T, op *ops.Op, role owner.Role, what string, got result, code string) {
	t.Helper()
	if got.code != code || got.status != apperr.Status(apperr.Code(code)) {
		t.Errorf("%s as alice %s on %s: %s, want %d %s", op.Name, role, what, got, apperr.Status(apperr.Code(code)), code)
	}
}
