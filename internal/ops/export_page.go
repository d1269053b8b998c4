package ops

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookd/hookd/internal/owner"
)

// The export a page at a time (webhooks.export_page): what an MCP client,
// which gets one JSON result a call, reads of the NDJSON stream. A page is
// bounded by its count and by its bytes, so one call answers a bounded
// result whatever the endpoint's log or its events' size.
const (
	ExportPageDefaultLimit = 50
	ExportPageMaxLimit     = 200
	// ExportPageMaxBytes ends a page early once its lines pass it (one
	// line always: an event's data is at most 256 KiB).
	ExportPageMaxBytes = 1 << 20
)

// ExportPageIn is webhooks.export_page's input: the stream's filter, a
// cursor and a limit.
type ExportPageIn struct {
	ID     string `json:"id" path:"id" jsonschema:"the endpoint id (ep_…)"`
	State  string `json:"state,omitempty" query:"state" jsonschema:"failed (default), delivered, pending or all"`
	Since  string `json:"since,omitempty" query:"since" jsonschema:"RFC 3339: only deliveries created at or after this time"`
	Until  string `json:"until,omitempty" query:"until" jsonschema:"RFC 3339: only deliveries created before this time"`
	Limit  int    `json:"limit,omitempty" query:"limit" jsonschema:"at most this many deliveries (default 50, max 200; a page also ends once it passes 1 MiB)"`
	Cursor string `json:"cursor,omitempty" query:"cursor" jsonschema:"the next_cursor of the previous page (with the same filter)"`
}

// ExportPageOut is a page of an export: the lines the stream would write,
// in its order (oldest delivery id first).
type ExportPageOut struct {
	Data []ExportLine `json:"data"`
	// NextCursor reads on; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"pass it as cursor for the next page; absent on the last page"`
	// ExportURL is the NDJSON stream of the same filter, for a client that
	// can stream (GET with the same key).
	ExportURL string `json:"export_url" jsonschema:"the NDJSON stream of the whole export with this filter (GET it with the same key): for an archive too large to page"`
}

func (s *Service) exportPageOp() *Op {
	return define(Op{Name: "webhooks.export_page", Summary: "A page of the endpoint's delivery export (a dead-letter archive): each delivery with its envelope, oldest first, with a cursor for the next page and the URL of the whole export as an NDJSON stream.",
		Method: http.MethodGet, Path: "/api/admin/webhooks/{id}/deliveries/export_page", Status: 200, Role: owner.Admin, OwnerScoped: true, AnswersURL: true}, s.exportPage)
}

// exportCursor is the position after a delivery of one endpoint's export.
func exportCursor(endpointID, deliveryID string) string {
	return "xc_" + base64.RawURLEncoding.EncodeToString([]byte(endpointID+"."+deliveryID))
}

func parseExportCursor(v, endpointID string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, "xc_"))
	id, after, ok := strings.Cut(string(raw), ".")
	if !strings.HasPrefix(v, "xc_") || err != nil || !ok || !strings.HasPrefix(after, "dlv_") {
		return "", invalid("cursor %q is not an export cursor of hookd's: pass the next_cursor of the previous page, or leave it out to start at the first delivery", v)
	}
	if id != endpointID {
		return "", invalid("cursor %q is a cursor of another endpoint's export (%s), not of %s", v, id, endpointID)
	}
	return after, nil
}

func (s *Service) exportPage(ctx context.Context, p Principal, in *ExportPageIn) (*ExportPageOut, error) {
	f, err := checkExport(p, in.State, in.Since, in.Until)
	if err != nil {
		return nil, err
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = ExportPageDefaultLimit
	case limit < 0 || limit > ExportPageMaxLimit:
		return nil, invalid("limit %d: between 1 and %d (default %d)", limit, ExportPageMaxLimit, ExportPageDefaultLimit)
	}
	after := ""
	if in.Cursor != "" {
		if after, err = parseExportCursor(in.Cursor, in.ID); err != nil {
			return nil, err
		}
	}
	o, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	if _, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, in.ID); err != nil {
		return nil, err
	}
	// One more than the page: whether there is a next one.
	rows, err := s.DB.Q().ExportPage(ctx, in.ID, f.state, after, f.from, f.to, limit+1)
	if err != nil {
		return nil, err
	}
	out := &ExportPageOut{Data: []ExportLine{}, ExportURL: exportURL(ctx, p, in)}
	size := 0
	for i, a := range rows {
		if i == limit || (i > 0 && size >= ExportPageMaxBytes) {
			out.NextCursor = exportCursor(in.ID, out.Data[len(out.Data)-1].ID)
			break
		}
		line := ExportLine{Delivery: a.Delivery}
		if a.Event != nil {
			body, err := prof.AppendBody(nil, a.Event, o)
			if err != nil {
				return nil, fmt.Errorf("export %s: %w", a.Delivery.ID, err)
			}
			line.Envelope = json.RawMessage(body)
			size += len(body)
		}
		size += 512 // the delivery's own fields, about
		out.Data = append(out.Data, line)
	}
	return out, nil
}

// exportURL is the NDJSON stream of in's filter: absolute when the caller
// reached hookd over HTTP (WithOrigin), else its path.
func exportURL(ctx context.Context, p Principal, in *ExportPageIn) string {
	q := url.Values{}
	for k, v := range map[string]string{"state": in.State, "since": in.Since, "until": in.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Role == owner.Operator {
		q.Set("owner", p.OwnerID) // the stream's Hookd-Owner, for a link
	}
	base, _ := ctx.Value(basePathKey{}).(string)
	origin, _ := ctx.Value(originKey{}).(string)
	u := origin + base + "/api/admin/webhooks/" + url.PathEscape(in.ID) + "/deliveries/export"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}
