package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestListenPoll: `hookd listen --poll` opens no port and needs no egress
// allowance: it creates a polling endpoint, prints each event published
// while it runs (verified with the endpoint's secret) and deletes the
// endpoint when it stops.
func TestListenPoll(t *testing.T) {
	// Not parallel: serveInProcess sets the process environment.
	_, url, key := serveInProcess(t)
	call := func(method, path, body string) int {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := call("PUT", "/api/admin/event_types/invoice.paid", `{"exposure":"webhook"}`); s != 200 {
		t.Fatalf("register type: %d", s)
	}

	out := &syncWriter{w: &bytes.Buffer{}, wrote: make(chan struct{}, 1)}
	printed := func() string {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.w.(*bytes.Buffer).String()
	}
	waitPrinted := func(text string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(printed(), text) {
			select {
			case <-out.wrote:
			case <-deadline:
				t.Fatalf("listen --poll never printed %q; printed:\n%s", text, printed())
			}
		}
	}
	lctx, stop := context.WithCancel(context.Background())
	listened := make(chan int, 1)
	var lerr bytes.Buffer
	go func() {
		listened <- run(lctx, []string{"listen", "--poll", "--url", url, "--key", key, "--types", "invoice.*"}, nil, out, &lerr)
	}()
	waitPrinted("polling endpoint ep_")
	if s := call("POST", "/api/v1/events", `{"type":"invoice.paid","subject":"invoice://7","data":{"amount":7}}`); s != 202 {
		t.Fatalf("publish: %d", s)
	}
	waitPrinted(`"amount": 7`)
	waitPrinted("invoice.paid")
	stop()
	if code := <-listened; code != 0 {
		t.Fatalf("listen --poll exit %d: %s", code, lerr.String())
	}
	if !strings.Contains(printed(), "deleted endpoint ep_") || strings.Contains(printed(), "rejected") {
		t.Fatalf("listen --poll printed:\n%s", printed())
	}
}
