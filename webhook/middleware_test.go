package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// received is what the wrapped handler saw.
type received struct {
	event Event
	ok    bool
	body  []byte
}

// setupMiddleware starts a real HTTP server running Middleware(v) in front of
// a handler that reports what it saw on the returned channel.
func setupMiddleware(t *testing.T, v RequestVerifier, opts ...MiddlewareOption) (*httptest.Server, <-chan received) {
	t.Helper()
	seen := make(chan received, 1)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, ok := EventFromContext(r.Context())
		body, _ := io.ReadAll(r.Body)
		seen <- received{event: ev, ok: ok, body: body}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(Middleware(v, next, opts...))
	t.Cleanup(srv.Close)
	return srv, seen
}

func post(t *testing.T, url string, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

func standardHeader(t *testing.T, msgID string, ts int64, body []byte) http.Header {
	t.Helper()
	s, err := NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, s.Sign(msgID, ts, body))
	return h
}

func TestMiddlewareStandard(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	srv, seen := setupMiddleware(t, v, WithMaxBodyBytes(4096))
	body := []byte(`{"id":"evt_1","type":"post.published","data":{"published":true}}`)
	now := time.Now().Unix()

	status, _ := post(t, srv.URL, standardHeader(t, "msg_1", now, body), body)
	if status != http.StatusNoContent {
		t.Fatalf("valid request: status %d, want 204", status)
	}
	got := <-seen
	if !got.ok || got.event.ID != "evt_1" || got.event.Type != "post.published" || !bytes.Equal(got.body, body) {
		t.Errorf("handler saw %+v (event ok %v, body %q)", got.event, got.ok, got.body)
	}

	tampered := standardHeader(t, "msg_1", now, body)
	tampered.Set(HeaderID, "msg_2")
	expired := standardHeader(t, "msg_1", now-301, body)
	missing := standardHeader(t, "msg_1", now, body)
	missing.Del(HeaderSignature)
	notEvent := []byte(`["not","an","event"]`)
	large := bytes.Repeat([]byte(" "), 5000)
	tests := []struct {
		name   string
		h      http.Header
		body   []byte
		status int
		reason string
	}{
		{"tampered id", tampered, body, http.StatusUnauthorized, "no matching signature"},
		{"expired", expired, body, http.StatusUnauthorized, "timestamp too old"},
		{"missing signature", missing, body, http.StatusUnauthorized, "missing header: webhook-signature"},
		{"signed non-event", standardHeader(t, "msg_3", now, notEvent), notEvent, http.StatusBadRequest, "malformed body"},
		{"too large", standardHeader(t, "msg_4", now, large), large, http.StatusRequestEntityTooLarge, "larger"},
	}
	for _, tt := range tests {
		status, text := post(t, srv.URL, tt.h, tt.body)
		if status != tt.status || !strings.Contains(text, tt.reason) {
			t.Errorf("%s: %d %q, want %d containing %q", tt.name, status, text, tt.status, tt.reason)
		}
		select {
		case got := <-seen:
			t.Errorf("%s: handler was called with %+v", tt.name, got.event)
		default:
		}
	}
}

func TestMiddlewareKwork(t *testing.T) {
	t.Parallel()
	v, err := NewKworkVerifier(kworkSecret)
	if err != nil {
		t.Fatal(err)
	}
	srv, seen := setupMiddleware(t, v)
	h := http.Header{}
	h.Set(HeaderKworkSignature, SignKwork(kworkSecret, time.Now().Unix(), kworkBody))
	if status, text := post(t, srv.URL, h, kworkBody); status != http.StatusNoContent {
		t.Fatalf("valid kwork request: %d %q", status, text)
	}
	if got := <-seen; got.event.Tenant != "acme_corp" || !bytes.Equal(got.body, kworkBody) {
		t.Errorf("handler saw %+v", got.event)
	}
	h.Set(HeaderKworkSignature, SignKwork("kw_other", time.Now().Unix(), kworkBody))
	if status, text := post(t, srv.URL, h, kworkBody); status != http.StatusUnauthorized || !strings.Contains(text, "no matching signature") {
		t.Errorf("wrong secret: %d %q, want 401 no matching signature", status, text)
	}
}
