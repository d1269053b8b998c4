package hookd

import "net/http"

// Handler serves hookd's HTTP API at the root of a server of its own: the
// admin and publish API under /api/, the MCP tools over streamable HTTP at
// /mcp, the OpenAPI document at /openapi.json, and the task page at
// /admin/tasks, and the web console at /admin/ (/ redirects there). Every
// route but the document and the console's sign-in page authenticates with
// an API key (Authorization: Bearer, see CreateAPIKey; the console signs in
// with one). To serve it inside your own
// server, under a path of your choice, use Mount.
func (h *Hookd) Handler() http.Handler { return h.a.Handler() }

// Mount serves Handler's routes on mux under prefix: with "/webhooks", the
// API at /webhooks/api/admin/…, MCP at /webhooks/mcp, the OpenAPI document
// at /webhooks/openapi.json (its servers entry says /webhooks), and the web
// console at /webhooks/admin/ (/webhooks/ redirects there), its links,
// forms, assets, session cookie and River UI all under the prefix. prefix
// "" mounts at the root.
func (h *Hookd) Mount(mux *http.ServeMux, prefix string) error { return h.a.Mount(mux, prefix) }
