package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/transform"
)

// CodeIn is an endpoint's own code as create takes it (issue 46).
type CodeIn struct {
	Filter         string `json:"filter,omitempty" jsonschema:"a CEL expression over the event (type, subject, occurred_at, data) that must be true for it to reach the endpoint, e.g. data.amount > 1000; empty: every subscribed event (at most 4096 bytes)"`
	Transformation string `json:"transformation,omitempty" jsonschema:"JavaScript defining function handler(webhook) that gets {method, url, headers, payload} and returns it changed (payload, headers, the url's path or query) or with cancel = true (not sent); empty: the envelope as it is (at most 65536 bytes)"`
}

// CodePatch is the code as update takes it: a field left out keeps its
// value, an empty string removes it.
type CodePatch struct {
	Filter         *string `json:"filter,omitempty" jsonschema:"a CEL expression the event must satisfy; empty string removes the filter"`
	Transformation *string `json:"transformation,omitempty" jsonschema:"JavaScript defining handler(webhook); empty string removes the transformation"`
}

func (in CodeIn) patch() CodePatch {
	return CodePatch{Filter: &in.Filter, Transformation: &in.Transformation}
}

// checkCode checks the patch's code as saving it does, before the
// transaction (a script's top level may run up to its time limit): a
// filter that does not compile, a script that is too large, does not
// compile or defines no handler is a 422 saying what to fix.
func (s *Service) checkCode(in CodePatch) error {
	if in.Filter != nil && strings.TrimSpace(*in.Filter) != "" {
		if err := transform.CheckFilter(strings.TrimSpace(*in.Filter)); err != nil {
			return err
		}
	}
	if in.Transformation != nil && strings.TrimSpace(*in.Transformation) != "" {
		return s.checkScript(*in.Transformation)
	}
	return nil
}

// applyCode applies a checked patch (checkCode) to c.
func applyCode(c *endpoint.Code, in CodePatch) {
	if in.Filter != nil {
		c.Filter = strings.TrimSpace(*in.Filter)
	}
	if in.Transformation != nil {
		c.Transformation = *in.Transformation
		if strings.TrimSpace(c.Transformation) == "" {
			c.Transformation = ""
		}
	}
}

// checkScript refuses a script when transformations are off, else checks
// it as saving it does.
func (s *Service) checkScript(js string) error {
	code := s.Delivery.Code()
	if code.TransformationsOff {
		return apperr.New(apperr.Invalid, "transformation: transformations are turned off on this server (hookd serve --no-transformations); leave it out")
	}
	return code.Scripts.Check(js)
}

// SampleIn names the event a try runs on: event_type's example data from
// the owner's catalog, or the given event.
type SampleIn struct {
	EventType string          `json:"event_type,omitempty" jsonschema:"an event type offered to the owner: its example data is the sample (default: the first type offered that has an example)"`
	Subject   string          `json:"subject,omitempty" jsonschema:"the sample's subject (default: sample://subject)"`
	Data      json.RawMessage `json:"data,omitempty" jsonschema:"the sample's data; given, it replaces the type's example"`
}

// TestFilterIn is webhooks.test_filter's input.
type TestFilterIn struct {
	Filter string `json:"filter" jsonschema:"the CEL expression to try"`
	SampleIn
}

// TestFilterOut is webhooks.test_filter's answer: whether the sample
// passes, or why the filter failed on it (a failure counts as false).
type TestFilterOut struct {
	Passed bool         `json:"passed"`
	Error  string       `json:"error,omitempty" jsonschema:"the run-time error (a field the sample lacks …); the event would not be delivered"`
	Event  *event.Event `json:"event" jsonschema:"the sample event"`
}

