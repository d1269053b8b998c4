package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hookd/hookd/internal/apperr"
)

// DefaultHeartbeat is how often an idle poll stream writes a comment, so
// proxies keep it open and the consumer sees it alive.
const DefaultHeartbeat = 15 * time.Second

// stream answers GET /api/v1/poll/{id}/stream: the polling endpoint's
// messages as Server-Sent Events (text/event-stream), each event's id its
// cursor, so a consumer that reconnects with Last-Event-ID (or ?after=)
// resumes after the last message it got. Between messages a comment line
// every Heartbeat. Each message's data is the JSON of ops.PollMessage.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	e, err := s.Ops.PollConsumer(ctx, r.Header.Get("Authorization"), r.PathValue("id"))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	beat := s.Heartbeat
	if beat <= 0 {
		beat = DefaultHeartbeat
	}
	// The first read answers any error (a bad cursor: 422) before the stream begins.
	page, err := s.Ops.Poll(ctx, e, after, 0, 0)
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	s.Metrics.Poll("stream")
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, err = fmt.Fprint(w, "retry: 1000\n\n")
	for err == nil {
		for _, m := range page.Data {
			data, merr := json.Marshal(m)
			if merr != nil {
				err = merr
				break
			}
			if _, err = fmt.Fprintf(w, "id: %s\ndata: %s\n\n", m.Cursor, data); err != nil {
				break
			}
		}
		if err == nil && len(page.Data) == 0 {
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
		}
		if flusher != nil {
			flusher.Flush()
		}
		if err != nil {
			break
		}
		page, err = s.Ops.Poll(ctx, e, page.Next, 0, beat)
	}
	if ctx.Err() == nil {
		s.Log.Info("poll stream ended", "endpoint", e.ID, "error", err)
	}
}
