package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// The page probes of the soak: the pages an owner opens, each requested
// pageRounds times one after another (as one person clicks, not under
// load), through the admin API and the console, timed from request to the
// last byte of the answer.

// pageRounds is how many times each page is requested: enough that the
// p99 is not the slowest answer (at 50 the nearest rank made it the
// maximum, so one cold answer decided it), which is printed apart.
const pageRounds = 200

// PageTiming is one page's answer times. First is the first request's:
// a pool connection's first use of the page's statements, its index pages
// perhaps not yet in memory.
type PageTiming struct {
	Name  string
	First time.Duration
	Percentiles
}

// probe is what the probes need to know of the filled history: one
// endpoint of owner 0, and a delivery of it from the middle of the
// history (the deep page starts there; the delivery page shows it).
type probe struct {
	base, key        string
	endpoint, middle string
}

// probePages times each page; an answer other than 200 is an error (the
// page is broken, and its time means nothing).
func probePages(ctx context.Context, pr probe) ([]PageTiming, error) {
	api := func(path string) func(*http.Client) (*http.Request, error) {
		return func(*http.Client) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.base+path, nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+pr.key)
			}
			return req, err
		}
	}
	page := func(path string) func(*http.Client) (*http.Request, error) {
		return func(*http.Client) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, pr.base+path, nil)
		}
	}
	log := "/webhooks/" + pr.endpoint + "/deliveries"
	// want is what the answer must hold, and not what it must not: a
	// fast page that shows the wrong rows measures nothing.
	pages := []struct {
		name      string
		console   bool
		req       func(*http.Client) (*http.Request, error)
		want, not string
	}{
		{"api endpoint list", false, api("/api/admin/webhooks?limit=50"), pr.endpoint, ""},
		{"api log first page", false, api("/api/admin" + log), `"dlv_`, ""},
		{"api log failed only", false, api("/api/admin" + log + "?state=failed"), `"state":"failed"`, `"state":"delivered"`},
		{"api log deep page", false, api("/api/admin" + log + "?before=" + pr.middle), `"dlv_`, pr.middle},
		{"api delivery", false, api("/api/admin" + log + "/" + pr.middle), pr.middle, ""},
		{"console endpoint list", true, page("/admin/webhooks"), pr.endpoint, ""},
		{"console endpoint", true, page("/admin/webhooks/" + pr.endpoint), pr.endpoint, ""},
		{"console log", true, page("/admin" + log), "dlv_", ""},
		{"console log failed", true, page("/admin" + log + "?state=failed"), "dlv_", ""},
		{"console log deep", true, page("/admin" + log + "?before=" + pr.middle), "dlv_", ""},
		{"console delivery", true, page("/admin" + log + "/" + pr.middle), pr.middle, ""},
	}
	plain := &http.Client{Timeout: time.Minute}
	browser, err := signIn(ctx, pr.base, pr.key)
	if err != nil {
		return nil, err
	}
	var out []PageTiming
	for _, pg := range pages {
		c := plain
		if pg.console {
			c = browser
		}
		took := make([]time.Duration, 0, pageRounds)
		for range pageRounds {
			req, err := pg.req(c)
			if err != nil {
				return nil, err
			}
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pg.name, err)
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			took = append(took, time.Since(start))
			if err != nil || resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s: %s answered %d: %.200s", pg.name, req.URL.Path, resp.StatusCode, body)
			}
			if !strings.Contains(string(body), pg.want) || pg.not != "" && strings.Contains(string(body), pg.not) {
				return nil, fmt.Errorf("%s: %s answered without %q (or with %q): %.300s", pg.name, req.URL, pg.want, pg.not, body)
			}
		}
		out = append(out, PageTiming{Name: pg.name, First: took[0], Percentiles: percentiles(took)})
	}
	return out, nil
}

// signIn is a console session for the admin key, as a browser gets one:
// the sign-in form with its Origin, the session in a cookie jar.
func signIn(ctx context.Context, base, key string) (*http.Client, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	form := url.Values{"key": {key}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/admin/signin", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("console sign-in: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	u, _ := url.Parse(base + "/admin/") // the cookie's path
	if resp.StatusCode != http.StatusOK || len(jar.Cookies(u)) == 0 {
		return nil, fmt.Errorf("console sign-in: answered %d with no session cookie", resp.StatusCode)
	}
	return c, nil
}
