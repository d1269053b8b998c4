package ops

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/profile"
)

// refused checks err is a 422 whose message holds each of says (what is
// wrong and what to send instead), and, when key is set, the catalog key
// the pages translate.
func refused(t *testing.T, what string, err error, key string, says ...string) {
	t.Helper()
	if apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("%s: %v, want 422 invalid", what, err)
		return
	}
	msg := apperr.MessageOf(err)
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message %q does not say %q", what, msg, s)
		}
	}
	if k, _ := apperr.KeyOf(err); key != "" && k != key {
		t.Errorf("%s: key %q, want %q", what, k, key)
	}
}

// TestLimits pins the numbers callers are told in the docs and the
// OpenAPI text, written as numbers: a changed constant fails here.
func TestLimits(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxBatch", MaxBatch, 1000},
		{"EventsDefaultLimit", EventsDefaultLimit, 50},
		{"EventsMaxLimit", EventsMaxLimit, 200},
		{"PollDefaultLimit", PollDefaultLimit, 100},
		{"PollMaxLimit", PollMaxLimit, 500},
		{"PollMaxWait", int64(PollMaxWait), int64(60 * time.Second)},
		{"RecoverInline", RecoverInline, 1000},
		{"DefaultOverlap", int64(DefaultOverlap), int64(24 * time.Hour)},
		{"MaxOverlap", int64(MaxOverlap), int64(168 * time.Hour)},
		{"PortalDefaultTTL", int64(PortalDefaultTTL), int64(time.Hour)},
		{"PortalMaxTTL", int64(PortalMaxTTL), int64(168 * time.Hour)},
		{"ActivityWindow", int64(ActivityWindow), int64(24 * time.Hour)},
		{"MaxPortalLogo", MaxPortalLogo, 65536},
		{"exportPage", exportPage, 1000},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestParseTime: RFC 3339 (spaces trimmed) or nothing; anything else is
// refused naming the field and showing the form, keyed for the pages.
func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"   ", time.Time{}, false},
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{" 2026-01-02T15:04:05Z ", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{"2026-01-02T16:04:05+01:00", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05.123456Z", time.Date(2026, 1, 2, 15, 4, 5, 123456000, time.UTC), false},
		{"2026-01-02", time.Time{}, true},
		{"2026-01-02 15:04:05Z", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"1767366245", time.Time{}, true},
	} {
		got, err := parseTime("since", c.in)
		switch {
		case c.bad:
			refused(t, c.in, err, "window.time", `since "`+strings.TrimSpace(c.in)+`"`, "RFC 3339", "2026-01-02T15:04:05Z")
		case err != nil || !got.Equal(c.want):
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// TestParseWindow: either end may be left out; both given, since must be
// strictly before until; a bad end is named.
func TestParseWindow(t *testing.T) {
	const a, b = "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"
	for _, c := range []struct {
		since, until string
		says         string // "" for accepted
	}{
		{"", "", ""},
		{a, "", ""},
		{"", b, ""},
		{a, b, ""},
		{b, a, "must be before until"},
		{a, a, "must be before until"},
		{"x", b, `since "x"`},
		{a, "y", `until "y"`},
	} {
		s, u, err := parseWindow(c.since, c.until)
		if c.says != "" {
			refused(t, c.since+".."+c.until, err, "", c.says)
			continue
		}
		if err != nil {
			t.Errorf("%q..%q: %v", c.since, c.until, err)
		}
		if (c.since == "") != s.IsZero() || (c.until == "") != u.IsZero() {
			t.Errorf("%q..%q read as %v..%v", c.since, c.until, s, u)
		}
	}
}

// TestDeliveriesFilter: the log's filters: a state of the three (trimmed),
// the event type trimmed, the window checked.
func TestDeliveriesFilter(t *testing.T) {
	for _, c := range []struct {
		in    DeliveriesIn
		state endpoint.DeliveryState
		typ   string
		says  string
	}{
		{DeliveriesIn{}, "", "", ""},
		{DeliveriesIn{State: " failed "}, endpoint.Failed, "", ""},
		{DeliveriesIn{State: "pending"}, endpoint.Pending, "", ""},
		{DeliveriesIn{State: "delivered", EventType: " invoice.paid "}, endpoint.Delivered, "invoice.paid", ""},
		{DeliveriesIn{State: "retrying"}, "", "", `state "retrying" is not valid: use pending, delivered or failed`},
		{DeliveriesIn{State: "FAILED"}, "", "", "use pending, delivered or failed"},
		{DeliveriesIn{Since: "2026-02-01T00:00:00Z", Until: "2026-01-01T00:00:00Z"}, "", "", "must be before until"},
		{DeliveriesIn{Until: "soon"}, "", "", `until "soon"`},
	} {
		f, err := c.in.filter()
		if c.says != "" {
			refused(t, c.in.State+c.in.Until, err, "", c.says)
			continue
		}
		if err != nil || f.State != c.state || f.EventType != c.typ {
			t.Errorf("%+v: %+v %v, want state %q type %q", c.in, f, err, c.state, c.typ)
		}
	}
	f, err := (&DeliveriesIn{Since: "2026-01-01T00:00:00Z"}).filter()
	if err != nil || !f.Since.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !f.Until.IsZero() {
		t.Errorf("since only: %+v %v", f, err)
	}
}

// TestEventCursor: events.list's cursor reads back what it was made of;
// anything not made by it is refused telling the caller to pass
// next_cursor as answered.
func TestEventCursor(t *testing.T) {
	at := time.UnixMicro(1767366245123456)
	c := eventCursor(at, "evt_01J")
	if n, id, err := parseEventCursor(c); err != nil || n != at.UnixMicro() || id != "evt_01J" {
		t.Errorf("round trip: %d %q %v", n, id, err)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{
		"garbage!",                    // not base64
		enc("1767366245123456"),       // no id
		enc("soon/evt_01J"),           // not a time
		enc("1767366245123456/ep_01"), // not an event id
		base64.StdEncoding.EncodeToString([]byte("1/evt_x")), // padded: not the URL form
		c + "==",
	} {
		_, _, err := parseEventCursor(bad)
		refused(t, bad, err, "", "is not a cursor of events.list", "pass next_cursor as it was answered")
	}
}

// TestPollCursor: a poll cursor names its endpoint and a position; one of
// another endpoint, a negative position or a foreign string is refused
// naming the field.
func TestPollCursor(t *testing.T) {
	c := cursor{"ep_a", 42}.String()
	if !strings.HasPrefix(c, "pc_") {
		t.Fatalf("cursor %q lacks pc_", c)
	}
	if seq, err := parseCursor("after", c, "ep_a"); err != nil || seq != 42 {
		t.Errorf("round trip: %d %v", seq, err)
	}
	if seq, err := parseCursor("after", cursor{"ep_a", 0}.String(), "ep_a"); err != nil || seq != 0 {
		t.Errorf("position 0: %d %v", seq, err)
	}
	_, err := parseCursor("after", c, "ep_b")
	refused(t, "another endpoint's", err, "", `after "`+c+`" is a cursor of another endpoint (ep_a), not of ep_b`)
	enc := func(s string) string { return "pc_" + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{
		strings.TrimPrefix(c, "pc_"), // no prefix
		enc("ep_a.-1"),
		enc("ep_a.x"),
		enc("ep_a"),
		"pc_!!!",
		"",
	} {
		_, err := parseCursor("cursor", bad, "ep_a")
		refused(t, bad, err, "", `cursor "`+bad+`" is not a cursor of hookd's`)
	}
}

// TestEndpointKind: http by default; poll has no url; nothing else.
func TestEndpointKind(t *testing.T) {
	for _, c := range []struct {
		kind, url, want, says string
	}{
		{"", "https://x.example", endpoint.KindHTTP, ""},
		{"http", "https://x.example", endpoint.KindHTTP, ""},
		{"poll", "", endpoint.KindPoll, ""},
		{"poll", "https://x.example", "", "a polling endpoint (kind poll) has no url"},
		{"websocket", "", "", `kind "websocket" is not valid: use http (default) or poll`},
		{"HTTP", "", "", "use http (default) or poll"},
	} {
		got, err := endpointKind(c.kind, c.url)
		if c.says != "" {
			refused(t, c.kind, err, "", c.says)
		} else if err != nil || got != c.want {
			t.Errorf("%q %q: %q %v", c.kind, c.url, got, err)
		}
	}
}

// TestPortalTTL: Go durations or whole days, more than 0, at most 7 days.
func TestPortalTTL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		says string
	}{
		{"", time.Hour, ""},
		{"30m", 30 * time.Minute, ""},
		{"12h", 12 * time.Hour, ""},
		{"1d", 24 * time.Hour, ""},
		{"7d", 168 * time.Hour, ""},
		{"168h", 168 * time.Hour, ""},
		{"1ns", time.Nanosecond, ""},
		{"169h", 0, "longer than 7 days"},
		{"8d", 0, "longer than 7 days"},
		{"0", 0, "must be more than zero"},
		{"0d", 0, "must be more than zero"},
		{"-1h", 0, "must be more than zero"},
		{"1.5d", 0, "is not a duration"},
		{"a week", 0, "is not a duration"},
	} {
		got, err := portalTTL(c.in)
		if c.says != "" {
			refused(t, c.in, err, "", `ttl "`+c.in+`"`, c.says)
		} else if err != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// TestPortalFeatures: a subset of the eight, duplicates folded, in the
// order asked; kwork owners have no grants; none asked is all the
// profile has.
func TestPortalFeatures(t *testing.T) {
	if n := len(PortalFeatures); n != 8 {
		t.Errorf("%d features, want 8", n)
	}
	for _, c := range []struct {
		profile string
		asked   []string
		want    string
		says    string
	}{
		{"standard", nil, strings.Join(PortalFeatures, ","), ""},
		{"kwork", nil, "endpoints,event_types,deliveries,send_test,redeliver,recover,rotate_secret", ""},
		{"standard", []string{"deliveries", "endpoints", "deliveries"}, "deliveries,endpoints", ""},
		{"standard", []string{"grants"}, "grants", ""},
		{"kwork", []string{"grants"}, "", `"grants" is not offered to a kwork owner`},
		{"standard", []string{"endpoints", "billing"}, "", `"billing" is not a portal feature; choose from endpoints, event_types`},
		{"standard", []string{"Endpoints"}, "", "is not a portal feature"},
		{"standard", []string{}, "", "the list is empty: name at least one of endpoints"},
		{"standard", []string{"send_test"}, "", `"send_test" lives on the endpoint pages: add "endpoints"`},
		{"kwork", []string{"deliveries", "event_types"}, "", `"deliveries" lives on the endpoint pages: add "endpoints"`},
		{"standard", []string{"event_types", "grants"}, "event_types,grants", ""},
	} {
		got, err := portalFeatures(c.asked, c.profile)
		if c.says != "" {
			refused(t, c.profile+strings.Join(c.asked, ","), err, "", "features: ", c.says)
		} else if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("%s %v: %v %v, want %s", c.profile, c.asked, got, err, c.want)
		}
	}
	// ProfileFeatures gives a copy: changing it changes nothing shared.
	ProfileFeatures("standard")[0] = "x"
	if PortalFeatures[0] != FeatureEndpoints {
		t.Error("ProfileFeatures handed out PortalFeatures itself")
	}
}

// TestPortalLocale: en and zh-Hans in any of their usual spellings.
func TestPortalLocale(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "en": "en", "en-US": "en", "en-GB": "en", "zh": "zh-Hans", "zh-CN": "zh-Hans", "zh-Hans": "zh-Hans", "zh-TW": "zh-Hans",
		"fr": "!", "de-DE": "!", "english": "!", "x": "!",
	} {
		got, err := PortalLocale(in)
		if want == "!" {
			refused(t, in, err, "", `locale "`+in+`"`, "use en or zh-Hans")
		} else if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}

// TestPortalReturnURL: https, or http on loopback; absolute, no user
// info, at most 2048 characters.
func TestPortalReturnURL(t *testing.T) {
	long := "https://app.example.com/" + strings.Repeat("a", 2048-len("https://app.example.com/"))
	for _, c := range []struct {
		in, says string
	}{
		{"", ""},
		{"https://app.example.com/settings?tab=hooks", ""},
		{"http://localhost:3000/back", ""},
		{"http://127.0.0.1/back", ""},
		{"http://[::1]:8080/", ""},
		{long, ""},
		{long + "a", "keep it within 2048"},
		{"http://app.example.com/", "must be https (http only for localhost)"},
		{"javascript:alert(1)", "is not an absolute URL"},
		{"/settings", "is not an absolute URL"},
		{"https://user:pw@app.example.com/", "is not an absolute URL"},
		{"ftp://app.example.com/", "must be https"},
	} {
		got, err := portalReturnURL(c.in)
		if c.says != "" {
			refused(t, c.in, err, "", "return_url", c.says)
		} else if err != nil || got != c.in {
			t.Errorf("%q: %q %v", c.in, got, err)
		}
	}
}

// TestPortalFrameOrigin: a scheme and a host only, made canonical.
func TestPortalFrameOrigin(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://app.example.com", "https://app.example.com"},
		{"https://app.example.com/", "https://app.example.com"},
		{"http://localhost:3000", "http://localhost:3000"},
		{"https://app.example.com/path", ""},
		{"https://app.example.com?x=1", ""},
		{"https://app.example.com#top", ""},
		{"https://u@app.example.com", ""},
		{"https://*.example.com", ""},
		{"ftp://app.example.com", ""},
		{"app.example.com", ""},
		{"*", ""},
	} {
		got, err := PortalFrameOrigin(c.in)
		if c.want == "" {
			refused(t, c.in, err, "", `frame origin "`+c.in+`" is not an origin`, "https://app.example.com")
		} else if err != nil || got != c.want {
			t.Errorf("%q: %q %v, want %q", c.in, got, err, c.want)
		}
	}
	if got := SplitOrigins(" https://a.example, https://b.example,,https://c.example "); strings.Join(got, "|") != "https://a.example|https://b.example|https://c.example" {
		t.Errorf("SplitOrigins: %q", got)
	}
}

// TestValidatePageAttributes: the attributes the pages read, each refused
// with its own key; the locale is stored canonical; other attributes are
// the profile's business.
func TestValidatePageAttributes(t *testing.T) {
	title := func(n int) string { return strings.Repeat("题", n) } // runes, not bytes
	for _, c := range []struct {
		name  string
		attrs map[string]string
		key   string
	}{
		{"none", map[string]string{}, ""},
		{"others left alone", map[string]string{"app": "<script>", "environment": "??"}, ""},
		{"all good", map[string]string{AttrLocale: "en", AttrPortalFrameOrigins: "https://a.example https://b.example", AttrPortalTitle: title(80), AttrPortalAccent: "#0a7d53", AttrPortalLogoURL: "https://a.example/logo.png"}, ""},
		{"short accent", map[string]string{AttrPortalAccent: "#fff"}, ""},
		{"locale", map[string]string{AttrLocale: "fr"}, "branding.locale"},
		{"frame origin", map[string]string{AttrPortalFrameOrigins: "https://a.example https://b.example/x"}, "branding.frame_origin"},
		{"title of 81 characters", map[string]string{AttrPortalTitle: title(81)}, "branding.title"},
		{"accent by name", map[string]string{AttrPortalAccent: "green"}, "branding.accent"},
		{"accent of 4 digits", map[string]string{AttrPortalAccent: "#abcd"}, "branding.accent"},
		{"accent without #", map[string]string{AttrPortalAccent: "0a7d53"}, "branding.accent"},
		{"http logo", map[string]string{AttrPortalLogoURL: "http://a.example/logo.png"}, "branding.logo_url"},
		{"relative logo", map[string]string{AttrPortalLogoURL: "/logo.png"}, "branding.logo_url"},
		{"logo with user", map[string]string{AttrPortalLogoURL: "https://u:p@a.example/logo.png"}, "branding.logo_url"},
	} {
		err := ValidatePageAttributes(c.attrs)
		if c.key == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		refused(t, c.name, err, c.key, "attribute ")
	}
	a := map[string]string{AttrLocale: "zh-CN"}
	if err := ValidatePageAttributes(a); err != nil || a[AttrLocale] != "zh-Hans" {
		t.Errorf("locale zh-CN stored as %q (%v), want zh-Hans", a[AttrLocale], err)
	}
}

// TestOverlap: a rotation's overlap as JSON (a duration string or seconds)
// and as the profile allows it: standard 0 to 7 days, 24 h by default;
// kwork signs with one key, so 0 only.
func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		json, want string
		bad        bool
	}{
		{`"24h"`, "24h", false},
		{`"7d"`, "7d", false},
		{`3600`, "3600s", false},
		{`0`, "0s", false},
		{`1.5`, "1.5s", false},
		{`true`, "", true},
		{`[1]`, "", true},
	} {
		var o Overlap
		err := json.Unmarshal([]byte(c.json), &o)
		if c.bad != (err != nil) || (!c.bad && string(o) != c.want) {
			t.Errorf("%s: %q %v", c.json, o, err)
		}
	}
	std, kw := profile.Standard{}, profile.Kwork{}
	ov := func(s string) *Overlap { o := Overlap(s); return &o }
	for _, c := range []struct {
		prof profile.Profile
		in   *Overlap
		want time.Duration
		says string
	}{
		{std, nil, 24 * time.Hour, ""},
		{std, ov("0"), 0, ""},
		{std, ov("90m"), 90 * time.Minute, ""},
		{std, ov("7d"), 168 * time.Hour, ""},
		{std, ov(" 1.5d "), 36 * time.Hour, ""},
		{std, ov("3600s"), time.Hour, ""},
		{std, ov("168h1s"), 0, "longer than the maximum of 7 days"},
		{std, ov("8d"), 0, "longer than the maximum of 7 days"},
		{std, ov("-1h"), 0, "is negative"},
		{std, ov("-1d"), 0, "is negative"},
		{std, ov("a day"), 0, `is not a duration: write it like "24h"`},
		{std, ov("xd"), 0, "is not a duration"},
		{kw, nil, 0, ""},
		{kw, ov("0"), 0, ""},
		{kw, ov("1h"), 0, "the kwork profile signs every delivery with one key"},
		{kw, ov("8d"), 0, "longer than the maximum"},
	} {
		got, err := overlapFor(c.prof, c.in)
		name := c.prof.Name()
		if c.in != nil {
			name += " " + string(*c.in)
		}
		if c.says != "" {
			refused(t, name, err, "", c.says)
		} else if err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", name, got, err, c.want)
		}
	}
}

