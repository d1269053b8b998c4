// Package transform runs an endpoint's own code: a filter (a CEL
// expression over the event, asked at fanout) and a transformation (a
// JavaScript handler(webhook), run in a sandbox before each attempt is
// signed). Neither has I/O, timers or modules; both are bounded in cost,
// and their compiled forms are cached by the code itself, so an edit is
// a new entry and every process agrees on what runs.
package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/hookd/hookd/internal/apperr"
)

// The filter's bounds: its text, and its cost per evaluation in CEL's
// units (about one per operation and per element a comprehension visits).
const (
	MaxFilter  = 4 << 10
	FilterCost = 10_000
)

// Event is what a filter sees: the envelope's fields, data decoded once
// however many endpoints ask (Input).
type Event struct {
	Type       string
	Subject    string
	OccurredAt time.Time
	Data       json.RawMessage
}

// Input is one event's filter input, decoded on first use and then shared
// by every endpoint's filter.
type Input struct {
	ev   Event
	vars map[string]any
	err  error
}

// NewInput wraps ev; nothing is decoded until a filter asks.
func NewInput(ev Event) *Input { return &Input{ev: ev} }

func (in *Input) activation() (map[string]any, error) {
	if in.vars != nil || in.err != nil {
		return in.vars, in.err
	}
	var data any
	if len(in.ev.Data) > 0 {
		if err := json.Unmarshal(in.ev.Data, &data); err != nil {
			in.err = fmt.Errorf("event data is not JSON: %w", err)
			return nil, in.err
		}
	}
	in.vars = map[string]any{"type": in.ev.Type, "subject": in.ev.Subject, "occurred_at": in.ev.OccurredAt, "data": data}
	return in.vars, nil
}

// filterEnv declares the filter's four variables. data is dynamic: its
// shape is the event type's, not known when the filter is saved.
var filterEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("type", cel.StringType),
		cel.Variable("subject", cel.StringType),
		cel.Variable("occurred_at", cel.TimestampType),
		cel.Variable("data", cel.DynType),
		cel.ParserExpressionSizeLimit(MaxFilter),
		cel.ParserRecursionLimit(64),
	)
})

// Filters evaluates filters, each compiled once per process (cached by its
// text).
type Filters struct {
	cache cache[cel.Program]
}

// NewFilters returns an empty filter cache.
func NewFilters() *Filters { return &Filters{cache: newCache[cel.Program](1024)} }

// CheckFilter compiles code as a filter and returns a 422 naming what to
// fix (with its line and column) when it is not one.
func CheckFilter(code string) error {
	_, err := compileFilter(code)
	return err
}

func compileFilter(code string) (cel.Program, error) {
	if len(code) > MaxFilter {
		return nil, apperr.New(apperr.Invalid, "filter is %d bytes; at most %d", len(code), MaxFilter)
	}
	env, err := filterEnv()
	if err != nil {
		return nil, fmt.Errorf("filter environment: %w", err)
	}
	ast, iss := env.Compile(code)
	if iss != nil && iss.Err() != nil {
		return nil, apperr.New(apperr.Invalid, "filter does not compile: %s", issues(iss))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, apperr.New(apperr.Invalid, "filter must be true or false for an event; this one is a %s (compare it, e.g. data.amount > 1000)", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(FilterCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "filter does not compile: %v", err)
	}
	return prg, nil
}

// issues is CEL's errors as "line L, column C: message; …" (columns from 1).
func issues(iss *cel.Issues) string {
	var b strings.Builder
	for i, e := range iss.Errors() {
		if i > 0 {
			b.WriteString("; ")
		}
		if loc := e.Location; loc != nil && loc.Line() > 0 {
			fmt.Fprintf(&b, "line %d, column %d: ", loc.Line(), loc.Column()+1)
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

// ErrNotBool is a filter's run-time answer that is neither true nor false
// (data.region when region is a string).
var ErrNotBool = errors.New("the filter's result is not true or false")

// Eval says whether the event passes code. An error (a missing field, the
// cost limit, a result not boolean) is the caller's to treat as false.
func (f *Filters) Eval(code string, in *Input) (bool, error) {
	prg, err := f.cache.get(code, compileFilter)
	if err != nil {
		return false, err
	}
	vars, err := in.activation()
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, ErrNotBool
	}
	return b, nil
}
