package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"github.com/hookd/hookd/internal/apperr"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// bind fills in (a pointer to an op's input struct) from the request: the
// JSON body, then fields tagged path, query and header.
func bind(w http.ResponseWriter, r *http.Request, in any) error {
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			return decodeError(err)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(in); err != nil {
				return decodeError(err)
			}
			if dec.More() {
				return apperr.New(apperr.BadRequest, "malformed JSON: more than one value in the body")
			}
		}
	}
	v := reflect.ValueOf(in).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		var raw string
		var from, name string
		switch {
		case f.Tag.Get("path") != "":
			from, name = "path parameter", f.Tag.Get("path")
			raw = r.PathValue(name)
		case f.Tag.Get("query") != "":
			from, name = "query parameter", f.Tag.Get("query")
			raw = r.URL.Query().Get(name)
		case f.Tag.Get("header") != "":
			from, name = "header", f.Tag.Get("header")
			raw = r.Header.Get(name)
		default:
			continue
		}
		if raw == "" {
			continue
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(raw)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return apperr.New(apperr.Invalid, "%s %s must be a whole number, not %q", from, name, raw)
			}
			fv.SetInt(n)
		}
	}
	return nil
}
