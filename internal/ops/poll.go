package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/owner"
	"github.com/hookd/hookd/internal/store"
)

// Polling endpoints (kind poll): a consumer reads their messages with the
// endpoint's poll token (GET /api/v1/poll/{id}, internal/httpapi/poll.go)
// or the owner with an admin key (webhooks.poll). docs/receiving.md.

// Poll limits: a page's default and largest size, the longest wait.
const (
	PollDefaultLimit = 100
	PollMaxLimit     = 500
	PollMaxWait      = 60 * time.Second
)

// NewPollToken makes a poll token (hkp_ and 256 random bits) and the hash
// stored of it.
func NewPollToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (Go 1.24+)
	token = "hkp_" + base64.RawURLEncoding.EncodeToString(b[:])
	return token, pollTokenHash(token)
}

func pollTokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// endpointKind checks an endpoint's kind against its url.
func endpointKind(kind, url string) (string, error) {
	switch kind {
	case "", endpoint.KindHTTP:
		return endpoint.KindHTTP, nil
	case endpoint.KindPoll:
		if url != "" {
			return "", invalid("url: a polling endpoint (kind poll) has no url; leave it out, or use kind http")
		}
		return endpoint.KindPoll, nil
	}
	return "", invalid("kind %q is not valid: use http (default) or poll", kind)
}

// Cursor is a position in one polling endpoint's messages.
type cursor struct {
	endpointID string
	seq        int64
}

func (c cursor) String() string {
	return "pc_" + base64.RawURLEncoding.EncodeToString([]byte(c.endpointID+"."+strconv.FormatInt(c.seq, 10)))
}

// parseCursor reads a cursor of endpoint endpointID; field names it in a
// refusal.
func parseCursor(field, v, endpointID string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v, "pc_"))
	id, seqText, ok := strings.Cut(string(raw), ".")
	seq, serr := strconv.ParseInt(seqText, 10, 64)
	if !strings.HasPrefix(v, "pc_") || err != nil || !ok || serr != nil || seq < 0 {
		return 0, invalid("%s %q is not a cursor of hookd's: pass the next (or a message's cursor) of an earlier answer, or leave it out to start at the endpoint's acknowledged position", field, v)
	}
	if id != endpointID {
		return 0, invalid("%s %q is a cursor of another endpoint (%s), not of %s", field, v, id, endpointID)
	}
	return seq, nil
}

// PollMessage is one message a poll answers: the envelope as the body a
// push would have POSTed (verify it over these exact bytes) and the
// profile's headers, signed at the time of the poll.
type PollMessage struct {
	Cursor  string            `json:"cursor" jsonschema:"the position just after this message: pass it as after, or ack it"`
	ID      string            `json:"id" jsonschema:"the message id (the webhook-id: dedupe on it)"`
	EventID string            `json:"event_id"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers" jsonschema:"the signature headers' values, as a push would have sent them"`
	Body    string            `json:"body" jsonschema:"the envelope, exactly as signed"`
}

// PollPage is a poll's answer.
type PollPage struct {
	Data []PollMessage `json:"data"`
	// Next is the cursor after the last message (the one given when none).
	Next string `json:"next" jsonschema:"pass it as after to read on"`
}

// PollIn is webhooks.poll's input.
type PollIn struct {
	ID    string `json:"id" path:"id" jsonschema:"the polling endpoint's id (ep_…)"`
	After string `json:"after,omitempty" query:"after" jsonschema:"read after this cursor (default: the endpoint's acknowledged position)"`
	Limit int    `json:"limit,omitempty" query:"limit" jsonschema:"at most this many messages (default 100, max 500)"`
}

// SeekIn moves a polling endpoint's acknowledged position: to a cursor, to
// just before an event's message, or to just before the first message
// written at or after a time. Exactly one of them.
type SeekIn struct {
	ID      string `json:"id" path:"id" jsonschema:"the polling endpoint's id (ep_…)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"a cursor of this endpoint: the position to acknowledge"`
	EventID string `json:"event_id,omitempty" jsonschema:"replay from this event's message (evt_…)"`
	At      string `json:"at,omitempty" jsonschema:"replay from the first message written at or after this RFC 3339 time"`
}

// Position is a polling endpoint's acknowledged position.
type Position struct {
	Cursor string `json:"cursor" jsonschema:"the acknowledged position: a poll without after reads after it"`
}

