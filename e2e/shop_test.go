package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/webhook"
)

// shopBinary builds examples/shop, its own module that requires hookd
// through a replace, once per test run: hookd used from outside its module,
// through exported names only. It builds against a copy of the shop's
// go.mod (-modfile), so a dependency hookd gains since the shop's go.mod
// was last tidied is added there, not in the tree; hookd's go.sum vouches
// for it.
var shopBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "hookd-shop")
	if err != nil {
		return "", err
	}
	shop := filepath.Join("..", "examples", "shop")
	goMod, err := os.ReadFile(filepath.Join(shop, "go.mod"))
	if err != nil {
		return "", err
	}
	var sums []byte
	for _, f := range []string{filepath.Join(shop, "go.sum"), filepath.Join("..", "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		sums = append(sums, b...)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), goMod, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "shop")
	cmd := exec.Command("go", "build", "-modfile", filepath.Join(dir, "go.mod"), "-mod=mod", "-o", bin, ".")
	cmd.Dir = shop
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build examples/shop: %v\n%s", err, out)
	}
	return bin, nil
})

// TestShopExample runs the example shop on each engine with a real
// receiver: a committed order arrives as a verified order.created, an order
// refused after its event was published inside the transaction leaves no
// row and sends nothing, and a partner endpoint scoped to another region
// gets nothing; the console answers under /webhooks/admin/ and signs in
// with the shop's key.
func TestShopExample(t *testing.T) {
	t.Parallel()
	bin, err := shopBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "shop.db")
			if backend.Name == "postgres" {
				url := dbtest.PostgresURL(t)
				db = url + "&search_path=" + dbtest.NewSchema(t, url)
			}
			shop := startShop(t, bin, db)
			rc := newReceiver(t)
			var plain, partner struct{ ID, Secret string }
			shop.must(201, "POST", "/webhooks/api/admin/webhooks", map[string]any{"url": rc.URL + "/plain", "event_types": []string{"order.*"}}, &plain)
			shop.must(201, "POST", "/webhooks/api/admin/webhooks", map[string]any{"url": rc.URL + "/partner-us", "event_types": []string{"order.*"}, "grant_id": "region:us"}, &partner)

			// Refused after the insert and the publish: all of it rolls back.
			var refused struct{ Error string }
			shop.must(422, "POST", "/orders", map[string]any{"sku": "poster", "quantity": 5, "region": "eu", "email": "ann@example.com"}, &refused)
			if !strings.Contains(refused.Error, "stock") {
				t.Fatalf("refusal %q does not say what is wrong", refused.Error)
			}
			shop.must(422, "POST", "/orders", map[string]any{"sku": "mug", "quantity": 1, "region": "eu", "email": "not an address"}, &refused)

			var placed struct {
				ID         int64 `json:"id"`
				TotalCents int64 `json:"total_cents"`
			}
			shop.must(201, "POST", "/orders", map[string]any{"sku": "mug", "quantity": 2, "region": "eu", "email": "ann@example.com"}, &placed)

			got := rc.waitFor(t, 1, wait)[0]
			if got.Path != "/plain" {
				t.Fatalf("the first request went to %s, want /plain", got.Path)
			}
			v, err := webhook.NewVerifier(plain.Secret)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := v.Verify(got.Header, got.Body)
			if err != nil {
				t.Fatalf("the order.created request does not verify: %v", err)
			}
			var data struct {
				OrderID    int64 `json:"order_id"`
				TotalCents int64 `json:"total_cents"`
			}
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if ev.Type != "order.created" || ev.Subject != fmt.Sprintf("order://%d", placed.ID) || data.OrderID != placed.ID || data.TotalCents != 2400 {
				t.Fatalf("delivered %s %s %+v, want order.created of order %d (2400 cents)", ev.Type, ev.Subject, data, placed.ID)
			}

			var orders struct{ Data []struct{ ID int64 } }
			shop.must(200, "GET", "/orders", nil, &orders)
			if len(orders.Data) != 1 || orders.Data[0].ID != placed.ID {
				t.Fatalf("orders %+v, want only order %d: the refused ones must leave no row", orders.Data, placed.ID)
			}
			// The fanout that sent the committed order has run: it made one
			// delivery, to the plain endpoint; none for the refused orders
			// and none for the partner in another region.
			var ds struct {
				Data []struct {
					EventID string `json:"event_id"`
				}
			}
			shop.must(200, "GET", "/webhooks/api/admin/webhooks/"+plain.ID+"/deliveries", nil, &ds)
			if len(ds.Data) != 1 || ds.Data[0].EventID != ev.ID {
				t.Fatalf("plain endpoint deliveries %+v, want exactly the one of %s", ds.Data, ev.ID)
			}
			shop.must(200, "GET", "/webhooks/api/admin/webhooks/"+partner.ID+"/deliveries", nil, &ds)
			if len(ds.Data) != 0 {
				t.Fatalf("the us partner got deliveries of an eu order: %+v", ds.Data)
			}
			if n := len(rc.receipts()); n != 1 {
				t.Fatalf("receiver got %d requests, want 1", n)
			}
			shop.console(t, rc.URL+"/plain")
			shop.stop(t)
		})
	}
}

