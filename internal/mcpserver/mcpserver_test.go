package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/mcpserver"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json")

// TestToolsGolden fails when a tool's name, description or schemas change
// and the checked-in listing does not (go test ./internal/mcpserver -update).
func TestToolsGolden(t *testing.T) {
	t.Parallel()
	var tools []*mcp.Tool
	for _, op := range (&ops.Service{}).Ops() {
		tool, err := mcpserver.Tool(op)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	got, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/mcpserver -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("MCP tools differ from %s: review the change, then go test ./internal/mcpserver -update", path)
	}
}

// TestClient drives hookd as an MCP client would, over both transports and
// both engines: the tool list is the declared ops, and an endpoint can be
// created, sent a test and its delivery read back.
func TestClient(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			b := setup(t, backend)
			for _, tr := range transports {
				t.Run(tr.name, func(t *testing.T) {
					cs := tr.connect(t, b, b.key("acme-"+tr.name, owner.Admin))
					testToolList(t, cs)
					testCreateSendDeliveries(t, b, cs)
					testErrors(t, cs)
				})
			}
		})
	}
}

func testToolList(t *testing.T, cs *mcp.ClientSession) {
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
		in, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(in, &s); err != nil || s.Type != "object" {
			t.Errorf("%s: input schema type %q, want object", tool.Name, s.Type)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
	}
	for _, op := range (&ops.Service{}).Ops() {
		want = append(want, op.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("tools/list = %v\nops declare  %v", got, want)
	}
}

func testCreateSendDeliveries(t *testing.T, b *bundle, cs *mcp.ClientSession) {
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
		State  string `json:"state"`
	}
	mustCall(t, cs, "webhooks.create", map[string]any{"url": b.receiver.URL + "/hook", "event_types": []string{"webhook.test"}}, &ep)
	if ep.ID == "" || ep.Secret == "" || ep.State != "enabled" {
		t.Fatalf("created %+v: want an id, a secret, state enabled", ep)
	}
	var got struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	mustCall(t, cs, "webhooks.get", map[string]any{"id": ep.ID}, &got)
	if got.ID != ep.ID || got.Secret != "" {
		t.Errorf("get %+v: want the endpoint without its secret", got)
	}
	var sent struct {
		EventID string `json:"event_id"`
		Type    string `json:"type"`
	}
	mustCall(t, cs, "webhooks.send_test", map[string]any{"id": ep.ID}, &sent)
	if sent.Type != "webhook.test" || sent.EventID == "" {
		t.Fatalf("send_test %+v", sent)
	}
	select {
	case body := <-b.received:
		if !bytes.Contains(body, []byte(sent.EventID)) {
			t.Errorf("receiver got %s, want event %s", body, sent.EventID)
		}
	case <-time.After(waitLimit):
		t.Fatal("the receiver got no test event")
	}
	// The receiver answered; the delivery record settles right after, and
	// hookd logs the attempt.
	type deliveries struct {
		Data []struct {
			EventID string `json:"event_id"`
			State   string `json:"state"`
		} `json:"data"`
	}
	var list deliveries
	if !hookdtest.WaitFor(waitLimit, b.logs.Wrote(), func() bool {
		list = deliveries{}
		mustCall(t, cs, "webhooks.deliveries", map[string]any{"id": ep.ID}, &list)
		return len(list.Data) == 1 && list.Data[0].EventID == sent.EventID && list.Data[0].State == "delivered"
	}) {
		t.Fatalf("deliveries = %+v, want the test event delivered", list.Data)
	}
}

