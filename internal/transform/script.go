package transform

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/hookd/hookd/internal/apperr"
)

// The transformation's bounds (Limits' defaults).
const (
	// MaxScript is the largest script an endpoint may save.
	MaxScript = 64 << 10
	// MaxOutput bounds the payload a run may produce.
	MaxOutput = 256 << 10
	// DefaultTimeLimit is one run's time (the script's top level when a
	// runtime is prepared counts as a run of its own).
	DefaultTimeLimit = 50 * time.Millisecond
	// DefaultHeapLimit is how far the heap may grow during a run. The
	// heap is the process's, so hookd's own allocations in those
	// milliseconds count too: the bound leaves them room.
	DefaultHeapLimit = 32 << 20
	// MaxString bounds the strings the natives that build one from a
	// count make (repeat, padStart, padEnd): one call could otherwise
	// allocate gigabytes before the watchdog's next look.
	MaxString = 1 << 20
	// runsPerRuntime recycles a pooled runtime: whatever a script keeps
	// in its globals between runs does not grow forever.
	runsPerRuntime = 1000
	// scriptName is the file name errors give positions in.
	scriptName = "transformation.js"
)

// Limits are a Scripts' bounds; zero fields take the defaults.
type Limits struct {
	Time time.Duration
	Heap uint64
}

// Webhook is what handler(webhook) gets, and what it returns: the request
// hookd is about to sign and send. Payload is JSON text.
type Webhook struct {
	Method  string
	URL     string
	Headers map[string]string
	Payload []byte
}

// Result is a run's answer: the request to send, or Cancel (the handler set
// webhook.cancel = true: this delivery is not sent).
type Result struct {
	Webhook
	Cancel bool
}

// RunError is a run that failed: the script threw, was stopped, or
// returned something hookd cannot send. Error gives the script's message
// and, where the script is at fault, its line and column.
type RunError struct {
	Msg string
	// Stopped is ErrTimeLimit or ErrHeapLimit when the watchdog ended it.
	Stopped error
}

func (e *RunError) Error() string { return e.Msg }

// Scripts runs transformations. Each script is compiled once per process
// (cached by its text), and runs in runtimes pooled per script: a runtime
// only ever runs one script, so nothing one owner's script leaves behind
// is seen by another's.
type Scripts struct {
	limits Limits
	dog    *watchdog
	cache  cache[*script]
}

// NewScripts returns a transformation runner with limits l.
func NewScripts(l Limits) *Scripts {
	if l.Time <= 0 {
		l.Time = DefaultTimeLimit
	}
	if l.Heap == 0 {
		l.Heap = DefaultHeapLimit
	}
	s := &Scripts{limits: l, dog: newWatchdog(l.Heap), cache: newCache[*script](256)}
	return s
}

// script is one compiled transformation and its pool of prepared runtimes.
type script struct {
	prg  *goja.Program
	pool sync.Pool // of *vmSlot
}

// vmSlot is a runtime that has run the script's top level.
type vmSlot struct {
	vm        *goja.Runtime
	handler   goja.Callable
	parse     goja.Callable // JSON.parse
	stringify goja.Callable // JSON.stringify
	runs      int
}

// Check compiles code and runs its top level once, and returns a 422 that
// says what to fix when it is not a transformation: too large, a syntax
// error (with its line and column), a top level that throws or does not
// end, no handler function.
func (s *Scripts) Check(code string) error {
	sc, err := s.compiled(code)
	if err != nil {
		return err
	}
	if _, err := s.prepare(sc); err != nil {
		return apperr.New(apperr.Invalid, "transformation: %s", err.Error())
	}
	return nil
}

func (s *Scripts) compiled(code string) (*script, error) {
	return s.cache.get(code, compileScript)
}