// TestTransformationIn is webhooks.test_transformation's input.
type TestTransformationIn struct {
	Transformation string            `json:"transformation" jsonschema:"the JavaScript to try (defining handler(webhook))"`
	URL            string            `json:"url,omitempty" jsonschema:"the endpoint URL the webhook carries (default https://receiver.example/webhook)"`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"the endpoint's custom headers the webhook carries"`
	SampleIn
}

// TestTransformationOut is what the handler made of the sample: the
// request hookd would sign and send, cancel, or the script's error.
type TestTransformationOut struct {
	Cancel  bool              `json:"cancel,omitempty" jsonschema:"the handler cancelled: this delivery would not be sent"`
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Payload json.RawMessage   `json:"payload,omitempty" jsonschema:"the body hookd would sign and send"`
	Error   string            `json:"error,omitempty" jsonschema:"the run failed: the script's error with its line and column; the delivery would fail as a permanent failure"`
	// Input is the webhook the handler got.
	Input json.RawMessage `json:"input" jsonschema:"the webhook the handler got: {method, url, headers, payload}"`
}

func (s *Service) codeOps() []*Op {
	const base = "/api/admin/webhooks"
	return []*Op{
		define(Op{Name: "webhooks.test_filter", NoAudit: "runs a filter on a sample event; changes and sends nothing", Summary: "Try a filter on a sample event (the type's example, or one given); nothing is sent.", Method: http.MethodPost, Path: base + "/test_filter", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.testFilter),
		define(Op{Name: "webhooks.test_transformation", NoAudit: "runs a transformation on a sample event; changes and sends nothing", Summary: "Try a transformation on a sample event (the type's example, or one given): the request it would make, or its error; nothing is sent.", Method: http.MethodPost, Path: base + "/test_transformation", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.testTransformation),
	}
}

func (s *Service) testFilter(ctx context.Context, p Principal, in *TestFilterIn) (*TestFilterOut, error) {
	f := strings.TrimSpace(in.Filter)
	if f == "" {
		return nil, apperr.New(apperr.Invalid, "filter is required: a CEL expression, e.g. data.amount > 1000")
	}
	if err := transform.CheckFilter(f); err != nil {
		return nil, err
	}
	ev, err := s.sample(ctx, p.OwnerID, in.SampleIn)
	if err != nil {
		return nil, err
	}
	out := &TestFilterOut{Event: ev}
	out.Passed, err = s.Delivery.Code().Filters.Eval(f, transform.NewInput(transform.Event{Type: ev.Type, Subject: ev.Subject, OccurredAt: ev.OccurredAt, Data: ev.Data}))
	if err != nil {
		out.Passed, out.Error = false, err.Error()
	}
	return out, nil
}

// sampleURL is the URL a try's webhook carries when none is given.
const sampleURL = "https://receiver.example/webhook"

func (s *Service) testTransformation(ctx context.Context, p Principal, in *TestTransformationIn) (*TestTransformationOut, error) {
	if strings.TrimSpace(in.Transformation) == "" {
		return nil, apperr.New(apperr.Invalid, "transformation is required: JavaScript defining function handler(webhook) { … return webhook; }")
	}
	if err := s.checkScript(in.Transformation); err != nil {
		return nil, err
	}
	headers, err := endpoint.CheckHeaders(in.Headers)
	if err != nil {
		return nil, err
	}
	u := in.URL
	if u == "" {
		u = sampleURL
	}
	if err := s.checkURL(endpoint.KindHTTP, u); err != nil {
		return nil, err
	}
	o, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	ev, err := s.sample(ctx, p.OwnerID, in.SampleIn)
	if err != nil {
		return nil, err
	}
	body, err := prof.AppendBody(nil, ev, o)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "the sample cannot be rendered as the %s profile's envelope: %v", prof.Name(), err)
	}
	wh := transform.Webhook{Method: http.MethodPost, URL: u, Headers: headers, Payload: body}
	out := &TestTransformationOut{}
	out.Input, _ = json.Marshal(map[string]any{"method": wh.Method, "url": wh.URL, "headers": headers, "payload": json.RawMessage(body)}) // JSON in, JSON out
	res, err := s.Delivery.Code().Scripts.Run(in.Transformation, wh)
	if err == nil {
		err = transform.CheckResult(wh, &res)
	}
	if err == nil && !res.Cancel {
		res.Headers, err = endpoint.CheckHeaders(res.Headers)
	}
	var re *transform.RunError
	var ae *apperr.Error
	switch {
	case errors.As(err, &re):
		out.Error = re.Error()
	case errors.As(err, &ae):
		out.Error = "webhook.headers: " + ae.Message
	case err != nil:
		return nil, err
	case res.Cancel:
		out.Cancel = true
	default:
		out.Method, out.URL, out.Headers, out.Payload = res.Method, res.URL, res.Headers, res.Payload
	}
	return out, nil
}

// sample is the event a try runs on: in's data, else the example of in's
// type (or of the first type offered to the owner that has one).
func (s *Service) sample(ctx context.Context, ownerID string, in SampleIn) (*event.Event, error) {
	now := s.now()
	ev := &event.Event{ID: event.NewID("evt_", now), OwnerID: ownerID, Type: strings.TrimSpace(in.EventType), Subject: in.Subject, OccurredAt: now, CreatedAt: now, Data: in.Data}
	if ev.Subject == "" {
		ev.Subject = "sample://subject"
	}
	if len(ev.Data) > event.MaxDataBytes {
		return nil, apperr.New(apperr.Invalid, "data is %d bytes; at most %d", len(ev.Data), event.MaxDataBytes)
	}
	if len(ev.Data) > 0 && !json.Valid(ev.Data) {
		return nil, apperr.New(apperr.Invalid, "data is not JSON")
	}
	if len(ev.Data) > 0 && ev.Type != "" {
		return ev, nil
	}
	ts, err := s.DB.Q().ListEventTypes(ctx, ownerID)
	if err != nil {
		return nil, err
	}
	found := false
	for _, t := range ts {
		if t.Exposure != event.Webhook || ev.Type != "" && t.Name != ev.Type || ev.Type == "" && len(t.Example) == 0 {
			continue
		}
		ev.Type, found = t.Name, true
		if len(ev.Data) == 0 {
			ev.Data = t.Example
		}
		break
	}
	switch {
	case !found && ev.Type != "":
		return nil, apperr.New(apperr.Invalid, "event_type %q is not offered to this owner (webhooks.event_types lists them)", in.EventType)
	case ev.Type == "":
		return nil, apperr.New(apperr.Invalid, "no event type offered to this owner has an example: give event_type and data")
	case len(ev.Data) == 0:
		ev.Data = json.RawMessage(`{}`)
	}
	ev.OccurredAt = ev.OccurredAt.Truncate(time.Microsecond)
	return ev, nil
}
