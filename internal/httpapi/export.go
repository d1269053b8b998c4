package httpapi

import (
	"bufio"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// export streams GET /api/admin/webhooks/{id}/deliveries/export as NDJSON
// (ops.Service.ExportDeliveries): a bad filter answers its error before
// the first line; a page is flushed as it is written, so the memory is one
// page whatever the export's size.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	p, err := s.Authenticate(r.Context(), r.Header.Get("Authorization"), ownerNamed(r))
	if err != nil {
		apperr.Write(w, r, s.Log, err)
		return
	}
	q := r.URL.Query()
	in := &ops.ExportIn{ID: r.PathValue("id"), State: q.Get("state"), Since: q.Get("since"), Until: q.Get("until")}
	bw := bufio.NewWriterSize(w, 64<<10)
	flusher, _ := w.(http.Flusher)
	started := false
	err = s.Ops.ExportDeliveries(r.Context(), p, in, func() error {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="`+in.ID+`-deliveries.ndjson"`)
		w.WriteHeader(http.StatusOK)
		started = true
		return nil
	}, func(line []byte) error {
		if _, err := bw.Write(line); err != nil {
			return err
		}
		if bw.Buffered() > 48<<10 {
			if err := bw.Flush(); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		return nil
	})
	if !started {
		apperr.Write(w, r, s.Log, err)
		return
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil && r.Context().Err() == nil {
		// The answer has begun: the client sees a cut stream, without the
		// last line's newline.
		s.Log.Warn("delivery export cut short", "endpoint", in.ID, "error", err)
	}
}
