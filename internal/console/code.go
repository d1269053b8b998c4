package console

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/ops"
)

// tried is a Try button's answer: the text to show under the editor, and
// whether the code ran (false: it was refused or failed).
type tried struct {
	OK   bool   `json:"ok"`
	Text string `json:"text"`
}

// tryCode runs the endpoint form's filter or transformation on a sample
// event through webhooks.test_filter / webhooks.test_transformation (the
// form's Try buttons), sending nothing, and answers what to show.
func (c *Console) tryCode(w http.ResponseWriter, r *http.Request, s *session) {
	l := c.localeOf(r, s)
	code := r.PostFormValue("code")
	var (
		out tried
		err error
	)
	switch r.PostFormValue("what") {
	case "filter":
		var res *ops.TestFilterOut
		res, err = callAs[ops.TestFilterOut](r.Context(), c, s, "webhooks.test_filter", &ops.TestFilterIn{Filter: code})
		if err == nil {
			switch {
			case res.Error != "":
				out.Text = l.T("try.filter.error", res.Event.Type, res.Error)
			case res.Passed:
				out.OK, out.Text = true, l.T("try.filter.passes", res.Event.Type, string(res.Event.Data))
			default:
				out.OK, out.Text = true, l.T("try.filter.refuses", res.Event.Type, string(res.Event.Data))
			}
		}
	case "transformation":
		in := &ops.TestTransformationIn{Transformation: code, URL: strings.TrimSpace(r.PostFormValue("url"))}
		var res *ops.TestTransformationOut
		res, err = callAs[ops.TestTransformationOut](r.Context(), c, s, "webhooks.test_transformation", in)
		if err == nil {
			switch {
			case res.Error != "":
				out.Text = l.T("try.transformation.error", res.Error)
			case res.Cancel:
				out.OK, out.Text = true, l.T("try.transformation.cancelled")
			default:
				sent, _ := json.MarshalIndent(map[string]any{"method": res.Method, "url": res.URL, "headers": res.Headers, "payload": res.Payload}, "", "  ")
				out.OK, out.Text = true, l.T("try.transformation.result", string(sent))
			}
		}
	default:
		err = apperr.New(apperr.Invalid, "what must be filter or transformation")
	}
	if err != nil {
		if apperr.CodeOf(err) != apperr.Invalid {
			c.fail(w, r, s, err)
			return
		}
		out = tried{Text: l.Err(err)}
	}
	writeJSON(w, http.StatusOK, out)
}
