package ops

import (
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/store"
)

// filter turns the log filters into the store's, checking each.
func (f *DeliveriesIn) filter() (store.DeliveryFilter, error) {
	var out store.DeliveryFilter
	switch st := endpoint.DeliveryState(strings.TrimSpace(f.State)); st {
	case "", endpoint.Pending, endpoint.Delivered, endpoint.Failed:
		out.State = st
	default:
		return out, invalid("state %q is not valid: use pending, delivered or failed", f.State)
	}
	out.EventType = strings.TrimSpace(f.EventType)
	var err error
	if out.Since, err = parseTime("since", f.Since); err != nil {
		return out, err
	}
	if out.Until, err = parseTime("until", f.Until); err != nil {
		return out, err
	}
	if !out.Since.IsZero() && !out.Until.IsZero() && !out.Since.Before(out.Until) {
		return out, invalid("since (%s) must be before until (%s)", f.Since, f.Until)
	}
	return out, nil
}

func parseTime(field, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, apperr.New(apperr.Invalid, "%s %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", field, v).Keyed("window.time", field)
	}
	return t, nil
}
