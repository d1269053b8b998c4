package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// recoverForm is the endpoint page's Recover… dialog as typed: a window
// (datetime-local, UTC) and the states to re-send.
type recoverForm struct {
	Since, Until string
	States       []string
	Error        string
}

// Has says the form has state st ticked.
func (f recoverForm) Has(st string) bool { return slices.Contains(f.States, st) }

// recover runs webhooks.recover on the dialog's window: a small one is
// done at once (the endpoint page says how many), a large one becomes a
// task whose page shows its progress.
func (c *Console) recover(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	f := recoverForm{Since: r.PostFormValue("since"), Until: r.PostFormValue("until"), States: r.PostForm["states"]}
	out, err := callAs[ops.Recovered](r.Context(), c, s, "webhooks.recover", &ops.RecoverIn{ID: id, Since: rfc3339(f.Since), Until: rfc3339(f.Until), States: f.States})
	switch {
	case apperr.CodeOf(err) == apperr.Invalid:
		f.Error = c.localeOf(r, s).Err(err)
		c.endpointPage(w, r, s, http.StatusUnprocessableEntity, endpointForms{Recover: f})
		return
	case err != nil:
		c.fail(w, r, s, err)
		return
	case out.TaskID != 0:
		c.redirect(w, r, "/admin/webhooks/"+url.PathEscape(id)+"/recoveries/"+strconv.FormatInt(out.TaskID, 10))
		return
	}
	c.done(w, r, id, "recovered", out.Recovered)
}

// taskPage is the task page's data: a River job of a delivery, or a
// background recovery of an endpoint.
type taskPage struct {
	Job        *ops.TaskView
	Recovery   *ops.Recovery
	EndpointID string
}

// refresh reloads a recovery's page every 2 s until it has finished.
func (t taskPage) refresh() int {
	if t.Recovery == nil {
		return 0
	}
	switch t.Recovery.State {
	case "completed", "discarded", "cancelled":
		return 0
	}
	return 2
}

// showRecovery is a background recovery's progress (webhooks.recovery).
func (c *Console) showRecovery(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	task, err := strconv.ParseInt(r.PathValue("task"), 10, 64)
	if err != nil {
		c.fail(w, r, s, notFound("no recovery %s", r.PathValue("task")))
		return
	}
	rec, err := callAs[ops.Recovery](r.Context(), c, s, "webhooks.recovery", &ops.RecoveryRef{ID: id, TaskID: task})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "task", s, msg("title.recovery", task), taskPage{Recovery: rec, EndpointID: id})
}
