package profile_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/webhook"
)

// The hot path of one attempt: render the envelope of a 1 KB payload and
// sign it (target < 2 µs and ≤ 4 allocs). Run with -benchmem; the
// "...ReusedSigner" variants show what building a signer per Sign costs.

func benchEvent(b *testing.B) (*event.Event, *owner.Owner) {
	b.Helper()
	data := []byte(`{"published":true,"text":"` + string(bytes.Repeat([]byte("x"), 1000)) + `"}`)
	if !json.Valid(data) || len(data) < 1024 {
		b.Fatalf("payload is %d bytes", len(data))
	}
	ev := &event.Event{
		ID: "evt_01J8ZK3Q7N5W2XH4VY6RBTMD9C", Type: "invoice.paid", Subject: "invoice://inv_123",
		OccurredAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Tenant: "tenant_1", Data: data,
	}
	o := &owner.Owner{ID: "app1", Profile: "kwork", Attributes: map[string]string{
		"app": "app_1", "environment": "live", "app_kind": "integration", "api_version": "2024-01-01",
	}}
	return ev, o
}

func benchSignEnvelope(b *testing.B, p profile.Profile, secret string) {
	ev, o := benchEvent(b)
	now := time.Unix(1_700_000_000, 0)
	h := make(http.Header, 6)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// As an attempt does: the body goes into a pooled buffer, which
		// the egress client hands back once the request is written.
		buf := profile.Buffers.Get()
		body, err := p.AppendBody(*buf, ev, o)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Sign(h, secret, profile.Message{DeliveryID: "dlv_01J8ZK3Q7N5W2XH4VY6RBTMD9D", EventID: ev.ID, EventType: ev.Type, Body: body}, now); err != nil {
			b.Fatal(err)
		}
		*buf = body
		profile.Buffers.Put(buf)
	}
}

func BenchmarkStandardSignEnvelope(b *testing.B) {
	secret, err := webhook.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	benchSignEnvelope(b, profile.Standard{}, secret)
}

func BenchmarkKworkSignEnvelope(b *testing.B) {
	benchSignEnvelope(b, profile.Kwork{}, "kw_secret_0123456789abcdef")
}

// The same work with the signer kept (what a per-endpoint signer cache
// would give): the difference to the benchmarks above is the price of
// webhook.NewSigner / NewKworkSigner per Sign call.

func BenchmarkStandardSignEnvelopeReusedSigner(b *testing.B) {
	secret, err := webhook.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	s, err := webhook.NewSigner(secret)
	if err != nil {
		b.Fatal(err)
	}
	ev, o := benchEvent(b)
	var sig [64]byte
	b.ReportAllocs()
	for b.Loop() {
		buf := profile.Buffers.Get()
		body, _ := profile.Standard{}.AppendBody(*buf, ev, o)
		_ = s.AppendSign(sig[:0], ev.ID, 1_700_000_000, body)
		*buf = body
		profile.Buffers.Put(buf)
	}
}

func BenchmarkKworkSignEnvelopeReusedSigner(b *testing.B) {
	s, err := webhook.NewKworkSigner("kw_secret_0123456789abcdef")
	if err != nil {
		b.Fatal(err)
	}
	ev, o := benchEvent(b)
	var sig [96]byte
	b.ReportAllocs()
	for b.Loop() {
		buf := profile.Buffers.Get()
		body, _ := profile.Kwork{}.AppendBody(*buf, ev, o)
		_ = s.AppendSign(sig[:0], 1_700_000_000, body)
		*buf = body
		profile.Buffers.Put(buf)
	}
}
