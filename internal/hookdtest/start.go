package hookdtest

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/app"
	"github.com/hookd/hookd/internal/store"
)

// MasterKey is the master key of every hookd Start opens.
var MasterKey = bytes.Repeat([]byte{7}, 32)

// Config returns the tests' hookd configuration on the database dbc (from
// an engine of package dbtest): the test master key, egress to 127.0.0.1
// allowed (the receivers are httptest servers), workers on, and a 50 ms
// fetch poll so a test does not wait on River's default second.
func Config(dbc store.Config) app.Config {
	return app.Config{
		Database: dbc.URL, Schema: dbc.Schema,
		MasterKey:         MasterKey,
		EgressAllow:       []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Work:              true,
		FetchPollInterval: 50 * time.Millisecond,
	}
}

// Start opens hookd with cfg (usually [Config], changed), starts it and
// serves its Handler on a loopback server. When t ends the server is closed
// and hookd stopped (up to 10 s for in-flight work) and closed.
func Start(t testing.TB, cfg app.Config) (Hookd, *httptest.Server) {
	t.Helper()
	h := Open(t, cfg)
	api := httptest.NewServer(h.Handler())
	t.Cleanup(api.Close)
	return h, api
}

// Open is [Start] without the server, for a test that serves hookd its own
// way (mounted in an app's mux, say): it opens hookd with cfg and starts it.
// When t ends hookd is stopped (up to 10 s for in-flight work) and closed,
// after any server the test registered afterwards is closed.
func Open(t testing.TB, cfg app.Config) Hookd {
	t.Helper()
	ctx := context.Background()
	h, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatalf("start: %v", errors.Join(err, h.Close()))
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(sctx)
		if err := h.Close(); err != nil {
			t.Logf("close hookd: %v", err)
		}
	})
	return Hookd{h}
}