// TestSchemeFor: the profile's first scheme by default; one it does not
// offer is refused listing the ones it does.
func TestSchemeFor(t *testing.T) {
	std, kw := profile.Standard{}, profile.Kwork{}
	for _, c := range []struct {
		prof     profile.Profile
		in, want string
		says     string
	}{
		{std, "", endpoint.SignHMAC, ""},
		{std, endpoint.SignEd25519, endpoint.SignEd25519, ""},
		{std, endpoint.SignBoth, endpoint.SignBoth, ""},
		{std, "rsa", "", `signature "rsa" is not offered by the standard profile: use one of hmac, ed25519, both`},
		{kw, "", endpoint.SignHMAC, ""},
		{kw, endpoint.SignEd25519, "", "is not offered by the kwork profile: use one of hmac"},
	} {
		got, err := schemeFor(c.prof, c.in)
		if c.says != "" {
			refused(t, c.prof.Name()+" "+c.in, err, "", c.says)
		} else if err != nil || got != c.want {
			t.Errorf("%s %q: %q %v", c.prof.Name(), c.in, got, err)
		}
	}
}

// TestAuditChanges: what an audit record lists: the input's fields with
// the old value beside (unchanged ones left out), a delete's old values,
// or the resource's differences before and after (updated_at left out).
func TestAuditChanges(t *testing.T) {
	show := func(cs []audit.Change) string {
		b, _ := json.Marshal(cs)
		return string(b)
	}
	for _, c := range []struct {
		name string
		got  []audit.Change
		want string
	}{
		{"input fields", changes(map[string]any{"url": "a", "enabled": true}, map[string]any{"url": "b", "enabled": true, "description": "d"}, false),
			`[{"field":"description","new":"d"},{"field":"url","old":"a","new":"b"}]`},
		{"nothing changed", changes(map[string]any{"url": "a"}, map[string]any{"url": "a"}, false), `[]`},
		{"delete", changes(map[string]any{"url": "a", "id": "ep_1"}, nil, true),
			`[{"field":"id","old":"ep_1"},{"field":"url","old":"a"}]`},
		{"diff", diff(map[string]any{"a": 1, "b": []any{"x"}, "updated_at": "t1", "gone": true}, map[string]any{"a": 1, "b": []any{"y"}, "updated_at": "t2", "new": "n"}),
			`[{"field":"b","old":["x"],"new":["y"]},{"field":"gone","old":true},{"field":"new","new":"n"}]`},
		{"diff of equals", diff(map[string]any{"a": map[string]any{"k": 1}}, map[string]any{"a": map[string]any{"k": 1}}), `[]`},
	} {
		if got := show(c.got); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
