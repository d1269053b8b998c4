package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeEgressProxyFlag: a proxy URL hookd cannot use (not http, or a
// path) stops serve before anything is opened, naming the flag and saying
// what to give, without echoing a password it held.
func TestServeEgressProxyFlag(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"socks5://proxy:1080", "https://proxy:3128", "http://u:hunter2@proxy:3128/path"} {
		var out strings.Builder
		code := run(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--egress-proxy", bad, "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &out)
		if code != 2 || !strings.Contains(out.String(), "--egress-proxy") || !strings.Contains(out.String(), "CONNECT") {
			t.Errorf("--egress-proxy %s: exit %d, %q; want 2 naming the flag and what it wants", bad, code, out.String())
		}
		if strings.Contains(out.String(), "hunter2") {
			t.Errorf("--egress-proxy %s: the error shows the proxy password", bad)
		}
	}
}
