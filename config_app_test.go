package hookd

import (
	"context"
	"log/slog"
	"net/netip"
	"net/url"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookd/hookd/internal/event"
)

// TestConfigReachesApp: every field of Config arrives in internal/app's
// Config, which hookd is built from (the end-to-end tests in e2e/ build on
// app.Config directly, so this is where the public settings are checked
// to get there): a field set here that app() drops, or a field added to
// Config without a counterpart, fails. The scope source hands the
// function the event as the public Event.
func TestConfigReachesApp(t *testing.T) {
	var asked Event
	proxy, _ := url.Parse("http://127.0.0.1:3128")
	c := Config{
		Database: "x.db", Schema: "s", MasterKey: make([]byte, 32),
		EgressAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, EgressProxy: proxy, UserAgent: "ua",
		PortalFrameOrigins: []string{"https://app.example.com"}, NoTransformations: true, Destinations: []string{"http", "sqs"}, TransformationTimeLimit: time.Second,
		Work: true, Workers: 3, SlowWorkers: 2, OwnerShare: 0.5, SlowAfter: time.Second,
		EventTypes: []EventType{{Name: "order.created", Description: "d", Scoped: true}, {Name: "order.audit", Internal: true}},
		Catalogs:   []string{"standmeet"}, KeepCatalog: true,
		Scope: func(_ context.Context, source string, ev Event) (bool, error) {
			asked = ev
			return source == "ok", nil
		},
		DefaultProfile: "kwork", Retention: time.Hour,
		OIDC:                &OIDCConfig{Issuer: "https://sso.example.com", ClientID: "c", ClientSecret: "s", RedirectURL: "r", Claim: "groups", OperatorValues: []string{"ops"}, AdminValues: map[string]string{"t": "acme"}},
		ConsoleKeySigninOff: true, AuditRetention: 2 * time.Hour, PartitionInterval: 48 * time.Hour, Unpartitioned: true,
		HTTPTimeout: time.Second, JobTimeout: 2 * time.Second, LeaseFor: 3 * time.Second, RescueStuckJobsAfter: 4 * time.Second,
		BusySnooze: time.Second, DrainMax: 7, FetchCooldown: time.Millisecond, FetchPollInterval: 2 * time.Millisecond,
		MetricsOwnerLabels: true, TracerProvider: noop.NewTracerProvider(),
		Now: time.Now, Log: slog.New(slog.DiscardHandler),
	}
	pub := reflect.ValueOf(c)
	for i := range pub.NumField() {
		if pub.Field(i).IsZero() {
			t.Fatalf("the test leaves Config.%s zero: set it, so its way into app.Config is checked", pub.Type().Field(i).Name)
		}
	}
	a := c.app()
	in := reflect.ValueOf(a)
	for i := range pub.NumField() {
		name := pub.Type().Field(i).Name
		f := in.FieldByName(name)
		switch {
		case !f.IsValid():
			t.Errorf("app.Config has no field %s", name)
		case f.IsZero():
			t.Errorf("Config.%s does not reach app.Config", name)
		}
	}
	if in.NumField() != pub.NumField() {
		t.Errorf("app.Config has %d fields, Config %d: a setting only one of them has", in.NumField(), pub.NumField())
	}
	want := []event.Type{
		{Name: "order.created", Description: "d", Scoped: true, Exposure: event.Webhook},
		{Name: "order.audit", Exposure: event.Internal},
	}
	if !reflect.DeepEqual(a.EventTypes, want) {
		t.Errorf("event types %+v, want %+v", a.EventTypes, want)
	}
	o := a.OIDC
	if got := (OIDCConfig{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL, Claim: o.Claim, OperatorValues: o.OperatorValues, AdminValues: o.AdminValues}); !reflect.DeepEqual(got, *c.OIDC) {
		t.Errorf("OIDC %+v, want %+v", got, *c.OIDC)
	}
	at := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	ev := &event.Event{ID: "evt_1", OwnerID: "acme", Type: "order.created", Subject: "order://1", Data: []byte(`{}`), OccurredAt: at, Tenant: "t1", IdempotencyKey: "k"}
	ok, err := a.Scope(context.Background(), "ok", ev)
	if !ok || err != nil {
		t.Fatalf("scope source answered %v, %v; want the function's true", ok, err)
	}
	if got := (Event{ID: "evt_1", Owner: "acme", Type: "order.created", Subject: "order://1", Data: []byte(`{}`), OccurredAt: at, Tenant: "t1", IdempotencyKey: "k"}); !reflect.DeepEqual(asked, got) {
		t.Fatalf("the function saw %+v, want %+v", asked, got)
	}
}
