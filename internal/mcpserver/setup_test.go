package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/dbtest"
	"github.com/hookd/hookd/internal/hookdtest"
	"github.com/hookd/hookd/internal/mcpserver"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/owner"
)

// waitLimit only bounds a broken test; every wait ends on a signal.
const waitLimit = 15 * time.Second

// bundle is one running hookd, served over HTTP, with a receiver.
type bundle struct {
	t        *testing.T
	h        hookdtest.Hookd
	api      *httptest.Server
	tools    *mcpserver.Server
	received chan []byte // every POST the receiver gets
	receiver *httptest.Server
	logs     *hookdtest.Logs
}

// setup starts hookd (workers on) on backend, logging at debug level into
// b.logs, and a receiver that answers 204.
func setup(t *testing.T, backend dbtest.Backend) *bundle {
	t.Helper()
	logs := hookdtest.NewLogs()
	log := logs.Logger(slog.LevelDebug)
	cfg := hookdtest.Config(backend.Config(t))
	cfg.Log = log
	h, api := hookdtest.Start(t, cfg)
	tools, err := mcpserver.New(mcpserver.Config{Ops: h.Ops, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, h: h, api: api, tools: tools, logs: logs, received: make(chan []byte, 100)}
	b.receiver = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.received <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(b.receiver.Close)
	return b
}

// key creates an API key and returns its secret.
func (b *bundle) key(ownerID string, role owner.Role) string {
	b.t.Helper()
	k, err := b.h.Ops.CreateKey(context.Background(), ownerID, role)
	if err != nil {
		b.t.Fatal(err)
	}
	return k.Secret
}

// transport is one way an MCP client reaches hookd.
type transport struct {
	name    string
	connect func(t *testing.T, b *bundle, key string) *mcp.ClientSession
}

var transports = []transport{
	{"inmemory", connectInMemory},
	{"http", connectHTTP},
}

// connectInMemory connects over an in-memory pipe, as stdio does, acting
// as key (checked on every call, as `hookd mcp --key` does).
func connectInMemory(t *testing.T, b *bundle, key string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.tools.Connect(ctx, st, func(ctx context.Context) (ops.Principal, error) {
		return b.h.API.Authenticate(ctx, "Bearer "+key, "")
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// connectHTTP connects to /mcp over streamable HTTP with a bearer key.
func connectHTTP(t *testing.T, b *bundle, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := dialHTTP(b.api.URL+"/mcp", key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dialHTTP(url, key string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: bearer{key: key, base: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// toolError is a tool error's body.
type toolError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call calls a tool; on success it checks the structured content against
// the tool's output schema and decodes it into out.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *toolError {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents, want 1 text", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		var e toolError
		if err := json.Unmarshal([]byte(text), &e); err != nil || e.Error.Code == "" {
			t.Fatalf("%s: tool error %q is not {\"error\":{\"code\",\"message\"}}", name, text)
		}
		return &e
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(structured, []byte(text)) {
		t.Errorf("%s: text %s differs from structured content %s", name, text, structured)
	}
	checkOutput(t, cs, name, res.StructuredContent)
	if out != nil {
		if err := json.Unmarshal(structured, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, structured, err)
		}
	}
	return nil
}

// mustCall is call that fails the test on a tool error.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if e := call(t, cs, name, args, out); e != nil {
		t.Fatalf("%s(%v): %s: %s", name, args, e.Error.Code, e.Error.Message)
	}
}

var schemaCache sync.Map // tool name → *jsonschema.Resolved

// checkOutput validates v against the output schema tools/list advertises.
func checkOutput(t *testing.T, cs *mcp.ClientSession, name string, v any) {
	t.Helper()
	r, ok := schemaCache.Load(name)
	if !ok {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name != name {
				continue
			}
			b, _ := json.Marshal(tool.OutputSchema)
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			resolved, err := s.Resolve(nil)
			if err != nil {
				t.Fatalf("%s output schema: %v", name, err)
			}
			r, _ = schemaCache.LoadOrStore(name, resolved)
		}
	}
	if r == nil {
		t.Fatalf("no tool %s listed", name)
	}
	if err := r.(*jsonschema.Resolved).Validate(v); err != nil {
		t.Errorf("%s output does not match its output schema: %v", name, err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
