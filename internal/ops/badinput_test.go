package ops_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// bad is one refused call: op as who ("" alice's admin; operator; kw, the
// kwork owner's admin) with args, whose {placeholders} the world fills,
// answered code with a message holding each of says.
type bad struct {
	op, who, args string
	code          apperr.Code
	says          []string
}

func badRow(op, args string, code apperr.Code, says ...string) bad {
	return bad{op: op, args: args, code: code, says: says}
}

func badAs(who, op, args string, code apperr.Code, says ...string) bad {
	return bad{op: op, who: who, args: args, code: code, says: says}
}

const (
	invalid   = apperr.Invalid
	notFound  = apperr.NotFound
	conflict  = apperr.Conflict
	forbidden = apperr.Forbidden
)

// badInputs are, per op family, the refusals of each input check: the
// right code (422 for a bad field, naming it and what to send; 404 for
// what is missing or another owner's; 409 for a clash with the state; 403
// for a role that may not) and a message that says what to fix.
var badInputs = []bad{
	// Endpoints.
	badRow("webhooks.create", `{"event_types":["invoice.paid"]}`, invalid, "url is required", "or kind poll"),
	badRow("webhooks.create", `{"url":"ftp://x.example/","event_types":["invoice.paid"]}`, invalid, `url "ftp://x.example/" is not valid`),
	badRow("webhooks.create", `{"url":"x.example/hook","event_types":["invoice.paid"]}`, invalid, `url "x.example/hook" is not valid`),
	badRow("webhooks.create", `{"url":"http://10.1.2.3/hook","event_types":["invoice.paid"]}`, invalid, `url "http://10.1.2.3/hook" is not reachable by hookd`),
	badRow("webhooks.create", `{"kind":"poll","url":"{url}","event_types":["invoice.paid"]}`, invalid, "a polling endpoint (kind poll) has no url"),
	badRow("webhooks.create", `{"kind":"ws","url":"{url}","event_types":["invoice.paid"]}`, invalid, `kind "ws" is not valid: use http (default) or poll`),
	badRow("webhooks.create", `{"url":"{url}","description":"{1025}","event_types":["invoice.paid"]}`, invalid, "description is 1025 bytes; at most 1024"),
	badRow("webhooks.create", `{"url":"{url}","event_types":{types101}}`, invalid, "event_types has 101 entries; at most 100"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"max_in_flight":257}`, invalid, "max_in_flight must be between 1 and 256"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"max_in_flight":-1}`, invalid, "max_in_flight must be between 1 and 256"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["Invoice.Paid"]}`, invalid, `event type glob "Invoice.Paid" is not valid`),
	badRow("webhooks.create", `{"url":"{url}","event_types":["order.shipped"]}`, invalid, `event type "order.shipped" is not registered: register it first with PUT /api/admin/event_types/order.shipped`),
	badRow("webhooks.create", `{"url":"{url}","event_types":["ledger.internal"]}`, invalid, `event type "ledger.internal" is internal and never leaves hookd`, "exposure to webhook"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"grant_id":"grt_nope"}`, invalid, `grant_id "grt_nope" is not one of your grants`),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"grant_id":"{bobgrant}"}`, invalid, "is not one of your grants"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"grant_id":"{256}"}`, invalid, "grant_id is 256 bytes; at most 255"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"signature":"rsa"}`, invalid, `signature "rsa" is not offered by the standard profile: use one of hmac, ed25519, both`),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"headers":{"Host":"evil.example"}}`, invalid, "headers may not set reserved names: Host"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"headers":{"X-Bad Name":"v"}}`, invalid, `header name "X-Bad Name" is not valid`),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"rate_limit":-1}`, invalid, "rate_limit must be between 1 and"),
	badRow("webhooks.create", `{"url":"{url}","event_types":["invoice.paid"],"developer":true}`, invalid, "developer marks a kwork app's developer subscription; the standard profile has no lifecycle events"),
	badAs("kw", "webhooks.create", `{"url":"{url}","event_types":["app.installed"],"ordered":true,"max_in_flight":4}`, invalid, "ordered needs one delivery in flight at a time: this endpoint allows 4"),
	badAs("kw", "webhooks.create", `{"url":"{url}","event_types":["app.installed"],"developer":true}`, conflict, "{kwdev} is the app's developer subscription already"),
	badAs("kw", "webhooks.create", `{"url":"{url}","event_types":["app.installed"],"signature":"ed25519"}`, invalid, "is not offered by the kwork profile: use one of hmac"),
	badRow("webhooks.get", `{"id":"ep_nope"}`, notFound),
	badRow("webhooks.get", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.update", `{"id":"ep_nope","description":"x"}`, notFound),
	badRow("webhooks.update", `{"id":"{bobep}","enabled":false}`, notFound),
	badRow("webhooks.update", `{"id":"{poll}","url":"{url}"}`, invalid, "is a polling endpoint and has no url", "create an http endpoint instead"),
	badRow("webhooks.update", `{"id":"{ep}","url":""}`, invalid, "url is required"),
	badRow("webhooks.update", `{"id":"{ep}","event_types":["Bad"]}`, invalid, `event type glob "Bad" is not valid`),
	badRow("webhooks.update", `{"id":"{ep}","max_in_flight":300}`, invalid, "max_in_flight must be between 1 and 256"),
	badRow("webhooks.update", `{"id":"{ep}","signature":"rsa"}`, invalid, `signature "rsa" is not offered`),
	badRow("webhooks.update", `{"id":"{ep}","grant_id":"grt_nope"}`, invalid, `grant_id "grt_nope" is not one of your grants`),
	badRow("webhooks.update", `{"id":"{ep}","rate_limit":-5}`, invalid, "rate_limit must be between 1 and"),
	badRow("webhooks.update", `{"id":"{ep}","headers":{"Content-Type":"text/plain"}}`, invalid, "reserved names: Content-Type"),
	badRow("webhooks.delete", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.test_filter", `{"filter":" "}`, invalid, "filter is required"),
	badRow("webhooks.test_filter", `{"filter":"data.n >"}`, invalid, "filter"),
	badRow("webhooks.test_filter", `{"filter":"true","event_type":"not.offered"}`, invalid, "not offered"),
	badRow("webhooks.test_transformation", `{"transformation":" "}`, invalid, "transformation is required"),
	badRow("webhooks.test_transformation", `{"transformation":"function handle(w) { return w }"}`, invalid, "defines no handler"),
	badRow("webhooks.send_test", `{"id":"ep_nope"}`, notFound),
	badRow("webhooks.send_test", `{"id":"{epoff}"}`, conflict, "is disabled; enable it (PATCH enabled=true) before sending a test"),
	badRow("webhooks.redeliver", `{"id":"{epoff}"}`, conflict, "is disabled; enable it (PATCH enabled=true) before redelivering"),
	badRow("webhooks.redeliver", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.retry_now", `{"id":"{epoff}"}`, conflict, "is disabled; enable it (PATCH enabled=true) before retrying"),
	badRow("webhooks.retry_now", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.stats", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.deliveries", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.deliveries", `{"id":"{ep}","limit":501}`, invalid, "limit must be between 1 and 500"),
	badRow("webhooks.deliveries", `{"id":"{ep}","limit":-1}`, invalid, "limit must be between 1 and 500"),
	badRow("webhooks.deliveries", `{"id":"{ep}","state":"retrying"}`, invalid, `state "retrying" is not valid: use pending, delivered or failed`),
	badRow("webhooks.deliveries", `{"id":"{ep}","since":"{future}","until":"{past}"}`, invalid, "must be before until"),
	badRow("webhooks.deliveries", `{"id":"{ep}","since":"last week"}`, invalid, `since "last week" is not an RFC 3339 time`),
	badRow("webhooks.delivery", `{"id":"{ep}","delivery_id":"dlv_nope"}`, notFound),
	badRow("webhooks.export_page", `{"id":"{ep}","state":"lost"}`, invalid, `state "lost" is not valid: use failed (default), delivered, pending or all`),
	badRow("webhooks.export_page", `{"id":"{ep}","since":"monday"}`, invalid, `since "monday" is not an RFC 3339 time`),
	badRow("webhooks.export_page", `{"id":"{ep}","since":"{past}","until":"{old}"}`, invalid, "must be before until"),
	badRow("webhooks.export_page", `{"id":"{ep}","limit":201}`, invalid, "limit 201: between 1 and 200 (default 50)"),
	badRow("webhooks.export_page", `{"id":"{ep}","cursor":"xc_garbage!"}`, invalid, `cursor "xc_garbage!" is not an export cursor of hookd's`),
	badRow("webhooks.export_page", `{"id":"{ep}","cursor":"{foreignexport}"}`, invalid, "is a cursor of another endpoint's export ({poll}), not of {ep}"),
	badRow("webhooks.export_page", `{"id":"ep_nope"}`, notFound),
	badRow("webhooks.export_page", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.delivery", `{"id":"{bobep}","delivery_id":"{delivery}"}`, notFound),

	// Signing.
	badRow("webhooks.rotate_secret", `{"id":"{ep}","overlap":"8d"}`, invalid, `overlap "8d" is longer than the maximum of 7 days`),
	badRow("webhooks.rotate_secret", `{"id":"{ep}","overlap":"-1h"}`, invalid, "is negative"),
	badRow("webhooks.rotate_secret", `{"id":"{ep}","overlap":"soon"}`, invalid, `overlap "soon" is not a duration`),
	badRow("webhooks.rotate_secret", `{"id":"{bobep}"}`, notFound),
	badAs("kw", "webhooks.rotate_secret", `{"id":"{kwdev}","overlap":"1h"}`, invalid, "the kwork profile signs every delivery with one key", "send overlap 0"),
	badRow("webhooks.expire_old_secrets", `{"id":"{bobep}"}`, notFound),

	// Polling.
	badRow("webhooks.rotate_poll_token", `{"id":"{ep}"}`, invalid, "is not a polling endpoint (kind http)"),
	badRow("webhooks.rotate_poll_token", `{"id":"{bobep}"}`, notFound),
	badRow("webhooks.poll", `{"id":"{ep}"}`, invalid, "is not a polling endpoint"),
	badRow("webhooks.poll", `{"id":"{poll}","limit":501}`, invalid, "limit 501: between 1 and 500 (default 100)"),
	badRow("webhooks.poll", `{"id":"{poll}","after":"pc_garbage!"}`, invalid, `after "pc_garbage!" is not a cursor of hookd's`),
	badRow("webhooks.poll", `{"id":"{poll}","after":"{foreigncursor}"}`, invalid, "is a cursor of another endpoint ({ep})"),
	badRow("webhooks.poll_seek", `{"id":"{poll}"}`, invalid, "give exactly one of cursor, event_id or at (0 given)"),
	badRow("webhooks.poll_seek", `{"id":"{poll}","at":"{past}","event_id":"{event}"}`, invalid, "(2 given)"),
	badRow("webhooks.poll_seek", `{"id":"{poll}","at":"noon"}`, invalid, `at "noon" is not an RFC 3339 time`),
	badRow("webhooks.poll_seek", `{"id":"{poll}","cursor":"{pastcursor}"}`, invalid, "cursor is past endpoint {poll}'s last message"),
	badRow("webhooks.poll_seek", `{"id":"{ep}","at":"{past}"}`, invalid, "is not a polling endpoint"),

	// Grants.
	badRow("grants.create", `{"allow":[]}`, invalid, "allow needs at least one subject glob"),
	badRow("grants.create", `{"allow":["wiki://a b"]}`, invalid, "has a space or control character"),
	badRow("grants.create", `{"allow":["*"],"description":"{1025}"}`, invalid, "description is 1025 bytes; at most 1024"),
	badRow("grants.create", `{"allow":["*"],"expires_at":"{past}"}`, invalid, "is not in the future; to stop a grant now, revoke it"),
	badRow("grants.get", `{"id":"{bobgrant}"}`, notFound),
	badRow("grants.update", `{"id":"{grant}","allow":[]}`, invalid, "allow needs at least one subject glob"),
	badRow("grants.update", `{"id":"{grant}","expires_at":"{past}"}`, invalid, "is not in the future"),
	badRow("grants.update", `{"id":"{bobgrant}","allow":["*"]}`, notFound),
	badRow("grants.revoke", `{"id":"{bobgrant}"}`, notFound),
	badRow("grants.delete", `{"id":"grt_nope"}`, notFound),

	// Event types.
	badRow("event_types.put", `{"name":"Invoice Paid","exposure":"webhook"}`, invalid, `event type "Invoice Paid" is not valid`),
	badRow("event_types.put", `{"name":"hookd.endpoint.failing","exposure":"internal"}`, invalid, "hookd.endpoint.* are hookd's own failure notifications"),
	badRow("event_types.put", `{"name":"order.shipped","exposure":"public"}`, invalid, `exposure "public" is not valid`),
	badRow("event_types.put", `{"name":"order.shipped","description":"{1025}"}`, invalid, "description is 1025 bytes; at most 1024"),
	badRow("event_types.put", `{"name":"order.shipped","schema":[1]}`, invalid, "schema must be a JSON object"),
	badRow("event_types.put", `{"name":"order.shipped","schema":{"type":"object","required":["id"]},"example":{"n":1}}`, invalid, "example does not match the event type's schema"),
	badRow("event_types.get", `{"name":"Bad Name"}`, invalid, "is not valid"),
	badRow("event_types.get", `{"name":"order.never"}`, notFound),

	// Events.
	badRow("events.publish", `{}`, invalid, "type is required"),
	badRow("events.publish", `{"type":"invoice.paid","data":[1]}`, invalid, "data must be a JSON object"),
	badRow("events.publish", `{"type":"invoice.paid","subject":"{1025}"}`, invalid, "subject is 1025 bytes; at most 1024"),
	badRow("events.publish", `{"type":"hookd.endpoint.failing"}`, invalid, "a producer may not publish them"),
	badRow("events.publish", `{"type":"webhook.test"}`, invalid, "send it to one endpoint with webhooks.send_test"),
	badRow("events.publish_batch", `{"events":[]}`, invalid, "events is empty: send 1 to 1000 events"),
	badRow("events.publish_batch", `{"events":{batch1001}}`, invalid, "events has 1001 entries; at most 1000 per batch"),
	badRow("events.publish_batch", `{"events":[{"type":"invoice.paid","idempotency_key":"k"},{"type":"invoice.paid"},{"type":"invoice.paid","idempotency_key":"k"}]}`, invalid, `events[0] and events[2] share idempotency_key "k"`),
	badRow("events.publish_batch", `{"events":[{"type":"invoice.paid"},{"type":"invoice.paid","data":[1]}]}`, invalid, "events[1]: data must be a JSON object"),
	badRow("events.get", `{"id":"evt_nope"}`, notFound),
	badAs("bob", "events.get", `{"id":"{event}"}`, notFound),
	badRow("events.list", `{"limit":201}`, invalid, "limit 201: give 1 to 200"),
	badRow("events.list", `{"type":"Invoice.*"}`, invalid, "type: event type glob"),
	badRow("events.list", `{"subject_prefix":"{1025}"}`, invalid, "subject_prefix is 1025 bytes long: keep it within 1024"),
	badRow("events.list", `{"since":"{future}","until":"{past}"}`, invalid, "must be before until"),
	badRow("events.list", `{"cursor":"nonsense"}`, invalid, "is not a cursor of events.list"),
	badRow("events.resend", `{"id":"{event}","endpoint_ids":{ids101}}`, invalid, "endpoint_ids has 101 entries: name at most 100"),
	badRow("events.resend", `{"id":"evt_nope"}`, notFound),
	badAs("bob", "events.resend", `{"id":"{event}"}`, notFound),
	badRow("events.resend", `{"id":"{event}","endpoint_ids":["{epoff}"]}`, conflict, "is disabled: enable it (PATCH enabled=true), then resend"),

	// Owners.
	badAs("operator", "owners.create", `{"id":"-carol"}`, invalid, `owner id "-carol" is not valid`),
	badAs("operator", "owners.create", `{"id":"carol","profile":"premium"}`, invalid, `profile "premium" is not known`),
	badAs("operator", "owners.create", `{"id":"carol","profile":"kwork"}`, invalid, "a kwork owner's attributes need fixing", "app (required", "environment (required"),
	badAs("operator", "owners.create", `{"id":"carol","attributes":{"portal_accent":"red"}}`, invalid, "attribute portal_accent"),
	badAs("operator", "owners.create", `{"id":"alice"}`, conflict),
	badAs("operator", "owners.get", `{"id":"nobody"}`, notFound),
	badAs("operator", "owners.update", `{"id":"alice","profile":"kwork"}`, conflict, "owner alice has 3 endpoints; delete them before changing its profile"),
	badAs("operator", "owners.update", `{"id":"bob","attributes":{"locale":"fr"}}`, invalid, "attribute locale"),
	badAs("operator", "owners.update", `{"id":"kw","attributes":{"app":"app_1","environment":"staging"}}`, invalid, `environment "staging" (must be test or live)`),
	badAs("operator", "owners.update", `{"id":"nobody","attributes":{}}`, notFound),
	badAs("operator", "owners.delete", `{"id":"nobody"}`, notFound),
	badAs("operator", "owners.in_flight", `{"limit":101}`, invalid, "limit 101: use 1 to 100, or leave it out for 20"),
	badAs("operator", "owners.in_flight", `{"limit":-1}`, invalid, "use 1 to 100"),

	// Recovery.
	badRow("webhooks.recover", `{"id":"{ep}"}`, invalid, "since is required: the RFC 3339 time the window starts"),
	badRow("webhooks.recover", `{"id":"{ep}","since":"yesterday"}`, invalid, `since "yesterday" is not an RFC 3339 time`),
	badRow("webhooks.recover", `{"id":"{ep}","since":"{past}","until":"{old}"}`, invalid, "must be before until"),
	badRow("webhooks.recover", `{"id":"{ep}","since":"{beyond}"}`, invalid, "is beyond the retention window", "start at or after it"),
	badRow("webhooks.recover", `{"id":"{ep}","since":"{past}","states":["pending"]}`, invalid, `states[0] "pending": use failed or delivered`),
	badRow("webhooks.recover", `{"id":"{bobep}","since":"{past}"}`, notFound),
	badRow("webhooks.recover", `{"id":"{epoff}","since":"{past}"}`, conflict, "before recovering"),
	badRow("webhooks.recovery", `{"id":"{ep}","task_id":987654321}`, notFound, "no recovery 987654321"),
	badRow("webhooks.recovery", `{"id":"{bobep}","task_id":1}`, notFound),

	// API keys.
	badRow("api_keys.create", `{"role":"root"}`, invalid, `role "root" is not valid: use admin, publisher or operator`),
	badRow("api_keys.create", `{"role":"operator"}`, forbidden, "only an operator key may create operator keys"),
	badAs("operator", "api_keys.create", `{"role":"admin"}`, invalid, "name the owner the admin key is for"),
	badRow("api_keys.revoke", `{"id":"key_nope"}`, notFound),
	badRow("api_keys.revoke", `{"id":"{bobkey}"}`, notFound),

	// Tasks.
	badRow("tasks.get", `{"job":0}`, notFound, "job 0 not found"),
	badRow("tasks.get", `{"job":-1}`, notFound),
	badRow("tasks.get", `{"job":987654321}`, notFound, "job 987654321 not found"),
	badAs("bob", "tasks.get", `{"job":{job}}`, notFound),

	// Portal.
	badRow("portal.create_link", `{"ttl":"8d"}`, invalid, `ttl "8d" is longer than 7 days`),
	badRow("portal.create_link", `{"ttl":"0"}`, invalid, "must be more than zero"),
	badRow("portal.create_link", `{"features":["billing"]}`, invalid, `features: "billing" is not a portal feature`),
	badAs("kw", "portal.create_link", `{"features":["grants"]}`, invalid, `"grants" is not offered to a kwork owner`),
	badRow("portal.create_link", `{"locale":"fr"}`, invalid, `locale "fr" is not a language the portal speaks`),
	badRow("portal.create_link", `{"return_url":"http://app.example.com/"}`, invalid, "must be https (http only for localhost)"),
	badRow("portal.update_branding", `{"title":"{81}"}`, invalid, "attribute portal_title is 81 characters long: keep it within 80"),
	badRow("portal.update_branding", `{"accent":"red"}`, invalid, `attribute portal_accent "red" is not a colour`),
	badRow("portal.update_branding", `{"logo_url":"http://app.example.com/logo.png"}`, invalid, "must be an https URL of an image"),
	badRow("portal.update_branding", `{"frame_origins":["https://app.example.com/path"]}`, invalid, "is not an origin"),
	badRow("portal.update_branding", `{"locale":"fr"}`, invalid, "attribute locale"),
	badRow("portal.update_branding", `{"logo_image":"not base64!"}`, invalid, "not base64"),

	// Audit.
	badRow("audit.list", `{"limit":501}`, invalid, "limit must be between 1 and 500"),
	badRow("audit.list", `{"since":"monday"}`, invalid, `since "monday" is not an RFC 3339 time`),
	badRow("audit.list", `{"since":"{future}","until":"{past}"}`, invalid, "must be before until"),
}

// TestBadInput walks badInputs on both engines: each refusal as its row
// says, and, all of them done, the store exactly as before.
func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			w := newWorld(t, backend)
			w.call(w.admin, "event_types.put", `{"name":"ledger.internal","exposure":"internal"}`)
			bobGrant := w.call(ops.Principal{Role: owner.Admin, OwnerID: "bob"}, "grants.create", `{"allow":["*"]}`).(*ops.GrantView).ID
			bobKey := w.key("bob", owner.Publisher).KeyID
			kw := ops.Principal{Role: owner.Admin, OwnerID: "kw"}
			kwDev := w.call(kw, "webhooks.create", `{"url":"`+w.receiver.URL+`/kw","event_types":["app.installed"],"developer":true}`).(*ops.EndpointView).ID
			principals := map[string]ops.Principal{"": w.admin, "operator": w.operator, "kw": kw, "bob": {Role: owner.Admin, OwnerID: "bob"}}
			now := time.Now().UTC()
			many := func(n int, item string) string {
				return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
			}
			fill := strings.NewReplacer(
				"{url}", w.receiver.URL+"/alice-new", "{ep}", w.ep, "{epoff}", w.epDelete, "{poll}", w.poll, "{bobep}", w.bobEndpoint,
				"{grant}", w.grant, "{bobgrant}", bobGrant, "{bobkey}", bobKey, "{kwdev}", kwDev,
				"{event}", w.event, "{delivery}", w.delivery, "{job}", fmt.Sprint(w.job),
				"{past}", now.Add(-time.Hour).Format(time.RFC3339), "{old}", now.Add(-2*time.Hour).Format(time.RFC3339),
				"{future}", now.Add(time.Hour).Format(time.RFC3339), "{beyond}", now.Add(-40*24*time.Hour).Format(time.RFC3339),
				"{1025}", strings.Repeat("d", 1025), "{256}", strings.Repeat("g", 256), "{81}", strings.Repeat("题", 81),
				"{types101}", many(101, `"invoice.paid"`), "{ids101}", many(101, `"ep_x"`), "{batch1001}", many(1001, `{"type":"invoice.paid"}`),
				"{pastcursor}", "pc_"+base64.RawURLEncoding.EncodeToString([]byte(w.poll+".999")),
				"{foreigncursor}", "pc_"+base64.RawURLEncoding.EncodeToString([]byte(w.ep+".0")),
				"{foreignexport}", "xc_"+base64.RawURLEncoding.EncodeToString([]byte(w.poll+".dlv_x")),
			)
			before := w.snapshot()
			seen := map[string]bool{}
			for _, c := range badInputs {
				seen[c.op] = true
				p, ok := principals[c.who]
				if !ok {
					t.Fatalf("no principal %q", c.who)
				}
				args := fill.Replace(c.args)
				_, err := w.try(p, c.op, args)
				says := make([]string, len(c.says))
				for i, s := range c.says {
					says[i] = fill.Replace(s)
				}
				wantErr(t, fmt.Sprintf("%s %.120s", c.op, args), err, c.code, says...)
			}
			if after := w.snapshot(); after != before {
				t.Errorf("refused calls changed the store: %s", changed(before, after))
			}
			// Every op that takes input has a refusal here.
			for _, op := range w.svc.Ops() {
				if op.In.NumField() > 0 && !seen[op.Name] {
					t.Errorf("op %s takes input but has no row in badInputs", op.Name)
				}
			}
		})
	}
}