// PollTokenView is webhooks.rotate_poll_token's answer.
type PollTokenView struct {
	ID        string `json:"id"`
	PollToken string `json:"poll_token" jsonschema:"the new poll token, shown in this answer only; the old one stops working now"`
}

func (s *Service) pollOps() []*Op {
	base := "/api/admin/webhooks/{id}"
	return []*Op{
		define(Op{Name: "webhooks.rotate_poll_token", Audit: "endpoint", Summary: "Give a polling endpoint a new poll token (shown in this answer only); the old one stops working at once.", Method: http.MethodPost, Path: base + "/rotate_poll_token", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.rotatePollToken),
		define(Op{Name: "webhooks.poll", Summary: "Read a polling endpoint's messages after a cursor, in order (what GET /api/v1/poll/{id} answers its consumer, without waiting).", Method: http.MethodGet, Path: base + "/poll", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.pollAsOwner),
		define(Op{Name: "webhooks.poll_seek", Audit: "endpoint", Summary: "Move a polling endpoint's acknowledged position: to a cursor, an event (replay from it) or a time.", Method: http.MethodPost, Path: base + "/poll_seek", Status: 200, Role: owner.Admin, OwnerScoped: true}, s.seekAsOwner),
	}
}

func (s *Service) pollEndpoint(ctx context.Context, ownerID, id string) (*endpoint.Endpoint, error) {
	e, err := s.DB.Q().GetEndpoint(ctx, ownerID, id)
	if err != nil {
		return nil, err
	}
	if !e.Polled() {
		return nil, invalid("endpoint %s is not a polling endpoint (kind %s): it is pushed to, not polled", id, e.KindOrHTTP())
	}
	return e, nil
}

func (s *Service) rotatePollToken(ctx context.Context, p Principal, in *EndpointRef) (*PollTokenView, error) {
	if _, err := s.pollEndpoint(ctx, p.OwnerID, in.ID); err != nil {
		return nil, err
	}
	token, hash := NewPollToken()
	// In a transaction: the audit record commits with the change.
	if err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error { return q.SetPollToken(ctx, in.ID, hash) }); err != nil {
		return nil, err
	}
	return &PollTokenView{ID: in.ID, PollToken: token}, nil
}

func (s *Service) pollAsOwner(ctx context.Context, p Principal, in *PollIn) (*PollPage, error) {
	e, err := s.pollEndpoint(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	return s.Poll(ctx, e, in.After, in.Limit, 0)
}

func (s *Service) seekAsOwner(ctx context.Context, p Principal, in *SeekIn) (*Position, error) {
	e, err := s.pollEndpoint(ctx, p.OwnerID, in.ID)
	if err != nil {
		return nil, err
	}
	return s.Seek(ctx, e, in)
}

// PollConsumer resolves a poll token to its endpoint, which must be id: an
// unknown token is 401, another endpoint than the token's 404 (the
// consumer sees no other endpoint).
func (s *Service) PollConsumer(ctx context.Context, authorization, id string) (*endpoint.Endpoint, error) {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if token = strings.TrimSpace(token); !ok || token == "" {
		return nil, apperr.New(apperr.Unauthorized, "missing poll token: send Authorization: Bearer <poll token> (the poll_token of webhooks.create or webhooks.rotate_poll_token)")
	}
	epID, ownerID, err := s.DB.Q().PollEndpointOfToken(ctx, pollTokenHash(token))
	if apperr.IsNotFound(err) {
		return nil, apperr.New(apperr.Unauthorized, "unknown poll token (rotated, or its endpoint deleted): use the endpoint's current poll_token")
	}
	if err != nil {
		return nil, err
	}
	if epID != id {
		return nil, apperr.New(apperr.NotFound, "endpoint %q not found", id)
	}
	return s.DB.Q().GetEndpoint(ctx, ownerID, id)
}

// Poll answers up to limit of e's messages after the cursor after (""
// the acknowledged position). wait > 0 long-polls: with nothing to
// answer, it waits until a fanout writes one (any process) or wait ends.
func (s *Service) Poll(ctx context.Context, e *endpoint.Endpoint, after string, limit int, wait time.Duration) (*PollPage, error) {
	switch {
	case limit == 0:
		limit = PollDefaultLimit
	case limit < 0 || limit > PollMaxLimit:
		return nil, invalid("limit %d: between 1 and %d (default %d)", limit, PollMaxLimit, PollDefaultLimit)
	}
	if wait < 0 || wait > PollMaxWait {
		return nil, invalid("wait %s: between 0 and %s", wait, PollMaxWait)
	}
	q := s.DB.Q()
	var seq int64
	if after == "" {
		_, acked, err := q.PollState(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		seq = acked
	} else {
		var err error
		if seq, err = parseCursor("after", after, e.ID); err != nil {
			return nil, err
		}
	}
	_, prof, err := s.ownerProfile(ctx, e.OwnerID)
	if err != nil {
		return nil, err
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	hub := s.Delivery.PollHub()
	for {
		var woken <-chan struct{}
		done := func() {}
		if wait > 0 {
			// Wait before the read: a fanout committed after it still wakes this.
			if woken, done, err = hub.Wait(e.ID); err != nil {
				return nil, err
			}
		}
		msgs, err := q.ReadPollMessages(ctx, e.ID, seq, limit)
		if err != nil {
			done()
			return nil, err
		}
		if len(msgs) > 0 || wait == 0 {
			done()
			page := &PollPage{Data: []PollMessage{}, Next: cursor{e.ID, seq}.String()}
			if len(msgs) == 0 {
				return page, nil
			}
			page.Next = cursor{e.ID, msgs[len(msgs)-1].Seq}.String()
			rendered, err := s.Delivery.RenderPolled(e, prof, msgs, s.now())
			if err != nil {
				return nil, err
			}
			for _, m := range rendered {
				page.Data = append(page.Data, PollMessage{Cursor: cursor{e.ID, m.Seq}.String(), ID: m.ID, EventID: m.EventID, Type: m.Type, Headers: m.Headers, Body: m.Body})
			}
			if len(page.Data) > 0 || len(msgs) < limit {
				return page, nil
			}
			seq = msgs[len(msgs)-1].Seq // a page of pruned events only: read on
			continue
		}
		select {
		case <-woken:
			done()
		case <-deadline:
			done()
			return &PollPage{Data: []PollMessage{}, Next: cursor{e.ID, seq}.String()}, nil
		case <-ctx.Done():
			done()
			return nil, ctx.Err()
		}
	}
}

// Ack moves e's acknowledged position on to the cursor c (never back: a
// seek does that).
func (s *Service) Ack(ctx context.Context, e *endpoint.Endpoint, c string) (*Position, error) {
	if c == "" {
		return nil, invalid("cursor is required: the cursor (next, or a message's) to acknowledge")
	}
	seq, err := parseCursor("cursor", c, e.ID)
	if err != nil {
		return nil, err
	}
	return s.moveCursor(ctx, e, seq, true)
}

// Seek moves e's acknowledged position to in's cursor, event or time.
func (s *Service) Seek(ctx context.Context, e *endpoint.Endpoint, in *SeekIn) (*Position, error) {
	n := 0
	for _, v := range []string{in.Cursor, in.EventID, in.At} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, invalid("give exactly one of cursor, event_id or at (%d given)", n)
	}
	q := s.DB.Q()
	var seq int64
	var err error
	switch {
	case in.Cursor != "":
		seq, err = parseCursor("cursor", in.Cursor, e.ID)
	case in.EventID != "":
		seq, err = q.PollSeqOfEvent(ctx, e.ID, in.EventID)
	default:
		var at time.Time
		if at, err = parseTime("at", in.At); err == nil {
			seq, err = q.PollSeqBefore(ctx, e.ID, at.UnixMicro())
		}
	}
	if err != nil {
		return nil, err
	}
	return s.moveCursor(ctx, e, seq, false)
}

func (s *Service) moveCursor(ctx context.Context, e *endpoint.Endpoint, seq int64, forward bool) (*Position, error) {
	var out int64
	err := s.DB.InTx(ctx, store.TxOptions{}, func(q *store.Q) error {
		last, _, err := q.PollState(ctx, e.ID)
		if err != nil {
			return err
		}
		if seq > last {
			return invalid("cursor is past endpoint %s's last message: pass a cursor hookd answered", e.ID)
		}
		if err := q.SetPollCursor(ctx, e.ID, seq, forward); err != nil {
			return err
		}
		_, out, err = q.PollState(ctx, e.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Position{Cursor: cursor{e.ID, out}.String()}, nil
}

// PollHub is where long-polls wait (the delivery service's).
func (s *Service) PollHub() *delivery.PollHub { return s.Delivery.PollHub() }
