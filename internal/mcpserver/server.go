// Package mcpserver projects hookd's ops onto MCP tools: one tool per op,
// named like the op (webhooks.create, …), with input and output schemas
// from the op's own input and output types — the structs REST binds.
//
// It serves over any MCP transport: stdio for `hookd mcp` (Run), and
// streamable HTTP at /mcp beside the REST API (Handler), where every request
// carries the same bearer key REST takes.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/openapi"
	"github.com/hookd/hookd/internal/ops"
)

// Service is what the tools need from the ops.
type Service interface {
	Ops() []*ops.Op
	ActAs(ctx context.Context, p ops.Principal, ownerName string) (ops.Principal, error)
}

// Config configures a Server.
type Config struct {
	Ops     Service
	Log     *slog.Logger
	Version string // reported to clients (default "1")
}

// Server is hookd's MCP server.
type Server struct {
	svc Service
	mcp *mcp.Server
	log *slog.Logger
}

// OwnerArg is the tool argument naming the owner an operator acts on; it is
// on every tool of an op an owner-bound key may call (ops.Op.TakesOwner).
const OwnerArg = "owner"

// New builds the server with one tool per op.
func New(cfg Config) (*Server, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := cfg.Version
	if version == "" {
		version = "1"
	}
	s := &Server{svc: cfg.Ops, log: log}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "hookd", Version: version}, &mcp.ServerOptions{
		Logger: quiet(log),
		Instructions: "hookd delivers webhooks. Each tool is one operation of hookd's admin API (see /openapi.json). " +
			"Errors come back as a tool error whose text is {\"error\":{\"code\",\"message\"}}. " +
			"An endpoint's secret is shown only by webhooks.create and webhooks.rotate_secret (and webhooks.update when it adds hmac to the signature); an ed25519 endpoint's public_key is in its record.",
	})
	for _, op := range cfg.Ops.Ops() {
		t, err := Tool(op)
		if err != nil {
			return nil, err
		}
		s.mcp.AddTool(t, s.handler(op))
	}
	return s, nil
}

// MCP returns the underlying SDK server (to mount it on another transport).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Tool returns op's MCP tool declaration.
func Tool(op *ops.Op) (*mcp.Tool, error) {
	in, err := openapi.Schema(op.In)
	if err != nil {
		return nil, fmt.Errorf("mcp tool %s input: %w", op.Name, err)
	}
	if op.TakesOwner() {
		desc := "operator keys only: the owner to act on"
		if op.OwnerScoped {
			desc += " (required for operator keys)"
		}
		if in.Properties == nil {
			in.Properties = map[string]*jsonschema.Schema{}
		}
		in.Properties[OwnerArg] = &jsonschema.Schema{Type: "string", Description: desc}
		in.PropertyOrder = append(in.PropertyOrder, OwnerArg)
	}
	out, err := openapi.Schema(op.Out)
	if err != nil {
		return nil, fmt.Errorf("mcp tool %s output: %w", op.Name, err)
	}
	readOnly := op.Method == http.MethodGet
	destructive := op.Method == http.MethodDelete || strings.HasSuffix(op.Name, ".revoke") || strings.HasSuffix(op.Name, ".rotate_secret") || strings.HasSuffix(op.Name, ".expire_old_secrets")
	return &mcp.Tool{
		Name:         op.Name,
		Description:  op.Summary,
		InputSchema:  in,
		OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    readOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  readOnly || op.Method == http.MethodPut || op.Method == http.MethodDelete,
		},
	}, nil
}

// handler runs op for one tools/call: who calls, their input, the op.
func (s *Server) handler(op *ops.Op) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, err := s.call(ctx, op, req)
		if err != nil {
			return s.errorResult(op, err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return s.errorResult(op, fmt.Errorf("encode %s output: %w", op.Name, err)), nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
			StructuredContent: json.RawMessage(b),
		}, nil
	}
}

func (s *Server) call(ctx context.Context, op *ops.Op, req *mcp.CallToolRequest) (any, error) {
	p, err := principal(ctx, req)
	if err != nil {
		return nil, err
	}
	// Never the arguments or the answer: they may hold secrets.
	s.log.DebugContext(ctx, "mcp tool call", "tool", op.Name, "key", p.KeyID, "role", p.Role)
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	args, ownerName, err := splitOwner(op, raw)
	if err != nil {
		return nil, err
	}
	if p, err = s.svc.ActAs(ctx, p, ownerName); err != nil {
		return nil, err
	}
	in := op.NewInput()
	if len(args) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(in); err != nil {
			return nil, decodeError(err)
		}
	}
	return op.Call(ctx, p, in)
}

// splitOwner takes the owner argument out of a tool call's arguments.
func splitOwner(op *ops.Op, raw json.RawMessage) (json.RawMessage, string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, "", nil
	}
	if !op.TakesOwner() {
		return raw, "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", decodeError(err)
	}
	v, ok := m[OwnerArg]
	if !ok {
		return raw, "", nil
	}
	delete(m, OwnerArg)
	var name string
	if err := json.Unmarshal(v, &name); err != nil {
		return nil, "", apperr.New(apperr.Invalid, "argument owner must be a string (the owner's id)")
	}
	rest, err := json.Marshal(m)
	return rest, name, err
}

// errorResult is a tool error carrying the application error's code and
// message; internal errors are logged and answered "internal error".
func (s *Server) errorResult(op *ops.Op, err error) *mcp.CallToolResult {
	body := apperr.BodyOf(err)
	if apperr.Status(body.Error.Code) >= 500 {
		s.log.Error("mcp tool failed", "tool", op.Name, "error", err)
	}
	b, _ := json.Marshal(body)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// decodeError maps a JSON decoding failure to the application error REST
// would answer for the same body.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.New(apperr.BadRequest, "malformed arguments: %v", err)
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return apperr.New(apperr.Invalid, "argument %q must be %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return apperr.New(apperr.Invalid, "%s: see the tool's input schema", strings.TrimPrefix(err.Error(), "json: "))
	}
	return apperr.New(apperr.Invalid, "arguments: %v", err)
}

// quiet passes the SDK's warnings and errors to log, not its per-session
// chatter (three info lines per stateless HTTP request).
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
