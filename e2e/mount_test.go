package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd"
)

// TestMountedJobURL: under Mount(prefix) a delivery's job_url is a link
// the app's server answers, the prefix included, and the bearer task page
// at that link is the delivery's job.
func TestMountedJobURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := hookd.Open(ctx, hookd.Config{
		Database:    filepath.Join(t.TempDir(), "hookd.db"),
		MasterKey:   bytes.Repeat([]byte{7}, 32),
		Work:        true,
		EgressAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		select {
		case got <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	key, err := h.CreateAPIKey(ctx, "acme", "admin")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := h.Mount(mux, "/webhooks"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	call := func(method, path string, body, out any) int {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s %s: %d, decode: %v", method, path, resp.StatusCode, err)
			}
		}
		return resp.StatusCode
	}

	var ep struct{ ID string }
	if code := call("POST", "/webhooks/api/admin/webhooks", map[string]any{"url": receiver.URL, "event_types": []string{"*"}}, &ep); code != http.StatusCreated {
		t.Fatalf("create endpoint: %d", code)
	}
	if code := call("POST", "/webhooks/api/admin/webhooks/"+ep.ID+"/send_test", nil, nil); code != http.StatusAccepted {
		t.Fatalf("send test: %d", code)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the test delivery never arrived")
	}
	// The receipt comes before the attempt is recorded: wait for the row.
	var url string
	recorded := eventually(30*time.Second, func() bool {
		var log struct {
			Data []struct {
				State  string
				JobURL string `json:"job_url"`
			}
		}
		if code := call("GET", "/webhooks/api/admin/webhooks/"+ep.ID+"/deliveries", nil, &log); code != http.StatusOK {
			t.Fatalf("deliveries: %d", code)
		}
		if len(log.Data) == 1 && log.Data[0].State == "delivered" {
			url = log.Data[0].JobURL
		}
		return url != ""
	})
	if !recorded {
		t.Fatal("the test delivery was not recorded delivered")
	}
	if !strings.HasPrefix(url, "/webhooks/admin/tasks?job=") {
		t.Fatalf("job_url %q does not carry the mount prefix /webhooks", url)
	}
	var task struct{ Kind string }
	if code := call("GET", url, nil, &task); code != http.StatusOK || task.Kind == "" {
		t.Fatalf("GET job_url %s: %d, kind %q", url, code, task.Kind)
	}
}
