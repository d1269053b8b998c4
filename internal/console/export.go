package console

import (
	"bufio"
	"net/http"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// exportForm is the endpoint page's Export… dialog as typed: a window
// (datetime-local, UTC) and a state.
type exportForm struct {
	Since, Until, State string
	Error               string
}

// export downloads an endpoint's deliveries as NDJSON (the REST stream's
// lines, ops.Service.ExportDeliveries) with the session's rights: a
// dead-letter archive from the console. A bad filter re-opens the dialog
// with the refusal in the page's language, and nothing is downloaded.
func (c *Console) export(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := exportForm{Since: q.Get("since"), Until: q.Get("until"), State: q.Get("state")}
	in := &ops.ExportIn{ID: r.PathValue("id"), State: f.State, Since: rfc3339(f.Since), Until: rfc3339(f.Until)}
	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	err := c.cfg.Ops.ExportDeliveries(r.Context(), s.principal(), in, func() error {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="`+in.ID+`-deliveries.ndjson"`)
		w.WriteHeader(http.StatusOK)
		started = true
		return nil
	}, func(line []byte) error {
		_, err := bw.Write(line) // flushes as it fills: one buffer whatever the size
		return err
	})
	switch {
	case !started && apperr.CodeOf(err) == apperr.Invalid:
		f.Error = c.localeOf(r, s).Err(err)
		c.endpointPage(w, r, s, http.StatusUnprocessableEntity, endpointForms{Recover: recoverForm{States: []string{"failed"}}, Export: f})
	case !started:
		c.fail(w, r, s, err)
	case err == nil:
		err = bw.Flush()
	}
	if started && err != nil && r.Context().Err() == nil {
		// The download has begun: it ends cut, without its last newline.
		c.cfg.Log.Warn("console: delivery export cut short", "endpoint", in.ID, "error", err)
	}
}