func compileScript(code string) (*script, error) {
	if len(code) > MaxScript {
		return nil, apperr.New(apperr.Invalid, "transformation is %d bytes; at most %d", len(code), MaxScript)
	}
	if strings.TrimSpace(code) == "" {
		return nil, apperr.New(apperr.Invalid, "transformation is empty: define function handler(webhook) { … return webhook; }")
	}
	prg, err := goja.Compile(scriptName, code, false)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "transformation does not compile: %s", err.Error())
	}
	return &script{prg: prg}, nil
}

// prepare makes a runtime that has run sc's top level, under the limits.
func (s *Scripts) prepare(sc *script) (*vmSlot, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(256)
	if _, err := vm.RunProgram(capStrings); err != nil {
		return nil, fmt.Errorf("string caps: %w", err)
	}
	stop := s.dog.guard(vm, s.limits.Time)
	_, err := vm.RunProgram(sc.prg)
	stopped := stop()
	if err != nil {
		return nil, runError(err, stopped, "its top level")
	}
	h, ok := goja.AssertFunction(vm.Get("handler"))
	if !ok {
		return nil, &RunError{Msg: "it defines no handler: define function handler(webhook) { … return webhook; }"}
	}
	json := vm.Get("JSON").ToObject(vm)
	parse, _ := goja.AssertFunction(json.Get("parse"))
	stringify, _ := goja.AssertFunction(json.Get("stringify"))
	return &vmSlot{vm: vm, handler: h, parse: parse, stringify: stringify}, nil
}

// capStrings puts MaxString on the natives that build a string from a
// count the script gives, checked before the string is built. In
// JavaScript, so a refusal is an ordinary RangeError the script may catch.
var capStrings = goja.MustCompile("caps.js", fmt.Sprintf(`(function () {
	const P = String.prototype;
	for (const name of ["repeat", "padStart", "padEnd"]) {
		const orig = P[name];
		Object.defineProperty(P, name, {writable: true, configurable: true, value: function (n, ...rest) {
			const len = name === "repeat" ? String(this).length * n : n;
			if (len > %d) throw new RangeError(name + ": a string of " + len + " characters is over the transformation's bound of %d");
			return orig.call(this, n, ...rest);
		}});
	}
})();`, MaxString, MaxString), true)

// Run runs code's handler on in. A *RunError is the script's failure (or
// the watchdog's stop); any other error is hookd's.
func (s *Scripts) Run(code string, in Webhook) (Result, error) {
	sc, err := s.compiled(code)
	if err != nil {
		return Result{}, &RunError{Msg: err.Error()}
	}
	slot, _ := sc.pool.Get().(*vmSlot)
	if slot == nil {
		if slot, err = s.prepare(sc); err != nil {
			return Result{}, asRunError(err)
		}
	}
	res, err := s.call(slot, in)
	if slot.runs++; err == nil && slot.runs < runsPerRuntime {
		sc.pool.Put(slot) // a failed run's runtime may hold anything: dropped
	}
	return res, err
}

func asRunError(err error) error {
	var re *RunError
	if errors.As(err, &re) {
		return re
	}
	return &RunError{Msg: err.Error()}
}

// call runs the handler and reads its answer, all under the watchdog
// (reading the answer runs JSON.stringify, and getters, of the script's).
func (s *Scripts) call(slot *vmSlot, in Webhook) (res Result, err error) {
	vm := slot.vm
	stop := s.dog.guard(vm, s.limits.Time)
	defer func() {
		stopped := stop()
		if err != nil {
			err = runError(err, stopped, "handler")
		}
	}()
	payload, err := slot.parse(goja.Undefined(), vm.ToValue(string(in.Payload)))
	if err != nil {
		return res, err
	}
	headers := vm.NewObject()
	for k, v := range in.Headers {
		if err := headers.Set(k, v); err != nil {
			return res, err
		}
	}
	wh := vm.NewObject()
	for k, v := range map[string]any{"method": in.Method, "url": in.URL, "headers": headers, "payload": payload, "cancel": false} {
		if err := wh.Set(k, v); err != nil {
			return res, err
		}
	}
	out, err := slot.handler(goja.Undefined(), wh)
	if err != nil {
		return res, err
	}
	return slot.read(out)
}

