package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/profile"
)

// DeliveryRef names one delivery of one endpoint.
type DeliveryRef struct {
	EndpointID string `json:"id" path:"id" jsonschema:"the endpoint id (ep_…)"`
	ID         string `json:"delivery_id" path:"delivery_id" jsonschema:"the delivery id"`
}

// Header is one request header as sent.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// DeliveryDetail is hookd's record of one delivery: its attempts (River's
// per-attempt errors while the job row lives), the envelope as sent and the
// request headers except the signature. Never the response body: hookd
// does not keep it.
type DeliveryDetail struct {
	*endpoint.Delivery
	JobURL string `json:"job_url"`
	// Envelope is the body every attempt sends (byte-identical on retries);
	// absent once the event has been pruned.
	Envelope json.RawMessage `json:"envelope,omitempty"`
	// Headers are those of the latest attempt, signature left out; the
	// timestamp header is recomputed on every attempt.
	Headers  []Header    `json:"headers"`
	Attempts []TaskError `json:"attempts"`
	Profile  string      `json:"profile"`
}

func (s *Service) deliveryOps() []*Op {
	return []*Op{
		define(Op{Name: "webhooks.delivery", Summary: "One delivery: attempts, the envelope as sent, the headers except the signature (never the response body).", Method: http.MethodGet, Path: "/api/admin/webhooks/{id}/deliveries/{delivery_id}", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.delivery),
	}
}

func (s *Service) delivery(ctx context.Context, p Principal, in *DeliveryRef) (*DeliveryDetail, error) {
	o, prof, err := s.ownerProfile(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	q := s.DB.Q()
	d, err := q.GetDelivery(ctx, p.OwnerID, in.EndpointID, in.ID)
	if err != nil {
		return nil, err
	}
	out := &DeliveryDetail{Delivery: d, JobURL: jobURL(ctx, d.JobID), Headers: []Header{}, Attempts: []TaskError{}, Profile: prof.Name()}
	ev, err := q.GetEvent(ctx, p.OwnerID, d.EventID)
	switch {
	case apperr.IsNotFound(err): // pruned: the record stays, the envelope is gone
	case err != nil:
		return nil, err
	default:
		if o, err = q.OwnerAsOfEvent(ctx, o, ev.ID); err != nil {
			return nil, err
		}
		body, err := prof.AppendBody(nil, ev, o)
		if err != nil {
			return nil, err
		}
		out.Envelope = body
		if out.Headers, err = unsignedHeaders(prof, d, ev.ID, ev.Type, body, cmp.Or(s.UserAgent, "hookd/1")); err != nil {
			return nil, err
		}
	}
	if d.JobID != 0 && s.Jobs != nil {
		if job, err := s.Jobs.JobGet(ctx, d.JobID); err == nil {
			for _, e := range job.Errors {
				out.Attempts = append(out.Attempts, TaskError{At: e.At, Attempt: e.Attempt, Error: e.Error})
			}
		}
	}
	return out, nil
}

// unsignedHeaders are the headers an attempt of d sends, signed with a
// throwaway secret and with every signature header removed: the real
// secret is never unsealed for display.
func unsignedHeaders(prof profile.Profile, d *endpoint.Delivery, eventID, eventType string, body []byte, userAgent string) ([]Header, error) {
	secret, err := prof.NewSecret()
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {userAgent}}
	if err := prof.Sign(h, secret, profile.Message{DeliveryID: d.ID, EventID: eventID, EventType: eventType, Body: body}, d.UpdatedAt); err != nil {
		return nil, err
	}
	out := []Header{}
	for name, vs := range h {
		if strings.Contains(strings.ToLower(name), "signature") {
			continue
		}
		out = append(out, Header{Name: name, Value: strings.Join(vs, ", ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
