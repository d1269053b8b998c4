package app

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"

	"github.com/hookd/hookd/internal/console"
	"github.com/hookd/hookd/internal/mcpserver"
	"github.com/hookd/hookd/internal/openapi"
	"github.com/hookd/hookd/internal/ops"
	"github.com/hookd/hookd/internal/store"
)

// Handler serves every projection (API, MCP, OpenAPI, console) at the
// root of a server of its own: hookd.Hookd.Handler says what and where.
func (a *App) Handler() http.Handler {
	handler, err := a.handler("")
	if err != nil {
		// The projections are built from hookd's own declarations: a
		// failure is a bug of hookd's, caught by its tests.
		panic(fmt.Sprintf("hookd: build the HTTP handler: %v", err))
	}
	return handler
}

// Mount serves Handler's routes on mux under prefix (hookd.Hookd.Mount).
func (a *App) Mount(mux *http.ServeMux, prefix string) error {
	prefix = strings.TrimRight(prefix, "/")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("Mount: prefix %q must start with /, e.g. /webhooks", prefix)
	}
	handler, err := a.handler(prefix)
	if err != nil {
		return fmt.Errorf("Mount: %w", err)
	}
	if prefix == "" {
		mux.Handle("/", handler)
		return nil
	}
	mux.Handle(prefix+"/", http.StripPrefix(prefix, handler))
	return nil
}

// handler is every projection of the ops on one mux, for a server that
// reaches it under prefix (stripped from each request before it).
func (a *App) handler(prefix string) (http.Handler, error) {
	tools, err := mcpserver.New(mcpserver.Config{Ops: a.Ops, Log: a.cfg.Log})
	if err != nil {
		return nil, err
	}
	doc, err := openapi.Handler(a.Ops.Ops(), openapi.DefaultInfo, prefix)
	if err != nil {
		return nil, err
	}
	api := *a.API
	api.Extra = map[string]http.Handler{
		"/mcp":              tools.Handler(a.API.Authenticate),
		"GET /openapi.json": doc,
	}
	if api.Console, err = a.console(prefix); err != nil {
		return nil, err
	}
	inner := api.Handler()
	if prefix == "" {
		return inner, nil
	}
	// The ops answer with links (a delivery's job_url): under the prefix.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r.WithContext(ops.WithBasePath(r.Context(), prefix)))
	}), nil
}

// console builds the web page on hookd's ops under prefix, with River UI
// on the River client hookd reads its jobs with.
func (a *App) console(prefix string) (http.Handler, error) {
	tasks, err := console.NewRiverUI(a.uiCtx, store.RiverClient(a.Jobs), prefix, a.cfg.Log.With("component", "riverui"))
	if err != nil {
		return nil, err
	}
	cc := console.Config{Ops: a.Ops, Tasks: tasks, Prefix: prefix, FrameOrigins: a.cfg.PortalFrameOrigins,
		NoKeySignin: a.cfg.ConsoleKeySigninOff, Now: a.cfg.Now, Log: a.cfg.Log.With("component", "console")}
	if o := a.cfg.OIDC; o != nil {
		// Every process seals the flow's cookies alike: the callback may
		// reach another one than the sign-in did.
		key := sha256.Sum256(append([]byte("hookd console oidc:"), a.cfg.MasterKey...))
		cc.OIDC = console.OIDC{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL,
			Claim: o.Claim, OperatorValues: o.OperatorValues, AdminValues: o.AdminValues, CookieKey: key[:]}
	}
	return console.New(cc)
}
