package receiver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/webhook"
)

const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	kworkSecret    = "kw_secret_3f9a"
	// waitLimit only bounds a broken test; every wait ends on a signal.
	waitLimit = 10 * time.Second
)

// output is a goroutine-safe stdout that signals every write.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newOutput() *output { return &output{written: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.buf.Write(p)
	select {
	case o.written <- struct{}{}:
	default:
	}
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor blocks until the output matches re and returns the submatches.
func (o *output) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		if m := re.FindStringSubmatch(o.String()); m != nil {
			return m
		}
		select {
		case <-o.written:
		case <-deadline:
			t.Fatalf("output never matched %s; got:\n%s", re, o.String())
		}
	}
}

type listening struct {
	url    string
	stdout *output
	stderr *output
	stop   func() error
}

// setupListen runs Listen on 127.0.0.1:0 and returns its base URL, read from
// what it prints. stop cancels it and returns Listen's result.
func setupListen(t *testing.T, args ...string) listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := newOutput(), newOutput()
	done := make(chan error, 1)
	go func() {
		done <- Listen(ctx, append([]string{"--addr", "127.0.0.1:0"}, args...), stdout, stderr)
	}()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(waitLimit):
				t.Fatal("Listen did not return after cancel")
			}
		})
		return result
	}
	t.Cleanup(func() { _ = stop() })
	m := stdout.waitFor(t, regexp.MustCompile(`listening on (http://[0-9.:]+)`))
	return listening{url: m[1], stdout: stdout, stderr: stderr, stop: stop}
}

func send(t *testing.T, method, url string, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(text)
}

func standardHeaders(t *testing.T, secret, msgID string, body []byte) http.Header {
	t.Helper()
	s, err := webhook.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	h := http.Header{}
	h.Set(webhook.HeaderID, msgID)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now, 10))
	h.Set(webhook.HeaderSignature, s.Sign(msgID, now, body))
	return h
}

func kworkHeaders(secret, delivery string, body []byte) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderKworkSignature, webhook.SignKwork(secret, time.Now().Unix(), body))
	h.Set(webhook.HeaderKworkEvent, "app.installed")
	h.Set(webhook.HeaderKworkDelivery, delivery)
	return h
}

func TestListenStandard(t *testing.T) {
	t.Parallel()
	l := setupListen(t, "--secret", standardSecret)
	body := []byte(`{"id":"evt_1","type":"post.published","subject":"posts/7","data":{"published":true}}`)

	status, _ := send(t, http.MethodPost, l.url+"/hooks", standardHeaders(t, standardSecret, "msg_valid", body), body)
	if status != http.StatusNoContent {
		t.Fatalf("valid delivery: status %d, want 204", status)
	}
	l.stdout.waitFor(t, regexp.MustCompile(`(?m)^\S+ post\.published id=msg_valid\n\{\n  "id": "evt_1",\n(.|\n)*    "published": true\n  \}\n\}\n`))

	other, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	status, text := send(t, http.MethodPost, l.url+"/", standardHeaders(t, other, "msg_forged", body), body)
	if status != http.StatusUnauthorized || !strings.Contains(text, "no matching signature") {
		t.Errorf("forged delivery: %d %q, want 401 with the reason", status, text)
	}
	l.stdout.waitFor(t, regexp.MustCompile(`rejected: webhook: no matching signature`))
	if strings.Contains(l.stdout.String(), "msg_forged") {
		t.Errorf("forged delivery printed as accepted:\n%s", l.stdout.String())
	}
	if strings.Contains(l.stdout.String(), "\x1b[") {
		t.Errorf("colour written to a non-terminal:\n%q", l.stdout.String())
	}

	if err := l.stop(); err != nil {
		t.Fatalf("Listen after cancel: %v", err)
	}
	if _, err := http.Post(l.url, "application/json", bytes.NewReader(body)); err == nil {
		t.Error("server still answers after Listen returned")
	}
}

func TestListenKwork(t *testing.T) {
	t.Parallel()
	l := setupListen(t, "--secret", kworkSecret, "--profile", "kwork", "--path", "/webhooks")
	body := []byte(`{"id":"evt_01JBC","type":"app.installed","createdAt":"2026-10-28T12:00:00Z","tenant":"acme_corp","data":{"version":"1.0.0"}}`)

	status, _ := send(t, http.MethodPost, l.url+"/webhooks", kworkHeaders(kworkSecret, "dlv_1", body), body)
	if status != http.StatusNoContent {
		t.Fatalf("valid delivery: status %d, want 204", status)
	}
	l.stdout.waitFor(t, regexp.MustCompile(`app\.installed id=dlv_1\n\{\n  "id": "evt_01JBC",`))

	tampered := bytes.Replace(body, []byte("acme_corp"), []byte("evil_corp"), 1)
	status, text := send(t, http.MethodPost, l.url+"/webhooks", kworkHeaders(kworkSecret, "dlv_2", body), tampered)
	if status != http.StatusUnauthorized || !strings.Contains(text, "no matching signature") {
		t.Errorf("tampered body: %d %q, want 401 with the reason", status, text)
	}
	l.stdout.waitFor(t, regexp.MustCompile(`rejected: webhook: no matching signature`))

	status, text = send(t, http.MethodPost, l.url+"/webhooks", http.Header{}, body)
	if status != http.StatusUnauthorized || !strings.Contains(text, "missing header: X-Kwork-Signature") {
		t.Errorf("unsigned: %d %q, want 401 missing header", status, text)
	}
	if status, _ := send(t, http.MethodPost, l.url+"/elsewhere", kworkHeaders(kworkSecret, "dlv_3", body), body); status != http.StatusNotFound {
		t.Errorf("other path: status %d, want 404", status)
	}
	if status, _ := send(t, http.MethodGet, l.url+"/webhooks", http.Header{}, nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", status)
	}
}

func TestListenUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no secret", nil, "--secret is required"},
		{"bad profile", []string{"--secret", "x", "--profile", "svix"}, `--profile "svix"`},
		{"bad standard secret", []string{"--secret", "not base64!"}, "invalid secret"},
		{"relative path", []string{"--secret", kworkSecret, "--profile", "kwork", "--path", "hooks"}, "must start with /"},
		{"unknown flag", []string{"--secret", kworkSecret, "--port", "1"}, "flag provided but not defined"},
		{"stray argument", []string{"--secret", kworkSecret, "--profile", "kwork", "extra"}, `unexpected argument "extra"`},
		{"bad address", []string{"--secret", kworkSecret, "--profile", "kwork", "--addr", "127.0.0.1:http-nope"}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Listen(context.Background(), tt.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Listen(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
