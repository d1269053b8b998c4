package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/hookd/hookd/internal/apperr"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/ops"
)

// typeGroup is the event types sharing a prefix (the part before the first
// dot): the form offers "all of this group" (prefix.*) beside each.
type typeGroup struct {
	Name  string
	Types []*event.Type
}

func groupTypes(ts []*event.Type) []typeGroup {
	var out []typeGroup
	idx := map[string]int{}
	for _, t := range ts {
		g, _, _ := strings.Cut(t.Name, ".")
		i, ok := idx[g]
		if !ok {
			i = len(out)
			idx[g] = i
			out = append(out, typeGroup{Name: g})
		}
		out[i].Types = append(out[i].Types, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sorted(ss []string) []string {
	sort.Strings(ss)
	return ss
}

type typesData struct {
	Types []typeView
	Error string
}

// typeView is a type with its schema and example indented for reading.
type typeView struct {
	*event.Type
	SchemaText, ExampleText string
}

func indented(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func (c *Console) eventTypes(w http.ResponseWriter, r *http.Request, s *session) {
	ts, err := callAs[ops.EventTypeList](r.Context(), c, s, "event_types.list", &ops.Empty{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	views := make([]typeView, len(ts.Data))
	for i, t := range ts.Data {
		views[i] = typeView{Type: t}
		if len(t.Schema) > 0 {
			views[i].SchemaText = indented(t.Schema)
		}
		if len(t.Example) > 0 {
			views[i].ExampleText = indented(t.Example)
		}
	}
	c.render(w, r, http.StatusOK, "event_types", s, msg("nav.event_types"), typesData{Types: views})
}

// putEventType marks a type webhook or internal, keeping its description,
// whether it is scoped, and its schema and example (read afresh: a put
// replaces them all).
func (c *Console) putEventType(w http.ResponseWriter, r *http.Request, s *session) {
	in := &ops.PutEventTypeIn{Name: r.PathValue("name"), Exposure: r.PostFormValue("exposure"), Scoped: r.PostFormValue("scoped") == "true", Description: r.PostFormValue("description")}
	if cur, err := callAs[event.Type](r.Context(), c, s, "event_types.get", &ops.EventTypeRef{Name: in.Name}); err == nil {
		in.Schema, in.Example = cur.Schema, cur.Example
	} else if !apperr.IsNotFound(err) {
		c.fail(w, r, s, err)
		return
	}
	if _, err := c.call(r.Context(), s, "event_types.put", in); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.redirect(w, r, "/admin/event_types#type-"+in.Name)
}
