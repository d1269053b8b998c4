package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
)

// exportPage is how many deliveries an export reads at a time: its memory
// is one page, whatever the export's size.
const exportPage = 1000

// ExportIn is an export's filter: one endpoint's deliveries in a state
// (failed by default; "all" for every state) created in [since, until).
type ExportIn struct {
	ID    string
	State string
	Since string
	Until string
}

// ExportLine is one line of an export: a delivery and the envelope its
// receiver was (or would be) sent; no envelope once its event is pruned.
type ExportLine struct {
	*endpoint.Delivery
	Envelope json.RawMessage `json:"envelope,omitempty"`
}

// exportFilter is an export's checked filter.
type exportFilter struct {
	state    string // "" for every state
	from, to int64  // unix microseconds; 0 for no bound
}

// checkExport checks the caller and the filter of an export (the stream's
// and a page's alike).
func checkExport(p Principal, state, sinceText, untilText string) (exportFilter, error) {
	if !p.Role.Allows(owner.Admin) {
		return exportFilter{}, apperr.New(apperr.Forbidden, "exporting deliveries needs a %s key; this key is %s", owner.Admin, p.Role)
	}
	if p.OwnerID == "" {
		return exportFilter{}, apperr.New(apperr.Invalid, "an operator key must name the owner to act on (header Hookd-Owner or query parameter owner)")
	}
	var f exportFilter
	switch state {
	case "":
		f.state = string(endpoint.Failed)
	case "all":
	case string(endpoint.Pending), string(endpoint.Delivered), string(endpoint.Failed):
		f.state = state
	default:
		return f, invalid("state %q is not valid: use failed (default), delivered, pending or all", state)
	}
	since, err := parseTime("since", sinceText)
	if err != nil {
		return f, err
	}
	until, err := parseTime("until", untilText)
	if err != nil {
		return f, err
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return f, apperr.New(apperr.Invalid, "since (%s) must be before until (%s)", sinceText, untilText).Keyed("window.order")
	}
	if !since.IsZero() {
		f.from = since.UnixMicro()
	}
	if !until.IsZero() {
		f.to = until.UnixMicro()
	}
	return f, nil
}

// ExportDeliveries streams one endpoint's deliveries, one JSON line each
// (NDJSON), to write, a page at a time: a dead-letter archive of failed
// deliveries, or the whole log. It is REST's GET
// /api/admin/webhooks/{id}/deliveries/export (a stream; MCP reads the same
// lines a bounded page at a time with webhooks.export_page); the checks
// come before the first line, so a bad filter answers 422 and writes
// nothing.
func (s *Service) ExportDeliveries(ctx context.Context, p Principal, in *ExportIn, start func() error, write func(line []byte) error) error {
	f, err := checkExport(p, in.State, in.Since, in.Until)
	if err != nil {
		return err
	}
	o, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return err
	}
	if _, err := s.DB.Q().GetEndpoint(ctx, p.OwnerID, in.ID); err != nil {
		return err
	}
	if err := start(); err != nil {
		return err
	}
	after := ""
	var buf []byte
	for {
		page, err := s.DB.Q().ExportPage(ctx, in.ID, f.state, after, f.from, f.to, exportPage)
		if err != nil {
			return err
		}
		for _, a := range page {
			line := ExportLine{Delivery: a.Delivery}
			if a.Event != nil {
				if buf, err = prof.AppendBody(buf[:0], a.Event, o); err != nil {
					return fmt.Errorf("export %s: %w", a.Delivery.ID, err)
				}
				line.Envelope = buf
			}
			b, err := json.Marshal(line)
			if err != nil {
				return err
			}
			if err := write(append(b, '\n')); err != nil {
				return err
			}
			after = a.Delivery.ID
		}
		if len(page) < exportPage {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