// shopProcess is the example shop running as a child process.
type shopProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	key  string
	done chan error
}

func startShop(t *testing.T, bin, db string) *shopProcess {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--db", db, "--addr", "127.0.0.1:0", "--new-admin-key",
		"--egress-allow", "127.0.0.1/32", "--master-key-file", filepath.Join(dir, "shop.key"))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &shopProcess{t: t, cmd: cmd, done: make(chan error, 1)}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("shop's log:\n%s", stderr.String())
		}
	})
	keyLine := regexp.MustCompile(`admin key .*: (hkd_\S+)$`)
	listenLine := regexp.MustCompile(`listening on (http://\S+)$`)
	deadline := time.After(wait)
	for s.url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the shop exited before listening: %v\n%s", <-s.done, stderr.String())
			}
			if m := keyLine.FindStringSubmatch(l); m != nil {
				s.key = m[1]
			}
			if m := listenLine.FindStringSubmatch(l); m != nil {
				s.url = m[1]
			}
		case <-deadline:
			t.Fatalf("the shop did not listen within %s\n%s", wait, stderr.String())
		}
	}
	if s.key == "" {
		t.Fatal("the shop printed no admin key")
	}
	return s
}

// must sends a JSON request (with the admin key) and decodes the answer
// into out, failing unless the status is want.
func (s *shopProcess) must(want int, method, path string, body, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// console checks the console the shop mounts under /webhooks/: /webhooks/
// leads to its sign-in page at /webhooks/admin/signin, signing in with the
// shop's admin key gives a session cookie scoped to /webhooks/admin, and
// the endpoint list it opens shows want.
func (s *shopProcess) console(t *testing.T, want string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Timeout: wait}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := browser.Get(s.url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/webhooks/")
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/webhooks/admin/signin" || !strings.Contains(page, `action="/webhooks/admin/signin"`) {
		t.Fatalf("GET /webhooks/ ended at %s with %d; want the sign-in page under /webhooks/admin/:\n%s", resp.Request.URL.Path, resp.StatusCode, page)
	}
	form := url.Values{"key": {s.key}, "next": {"/webhooks/admin/webhooks"}}
	req, _ := http.NewRequest("POST", s.url+"/webhooks/admin/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url) // as a browser sends it
	noFollow := &http.Client{Timeout: wait, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signed, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	signed.Body.Close()
	cookies := signed.Cookies()
	if signed.StatusCode != http.StatusSeeOther || signed.Header.Get("Location") != "/webhooks/admin/webhooks" || len(cookies) != 1 || cookies[0].Path != "/webhooks/admin" {
		t.Fatalf("sign-in answered %d to %q with cookies %v; want 303 to /webhooks/admin/webhooks and a session cookie for /webhooks/admin", signed.StatusCode, signed.Header.Get("Location"), cookies)
	}
	u, _ := url.Parse(s.url + "/webhooks/admin/")
	jar.SetCookies(u, cookies)
	resp, page = get("/webhooks/admin/webhooks")
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/webhooks/admin/webhooks" || !strings.Contains(page, want) {
		t.Fatalf("the signed-in endpoint list (%s, %d) does not show %s:\n%s", resp.Request.URL.Path, resp.StatusCode, want, page)
	}
}

// stop ends the shop with SIGTERM, as a deploy would, and wants a clean exit.
func (s *shopProcess) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("the shop exited with %v on SIGTERM", err)
		}
	case <-ctx.Done():
		t.Fatal("the shop did not stop on SIGTERM")
	}
}
