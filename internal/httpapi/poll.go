package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// The consumer's routes of a polling endpoint, authenticated by its poll
// token (not an API key): GET /api/v1/poll/{id} (poll, long-poll with
// wait), …/stream (SSE: sse.go), POST …/ack and …/seek. The owner's
// counterparts are ops (webhooks.poll, webhooks.poll_seek).

// poll answers GET /api/v1/poll/{id}?after=&limit=&wait=.
func (s *Server) poll(w http.ResponseWriter, r *http.Request) {
	e, err := s.Ops.PollConsumer(r.Context(), r.Header.Get("Authorization"), r.PathValue("id"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	q := r.URL.Query()
	limit, err := queryInt("limit", q.Get("limit"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	wait, err := parseWait(q.Get("wait"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	s.Metrics.Poll("poll")
	page, err := s.Ops.Poll(r.Context(), e, q.Get("after"), limit, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the consumer went away while it waited
		}
		apperr.Write(w, r, s.Log, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, page)
}

// pollAck answers POST /api/v1/poll/{id}/ack {"cursor": …}.
func (s *Server) pollAck(w http.ResponseWriter, r *http.Request) {
	e, err := s.Ops.PollConsumer(r.Context(), r.Header.Get("Authorization"), r.PathValue("id"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	var in struct {
		Cursor string `json:"cursor"`
	}
	if err := bind(w, r, &in); err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	pos, err := s.Ops.Ack(r.Context(), e, in.Cursor)
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, pos)
}

// pollSeek answers POST /api/v1/poll/{id}/seek {"cursor"|"event_id"|"at": …}.
func (s *Server) pollSeek(w http.ResponseWriter, r *http.Request) {
	e, err := s.Ops.PollConsumer(r.Context(), r.Header.Get("Authorization"), r.PathValue("id"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	var in ops.SeekIn
	if err := bind(w, r, &in); err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	in.ID = e.ID
	pos, err := s.Ops.Seek(r.Context(), e, &in)
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, pos)
}

// parseWait reads wait: a duration ("30s", "1m") or a number of seconds.
func parseWait(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, apperr.New(apperr.Invalid, "wait %q is not a duration: use e.g. 30s, or a number of seconds", v)
	}
	return d, nil
}

func queryInt(name, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, apperr.New(apperr.Invalid, "%s %q is not a whole number", name, v)
	}
	return n, nil
}
