package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"sync"

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
	for _, f := range boundFields(v.Type()) {
		var raw string
		switch f.from {
		case "path parameter":
			raw = r.PathValue(f.name)
		case "query parameter":
			raw = r.URL.Query().Get(f.name)
		default:
			raw = r.Header.Get(f.name)
		}
		if raw == "" {
			continue
		}
		fv := v.Field(f.index)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(raw)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return apperr.New(apperr.Invalid, "%s %s must be a whole number, not %q", f.from, f.name, raw)
			}
			fv.SetInt(n)
		}
	}
	return nil
}

// boundField is a field of an op's input that bind fills in from the
// request's path, query or headers.
type boundField struct {
	index      int
	from, name string // "path parameter", "query parameter" or "header"; the tag's name
}

// boundFieldsOf caches boundFields by type: every request binds its op's
// input, and reading the tags again cost more than the binding.
var boundFieldsOf sync.Map // reflect.Type → []boundField

// boundFields lists t's fields tagged path, query or header, in order.
func boundFields(t reflect.Type) []boundField {
	if fs, ok := boundFieldsOf.Load(t); ok {
		return fs.([]boundField)
	}
	var fs []boundField
	for i := range t.NumField() {
		tag := t.Field(i).Tag
		switch {
		case tag.Get("path") != "":
			fs = append(fs, boundField{i, "path parameter", tag.Get("path")})
		case tag.Get("query") != "":
			fs = append(fs, boundField{i, "query parameter", tag.Get("query")})
		case tag.Get("header") != "":
			fs = append(fs, boundField{i, "header", tag.Get("header")})
		}
	}
	boundFieldsOf.Store(t, fs)
	return fs
}
