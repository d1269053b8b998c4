package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeDestinationsFlag: a kind that does not exist, or no kind at
// all, stops serve before anything is opened, naming the flag and the
// kinds that exist.
func TestServeDestinationsFlag(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"http,rabbitmq", "", " , ", "webhooks"} {
		var out strings.Builder
		code := run(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--destinations", bad, "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &out)
		if code != 2 || !strings.Contains(out.String(), "--destinations") || !strings.Contains(out.String(), "http, amqp, nats, kafka, sqs, gcppubsub, redis") {
			t.Errorf("--destinations %q: exit %d, %q; want 2 naming the flag and the kinds that exist", bad, code, out.String())
		}
	}
}

// TestServeDestinationsEnv: HOOKD_DESTINATIONS is read like the flag, a
// bad value refused the same way.
func TestServeDestinationsEnv(t *testing.T) {
	t.Setenv("HOOKD_DESTINATIONS", "http,carrier-pigeon")
	var out strings.Builder
	code := run(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &out)
	if code != 2 || !strings.Contains(out.String(), `"carrier-pigeon" is no destination kind`) {
		t.Errorf("HOOKD_DESTINATIONS=http,carrier-pigeon: exit %d, %q", code, out.String())
	}
}

// TestServeDestinations: hookd serve --destinations sqs refuses an http
// endpoint with a 422 naming url and the kinds it accepts, and takes an
// SQS one; without the flag the http endpoint is created.
func TestServeDestinations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := createKey(t, dir)
	p := startServe(t, dir, "--destinations", "sqs")
	out := call(t, p, key, "POST", "/api/admin/webhooks", `{"url": "https://example.com/hook", "event_types": ["*"]}`, 422)
	if msg, _ := out["error"].(map[string]any)["message"].(string); !strings.HasPrefix(msg, "url: ") || !strings.Contains(msg, "accepts sqs") {
		t.Fatalf("an http endpoint with --destinations sqs: %v", out)
	}
	call(t, p, key, "POST", "/api/admin/webhooks", `{"url": "sqs://AKID:s3cret@127.0.0.1:4566/000000000000/orders?region=us-east-1&tls=false", "event_types": ["*"]}`, 201)

	dir2 := t.TempDir()
	key2 := createKey(t, dir2)
	call(t, startServe(t, dir2), key2, "POST", "/api/admin/webhooks", `{"url": "https://example.com/hook", "event_types": ["*"]}`, 201)
}
