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
	out.Since, out.Until, err = parseWindow(f.Since, f.Until)
	if err != nil {
		return out, err
	}
	return out, nil
}

// parseWindow parses a filter's since and until (either may be empty).
func parseWindow(since, until string) (s, u time.Time, err error) {
	if s, err = parseTime("since", since); err != nil {
		return s, u, err
	}
	if u, err = parseTime("until", until); err != nil {
		return s, u, err
	}
	if !s.IsZero() && !u.IsZero() && !s.Before(u) {
		return s, u, invalid("since (%s) must be before until (%s)", since, until)
	}
	return s, u, nil
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