// read turns the handler's answer into a Result, refusing what cannot be
// sent.
func (slot *vmSlot) read(out goja.Value) (Result, error) {
	vm := slot.vm
	if goja.IsUndefined(out) || goja.IsNull(out) {
		return Result{}, &RunError{Msg: "handler returned nothing: return the webhook (changed or not), or set webhook.cancel = true and return it"}
	}
	obj, ok := out.(*goja.Object)
	if !ok {
		return Result{}, &RunError{Msg: "handler returned a " + out.ExportType().String() + ", not the webhook object"}
	}
	var res Result
	if c := obj.Get("cancel"); c != nil && c.ToBoolean() {
		res.Cancel = true
		return res, nil
	}
	res.Method = strings.ToUpper(stringField(obj, "method"))
	res.URL = stringField(obj, "url")
	p := obj.Get("payload")
	if p == nil || goja.IsUndefined(p) {
		return Result{}, &RunError{Msg: "webhook.payload is undefined: set it to what the receiver should get"}
	}
	text, err := slot.stringify(goja.Undefined(), p)
	if err != nil {
		return Result{}, err
	}
	if goja.IsUndefined(text) {
		return Result{}, &RunError{Msg: "webhook.payload cannot be written as JSON (a function?)"}
	}
	body := text.String()
	if len(body) > MaxOutput {
		return Result{}, &RunError{Msg: fmt.Sprintf("webhook.payload is %d bytes as JSON; at most %d", len(body), MaxOutput)}
	}
	res.Payload = []byte(body)
	if h := obj.Get("headers"); h != nil && !goja.IsUndefined(h) && !goja.IsNull(h) {
		ho := h.ToObject(vm)
		res.Headers = map[string]string{}
		for _, k := range ho.Keys() {
			v := ho.Get(k)
			if _, isObj := v.(*goja.Object); isObj || goja.IsUndefined(v) || goja.IsNull(v) {
				return Result{}, &RunError{Msg: fmt.Sprintf("webhook.headers[%q] must be a string", k)}
			}
			res.Headers[k] = v.String()
		}
	}
	return res, nil
}

func stringField(obj *goja.Object, name string) string {
	v := obj.Get(name)
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	return v.String()
}

// runError is a failed run as a *RunError: the watchdog's reason when it
// stopped it, else the script's exception (its message and position).
func runError(err error, stopped error, where string) error {
	var re *RunError
	if errors.As(err, &re) {
		return re
	}
	var intr *goja.InterruptedError
	if errors.As(err, &intr) {
		if why, ok := intr.Value().(error); ok {
			stopped = why
		}
	}
	if stopped != nil {
		return &RunError{Msg: fmt.Sprintf("%s: %v", where, stopped), Stopped: stopped}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &RunError{Msg: where + ": stopped: the script recursed too deep"}
	}
	return &RunError{Msg: fmt.Sprintf("%s threw: %s", where, err.Error())}
}

// CheckResult validates what a run returned against the request it was
// given: the method stays POST, the URL keeps its scheme, host and port
// (only its path and query may change: the egress guard still decides
// where it goes).
func CheckResult(in Webhook, r *Result) error {
	if r.Cancel {
		return nil
	}
	if r.Method != "" && r.Method != http.MethodPost {
		return &RunError{Msg: fmt.Sprintf("webhook.method is %s: hookd sends POST only", r.Method)}
	}
	r.Method = http.MethodPost
	if r.URL == "" {
		r.URL = in.URL
	}
	same, err := sameOrigin(in.URL, r.URL)
	if err != nil {
		return &RunError{Msg: fmt.Sprintf("webhook.url %q is not a URL: %v", r.URL, err)}
	}
	if !same {
		return &RunError{Msg: fmt.Sprintf("webhook.url %q changes the host: a transformation may change the path and query only", r.URL)}
	}
	return nil
}