func testErrors(t *testing.T, cs *mcp.ClientSession) {
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"webhooks.get", map[string]any{"id": "ep_nope"}, "not_found"},
		{"webhooks.create", map[string]any{"url": "", "event_types": []string{}}, "invalid"},
		{"webhooks.create", map[string]any{"url": "http://127.0.0.1/", "event_types": []string{}, "colour": "red"}, "invalid"},
		{"webhooks.get", map[string]any{"id": 42}, "invalid"},
		{"webhooks.list", map[string]any{"owner": "someone-else"}, "not_found"},
		{"owners.list", nil, "forbidden"},
		{"api_keys.create", map[string]any{"role": "operator"}, "forbidden"},
		// hookd's own failure notifications: hookd publishes them, no producer.
		{"events.publish", map[string]any{"type": "hookd.endpoint.failing", "data": map[string]any{}}, "invalid"},
		{"events.publish_batch", map[string]any{"events": []any{map[string]any{"type": "hookd.endpoint.disabled"}}}, "invalid"},
	} {
		e := call(t, cs, c.tool, c.args, nil)
		if e == nil || e.Error.Code != c.code {
			t.Errorf("%s(%v) = %+v, want tool error %s", c.tool, c.args, e, c.code)
			continue
		}
		if strings.HasPrefix(c.tool, "events.") && !strings.Contains(e.Error.Message, "hookd's own") {
			t.Errorf("%s(%v): %q does not say the type is hookd's own", c.tool, c.args, e.Error.Message)
		}
	}
}

// TestOperatorNamesOwner: an operator's tools act on the owner the owner
// argument names; without it, owner-scoped tools say how to name one.
func TestOperatorNamesOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	b.key("acme", owner.Admin) // creates owner acme
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := tr.connect(t, b, b.key("", owner.Operator))
			if e := call(t, cs, "webhooks.list", nil, nil); e == nil || e.Error.Code != "invalid" {
				t.Errorf("operator without owner: %+v, want invalid", e)
			}
			var list struct {
				Data []any `json:"data"`
			}
			mustCall(t, cs, "webhooks.list", map[string]any{"owner": "acme"}, &list)
			if e := call(t, cs, "webhooks.list", map[string]any{"owner": "nobody"}, nil); e == nil || e.Error.Code != "not_found" {
				t.Errorf("operator naming a missing owner: %+v, want not_found", e)
			}
			var owners struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			mustCall(t, cs, "owners.list", nil, &owners)
			if len(owners.Data) == 0 {
				t.Errorf("owners.list is empty")
			}
			if e := call(t, cs, "owners.get", map[string]any{"id": "acme", "owner": "acme"}, nil); e == nil || e.Error.Code != "invalid" {
				t.Errorf("owners.get takes no owner argument: %+v, want invalid", e)
			}
		})
	}
}

// TestHTTPNeedsKey: /mcp refuses requests without a valid key as REST does,
// and a revoked key's next request fails.
func TestHTTPNeedsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	if _, err := dialHTTP(b.api.URL+"/mcp", "hkd_not-a-key"); err == nil {
		t.Error("connected with an unknown key")
	}
	resp, err := b.api.Client().Post(b.api.URL+"/mcp", "application/json", bytes.NewBufferString(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	var e toolError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 401 || e.Error.Code != "unauthorized" {
		t.Errorf("no key: %d %+v, want 401 unauthorized", resp.StatusCode, e)
	}

	k, err := b.h.Ops.CreateKey(context.Background(), "acme", owner.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cs := connectHTTP(t, b, k.Secret)
	mustCall(t, cs, "webhooks.list", nil, nil)
	if err := b.h.DB.Q().RevokeAPIKey(context.Background(), "acme", k.ID, time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "webhooks.list", Arguments: map[string]any{}}); err == nil {
		t.Error("a revoked key's next call succeeded")
	}
}

// TestStdioRevokedKey: over a session transport the key is checked on
// every call, so a key revoked mid-session stops at once.
func TestStdioRevokedKey(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	k, err := b.h.Ops.CreateKey(context.Background(), "acme", owner.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, b, k.Secret)
	mustCall(t, cs, "webhooks.list", nil, nil)
	if err := b.h.DB.Q().RevokeAPIKey(context.Background(), "acme", k.ID, time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if e := call(t, cs, "webhooks.list", nil, nil); e == nil || e.Error.Code != "unauthorized" {
		t.Errorf("revoked key: %+v, want unauthorized", e)
	}
}

// TestBehindProxy: a reverse proxy on the same machine reaches /mcp over
// loopback with the public Host; the key, not the Host, decides.
func TestBehindProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Backends()[0])
	req, _ := http.NewRequest(http.MethodPost, b.api.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"proxy","version":"1"}}}`))
	req.Host = "hookd.example.com"
	req.Header.Set("Authorization", "Bearer "+b.key("acme", owner.Admin))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"serverInfo"`) {
		t.Errorf("initialize through a proxy: %d %s", resp.StatusCode, body)
	}
}
