package delivery

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
	"github.com/hookd/hookd/internal/store"
)

// Polling endpoints (kind poll) get the same events as any endpoint, but
// nothing is sent: the fanout writes each one a message row
// (store.AppendPollMessages) instead of a delivery and its River job, and
// wakes the long-polls waiting for that endpoint (PollHub): in this
// process at once, in the others through PostgreSQL's NOTIFY at the
// fanout's commit (store.DB.ListenPoll).

// DefaultMaxPollWaiters bounds the long-polls (and streams) waiting at
// once in one process; past it a poll answers 503 with Retry-After.
const DefaultMaxPollWaiters = 10000

// PollHub is where a process's long-polls wait for their endpoint's next
// message. Waiters of one endpoint share one channel, closed by the next
// wake of that endpoint.
type PollHub struct {
	mu      sync.Mutex
	waits   map[string]*pollWait
	n, max  int
	started bool
	// listen starts the cross-process wake-up (PostgreSQL), on the first
	// wait: a process nobody polls holds no listening connection.
	listen func()
}

type pollWait struct {
	ch chan struct{}
	n  int
}

// NewPollHub returns a hub of at most limit waiters (0: DefaultMaxPollWaiters).
func NewPollHub(limit int) *PollHub {
	if limit <= 0 {
		limit = DefaultMaxPollWaiters
	}
	return &PollHub{waits: map[string]*pollWait{}, max: limit}
}

// ErrPollersFull is Wait's answer past the hub's bound.
var ErrPollersFull = apperr.New(apperr.Unavailable, "too many polls are waiting on this hookd process; poll again in a second")

// Wait registers a waiter for endpointID: the channel closes at the next
// wake of that endpoint. Register before reading the messages, so a
// publish committed between the read and the wait still wakes it. done
// must be called once the waiter stops waiting.
func (h *PollHub) Wait(endpointID string) (wake <-chan struct{}, done func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= h.max {
		return nil, nil, ErrPollersFull
	}
	if !h.started && h.listen != nil {
		h.started = true
		h.listen()
	}
	w := h.waits[endpointID]
	if w == nil {
		w = &pollWait{ch: make(chan struct{})}
		h.waits[endpointID] = w
	}
	w.n++
	h.n++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.n--
			w.n--
			if w.n == 0 && h.waits[endpointID] == w {
				delete(h.waits, endpointID)
			}
		})
	}, nil
}

// Wake wakes every waiter of the endpoints named.
func (h *PollHub) Wake(endpointIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range endpointIDs {
		if w := h.waits[id]; w != nil {
			close(w.ch)
			delete(h.waits, id)
		}
	}
}

// WakeAll wakes every waiter (the cross-process wake-up was lost for a
// while: each reads again).
func (h *PollHub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, w := range h.waits {
		close(w.ch)
		delete(h.waits, id)
	}
}

// Waiting is how many waiters wait now.
func (h *PollHub) Waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// PollHub is the service's hub.
func (s *Service) PollHub() *PollHub { return s.poll }

// ListenPoll makes the hub hear other processes' fanouts (PostgreSQL),
// from its first wait until ctx ends.
func (s *Service) ListenPoll(ctx context.Context) {
	s.poll.mu.Lock()
	defer s.poll.mu.Unlock()
	s.poll.listen = func() { go s.db.ListenPoll(ctx, s.poll.Wake, s.poll.WakeAll) }
}

// pollMessage is ev's message to the polling endpoint ep (one of its
// targets), numbered when written (store.AppendPollMessages).
func pollMessage(ep *endpoint.Endpoint, ev *event.Event, now time.Time) store.PollMessage {
	return store.PollMessage{EndpointID: ep.ID, ID: event.NewID("dlv_", now), EventID: ev.ID, CreatedAt: now.UnixMicro()}
}

// pollOrder sorts a fanout's poll messages into publish order (event ids
// are ULIDs, monotonic in a process): the job's event comes first in a
// fanout, the older events it took along after it.
func pollOrder(msgs []store.PollMessage) {
	slices.SortStableFunc(msgs, func(a, b store.PollMessage) int { return strings.Compare(a.EventID, b.EventID) })
}

// polledEndpoints is the endpoints msgs are for, each once.
func polledEndpoints(msgs []store.PollMessage) []string {
	var ids []string
	for _, m := range msgs {
		if !slices.Contains(ids, m.EndpointID) {
			ids = append(ids, m.EndpointID)
		}
	}
	return ids
}

// Polled is one message as a poll answers it: the envelope and the
// signature headers the profile would have sent it with, signed now.
type Polled struct {
	Seq     int64
	ID      string
	EventID string
	Type    string
	Headers map[string]string
	Body    string
}

// RenderPolled renders and signs msgs (read for ep, under profile p) as
// they would have been sent now. A message whose event was pruned is
// left out (its number still counts).
func (s *Service) RenderPolled(ep *endpoint.Endpoint, p profile.Profile, msgs []*store.Polled, now time.Time) ([]Polled, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	secret, err := s.secretOf(ep)
	if err != nil {
		return nil, err
	}
	out := make([]Polled, 0, len(msgs))
	for _, m := range msgs {
		if m.Event == nil {
			continue
		}
		body, err := p.AppendBody(nil, m.Event, m.Owner)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", m.Event.ID, err)
		}
		h := http.Header{}
		if err := p.Sign(h, secret, profile.Message{DeliveryID: m.ID, EventID: m.Event.ID, EventType: m.Event.Type, Body: body}, now); err != nil {
			return nil, fmt.Errorf("sign %s: %w", m.Event.ID, err)
		}
		hs := make(map[string]string, len(h))
		for name := range h {
			hs[strings.ToLower(name)] = h.Get(name)
		}
		out = append(out, Polled{Seq: m.Seq, ID: m.ID, EventID: m.Event.ID, Type: m.Event.Type, Headers: hs, Body: string(body)})
	}
	return out, nil
}

// secretOf unseals ep's signing secret: the one place a delivery (or a
// poll) does.
func (s *Service) secretOf(ep *endpoint.Endpoint) (string, error) {
	secret, err := s.cfg.Sealer.Open(ep.SecretSealed)
	if err != nil {
		return "", fmt.Errorf("endpoint %s: %w", ep.ID, err)
	}
	return secret, nil
}
