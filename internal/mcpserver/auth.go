package mcpserver

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/audit"
	"github.com/hookd/hookd/internal/ops"
)

// Authenticator resolves an Authorization header to a principal acting on
// ownerName (operators; "" for none) — the REST server's Authenticate, so
// both transports accept exactly the same keys.
type Authenticator func(ctx context.Context, authorization, ownerName string) (ops.Principal, error)

// Caller says who calls over a transport with no per-request credentials
// (stdio). It is asked on every tool call, so a revoked key stops at once.
type Caller func(ctx context.Context) (ops.Principal, error)

// maxBody bounds a streamable HTTP request: REST's 1 MiB body plus room for
// the JSON-RPC envelope.
const maxBody = 1<<20 + 16<<10

// Handler serves the tools over streamable HTTP. Every request must carry
// a bearer key authn accepts (the header Hookd-Owner or query parameter
// owner names an operator's default owner); otherwise it is answered by
// REST's own error writer: 401 with {"error": {"code", "message"}}.
//
// The handler is stateless: each request is authenticated and served on its
// own, so nothing of one key's session can serve another, and a revoked key
// fails on its next request.
func (s *Server) Handler(authn Authenticator) http.Handler {
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              quiet(s.log),
		MaxRequestBodyBytes: maxBody,
		// The SDK's DNS-rebinding guard refuses loopback connections with
		// another Host, i.e. hookd behind a reverse proxy on the same
		// machine. Rebinding steals ambient credentials (cookies, a local
		// port that trusts its callers); /mcp trusts only the bearer key,
		// which a rebound page does not have.
		DisableLocalhostProtection: true,
	})
	// RequireBearerToken is how the SDK hands a request's identity to tool
	// handlers (CallToolRequest.Extra.TokenInfo). Its verifier only reads
	// back the principal authenticated below.
	verified := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := r.Context().Value(principalKey{}).(ops.Principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.KeyID, Extra: map[string]any{principalExtra: p}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ownerName := r.Header.Get("Hookd-Owner")
		if ownerName == "" {
			ownerName = r.URL.Query().Get("owner")
		}
		p, err := authn(r.Context(), r.Header.Get("Authorization"), ownerName)
		if err != nil {
			apperr.Write(w, r, s.log, err)
			return
		}
		p.Actor.Kind, p.Actor.Remote = audit.KindMCP, r.RemoteAddr
		verified.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// Connect serves one session on t (stdio, in-memory) with the principal
// caller returns. Wait on the session, or use Run.
func (s *Server) Connect(ctx context.Context, t mcp.Transport, caller Caller) (*mcp.ServerSession, error) {
	return s.mcp.Connect(context.WithValue(ctx, callerKey{}, caller), t, nil)
}

// Run serves one session on t until the client leaves or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport, caller Caller) error {
	return s.mcp.Run(context.WithValue(ctx, callerKey{}, caller), t)
}

type (
	principalKey struct{}
	callerKey    struct{}
)

const principalExtra = "hookd.principal"

// principal is who makes one tool call: the HTTP request's key, else the
// session's caller.
func principal(ctx context.Context, req *mcp.CallToolRequest) (ops.Principal, error) {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if p, ok := req.Extra.TokenInfo.Extra[principalExtra].(ops.Principal); ok {
			return p, nil
		}
	}
	if c, ok := ctx.Value(callerKey{}).(Caller); ok && c != nil {
		return c(ctx)
	}
	return ops.Principal{}, apperr.New(apperr.Unauthorized, "missing API key: send Authorization: Bearer <key>")
}
