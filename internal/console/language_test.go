package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/dbtest"
)

// TestLanguages: the console speaks the browser's language, English or
// Simplified Chinese, keeping each profile's words in both.
func TestLanguages(t *testing.T) {
	s := startSite(t, dbtest.Backends()[0])
	get := func(c *http.Client, path, lang string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
		if lang != "" {
			req.Header.Set("Accept-Language", lang)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	signedIn := func(key string) *http.Client {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/admin/signin", strings.NewReader(url.Values{"key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", s.srv.URL)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("sign in: %d", resp.StatusCode)
		}
		return c
	}

	_, body, h := get(http.DefaultClient, "/admin/signin", "zh-CN,zh;q=0.9,en;q=0.5")
	for _, want := range []string{`<html lang="zh-Hans">`, "登录 hookd", "API 密钥"} {
		if !strings.Contains(body, want) {
			t.Errorf("sign-in page in Chinese lacks %q", want)
		}
	}
	if h.Get("Content-Language") != "zh-Hans" {
		t.Errorf("Content-Language = %q, want zh-Hans", h.Get("Content-Language"))
	}
	if _, body, _ = get(http.DefaultClient, "/admin/signin", "fr, de;q=0.5"); !strings.Contains(body, "Sign in to hookd") || !strings.Contains(body, `lang="en"`) {
		t.Error("a browser asking for neither language does not get English")
	}

	acme, shop := signedIn(s.keys["acme"]), signedIn(s.keys["shop"])
	cases := []struct {
		c         *http.Client
		lang      string
		want, not []string
	}{
		{acme, "zh-CN", []string{"端点", "还没有端点", "事件类型", "退出"}, []string{"订阅", "Sign out"}},
		{shop, "zh-CN", []string{"事件订阅", "还没有订阅"}, []string{"端点", "Sign out"}},
		{shop, "en-US", []string{"Event subscriptions", "No subscriptions yet"}, []string{"New endpoint", "退出"}},
		{acme, "en-US", []string{"No endpoints yet", "Sign out"}, []string{"New subscription"}},
	}
	for _, c := range cases {
		st, body, _ := get(c.c, "/admin/webhooks", c.lang)
		if st != http.StatusOK {
			t.Fatalf("GET /admin/webhooks (%s): %d", c.lang, st)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s page lacks %q", c.lang, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(body, n) {
				t.Errorf("%s page says %q", c.lang, n)
			}
		}
	}
}
