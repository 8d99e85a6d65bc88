package httpbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// Bodies are parsed into a generic tree first and then read field by
// field, rather than unmarshaled into the structs: encoding/json names a
// bad field without its array index, ignores duplicate keys and turns
// absent fields into zeros, and an operator looking at a broken simulator
// needs "gpus[2].powerWatts: not a number".

// maxDepth bounds nesting. The contract nests three levels; the bound
// only stops a hostile body from recursing deeply.
const maxDepth = 16

// ErrUnknownAction marks a control request naming an action this version
// of the contract does not define. A simulator answers it with 501.
var ErrUnknownAction = errors.New("unknown action")

// FieldError is a body that parsed as JSON but breaks the contract at one
// field.
type FieldError struct {
	// Path is the field in the body, e.g. "gpus[2].powerWatts"; empty
	// for the body as a whole.
	Path string
	// Problem says what is wrong with it.
	Problem string
	// Err is an underlying sentinel such as ErrUnknownAction, if any.
	Err error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return "field " + e.Path + ": " + e.Problem
}

func (e *FieldError) Unwrap() error { return e.Err }

// DecodeTelemetry reads a telemetry body strictly: it must be one JSON
// object of this APIVersion, with every required field present and of the
// right type and range, no unknown or repeated field, and nothing after
// it. GPUs come back sorted by index.
func DecodeTelemetry(data []byte) (*Telemetry, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{}
	if t.APIVersion, err = o.apiVersion(); err != nil {
		return nil, err
	}
	if t.Node, _, err = o.str("node", true); err != nil {
		return nil, err
	}
	if t.Node == "" {
		return nil, &FieldError{Path: "node", Problem: "empty"}
	}
	ts, _, err := o.str("time", true)
	if err != nil {
		return nil, err
	}
	if t.Time, err = time.Parse(time.RFC3339, ts); err != nil {
		return nil, &FieldError{Path: "time", Problem: fmt.Sprintf("not an RFC 3339 time: %q", ts)}
	}
	if w, ok, err := o.watts("nodePowerWatts", false); err != nil {
		return nil, err
	} else if ok {
		t.NodePowerWatts = &w
	}
	if cpu, ok, err := o.object("cpu", false); err != nil {
		return nil, err
	} else if ok {
		if t.CPU, err = decodeCPU(cpu); err != nil {
			return nil, err
		}
	}
	gpus, _, err := o.array("gpus", false, MaxGPUs)
	if err != nil {
		return nil, err
	}
	for i, v := range gpus {
		g, err := decodeGPU(v, fmt.Sprintf("gpus[%d]", i))
		if err != nil {
			return nil, err
		}
		for _, prev := range t.GPUs {
			if prev.Index == g.Index {
				return nil, &FieldError{Path: fmt.Sprintf("gpus[%d].index", i), Problem: fmt.Sprintf("index %d appears twice", g.Index)}
			}
			if prev.UUID == g.UUID {
				return nil, &FieldError{Path: fmt.Sprintf("gpus[%d].uuid", i), Problem: fmt.Sprintf("uuid %q appears twice", g.UUID)}
			}
		}
		t.GPUs = append(t.GPUs, g)
	}
	slices.SortFunc(t.GPUs, func(a, b GPUTelemetry) int { return a.Index - b.Index })
	if err := o.done(); err != nil {
		return nil, err
	}
	return t, nil
}

func decodeCPU(o *object) (*CPUTelemetry, error) {
	c := &CPUTelemetry{}
	pkgs, _, err := o.array("packagePowerWatts", true, MaxPackages)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, &FieldError{Path: o.child("packagePowerWatts"), Problem: "empty, expected one reading per CPU package"}
	}
	for i, v := range pkgs {
		w, err := number(v, fmt.Sprintf("%s[%d]", o.child("packagePowerWatts"), i), 0, MaxWatts, " W")
		if err != nil {
			return nil, err
		}
		c.PackagePowerWatts = append(c.PackagePowerWatts, w)
	}
	if c.CapWatts, _, err = o.watts("capWatts", true); err != nil {
		return nil, err
	}
	if c.MinWattsPerPackage, _, err = o.watts("minWattsPerPackage", true); err != nil {
		return nil, err
	}
	if c.MaxWattsPerPackage, _, err = o.watts("maxWattsPerPackage", true); err != nil {
		return nil, err
	}
	if c.MinWattsPerPackage > c.MaxWattsPerPackage {
		return nil, &FieldError{Path: o.child("minWattsPerPackage"), Problem: fmt.Sprintf("%g W is above maxWattsPerPackage %g W", c.MinWattsPerPackage, c.MaxWattsPerPackage)}
	}
	if c.ThrottlePct, _, err = o.num("throttlePct", true, 0, 100, "%"); err != nil {
		return nil, err
	}
	return c, o.done()
}

func decodeGPU(v any, path string) (GPUTelemetry, error) {
	var g GPUTelemetry
	o, err := asObject(v, path)
	if err != nil {
		return g, err
	}
	if g.Index, _, err = o.integer("index", true, 0, MaxGPUs-1); err != nil {
		return g, err
	}
	if g.UUID, _, err = o.str("uuid", true); err != nil {
		return g, err
	}
	if g.UUID == "" {
		return g, &FieldError{Path: o.child("uuid"), Problem: "empty"}
	}
	if g.Name, _, err = o.str("name", false); err != nil {
		return g, err
	}
	if g.PCIBusID, _, err = o.str("pciBusId", false); err != nil {
		return g, err
	}
	if g.PowerWatts, _, err = o.watts("powerWatts", true); err != nil {
		return g, err
	}
	if e, ok, err := o.num("energyJoules", false, 0, math.MaxFloat64, " J"); err != nil {
		return g, err
	} else if ok {
		g.EnergyJoules = &e
	}
	if g.CapWatts, _, err = o.watts("capWatts", true); err != nil {
		return g, err
	}
	if g.MinWatts, _, err = o.watts("minWatts", true); err != nil {
		return g, err
	}
	if g.MaxWatts, _, err = o.watts("maxWatts", true); err != nil {
		return g, err
	}
	if g.MinWatts > g.MaxWatts {
		return g, &FieldError{Path: o.child("minWatts"), Problem: fmt.Sprintf("%g W is above maxWatts %g W", g.MinWatts, g.MaxWatts)}
	}
	var ok bool
	if g.DefaultWatts, ok, err = o.watts("defaultWatts", false); err != nil {
		return g, err
	} else if !ok {
		g.DefaultWatts = g.MaxWatts
	}
	return g, o.done()
}

// DecodeControlRequest reads a control body as strictly as
// DecodeTelemetry reads telemetry. A well-formed request naming an action
// this version does not define fails with an error wrapping
// ErrUnknownAction; a field the action does not take is an error.
func DecodeControlRequest(data []byte) (*ControlRequest, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	r := &ControlRequest{}
	if r.APIVersion, err = o.apiVersion(); err != nil {
		return nil, err
	}
	if r.Node, _, err = o.str("node", true); err != nil {
		return nil, err
	}
	if r.Node == "" {
		return nil, &FieldError{Path: "node", Problem: "empty"}
	}
	action, _, err := o.str("action", true)
	if err != nil {
		return nil, err
	}
	r.Action = Action(action)
	var takes []string
	switch r.Action {
	case ActionSetPackageCap:
		takes = []string{"watts"}
	case ActionSetThrottle:
		takes = []string{"pct"}
	case ActionSetGPUCap:
		takes = []string{"gpu", "watts"}
	default:
		return nil, &FieldError{Path: "action", Problem: fmt.Sprintf("%q is not an action of %s", action, APIVersion), Err: ErrUnknownAction}
	}
	for _, name := range []string{"gpu", "pct", "watts"} {
		if _, present := o.fields[name]; present && !slices.Contains(takes, name) {
			return nil, &FieldError{Path: name, Problem: "not taken by action " + action}
		}
	}
	if slices.Contains(takes, "gpu") {
		i, _, err := o.integer("gpu", true, 0, MaxGPUs-1)
		if err != nil {
			return nil, err
		}
		r.GPU = &i
	}
	if slices.Contains(takes, "watts") {
		w, _, err := o.watts("watts", true)
		if err != nil {
			return nil, err
		}
		r.Watts = &w
	}
	if slices.Contains(takes, "pct") {
		p, _, err := o.num("pct", true, 0, 100, "%")
		if err != nil {
			return nil, err
		}
		r.Pct = &p
	}
	return r, o.done()
}

// DecodeControlResponse reads the answer to a control strictly. Whether
// the applied value is present is checked by the caller, which knows the
// action.
func DecodeControlResponse(data []byte) (*ControlResponse, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	r := &ControlResponse{}
	if r.APIVersion, err = o.apiVersion(); err != nil {
		return nil, err
	}
	res, _, err := o.str("result", true)
	if err != nil {
		return nil, err
	}
	r.Result = Result(res)
	switch r.Result {
	case ResultApplied, ResultBlocked, ResultError:
	default:
		return nil, &FieldError{Path: "result", Problem: fmt.Sprintf("%q is none of applied, blocked, error", res)}
	}
	if r.Message, _, err = o.str("message", false); err != nil {
		return nil, err
	}
	if w, ok, err := o.watts("appliedWatts", false); err != nil {
		return nil, err
	} else if ok {
		r.AppliedWatts = &w
	}
	if p, ok, err := o.num("appliedPct", false, 0, 100, "%"); err != nil {
		return nil, err
	} else if ok {
		r.AppliedPct = &p
	}
	return r, o.done()
}

// parseObject parses data as exactly one JSON object.
func parseObject(data []byte) (*object, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	return asObject(v, "")
}

// parseJSON parses exactly one JSON value into map[string]any, []any,
// json.Number, string, bool and nil, refusing repeated keys, nesting
// beyond maxDepth and anything after the value.
func parseJSON(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty body, expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := parser{dec: dec, size: len(data)}
	v, err := p.value("", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid JSON: more data after the value, at byte %d", dec.InputOffset())
	}
	return v, nil
}

type parser struct {
	dec  *json.Decoder
	size int
}

func (p *parser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err == nil {
		return tok, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("invalid JSON: truncated, the body ends after %d bytes inside a value", p.size)
	case errors.As(err, &se):
		return nil, fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	default:
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
}

func (p *parser) value(path string, depth int) (any, error) {
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // json.Number, string, bool or nil
	}
	if depth >= maxDepth {
		return nil, &FieldError{Path: path, Problem: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	switch d {
	case '{':
		m := make(map[string]any)
		for p.dec.More() {
			kt, err := p.token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("invalid JSON at byte %d: object key is not a string", p.dec.InputOffset())
			}
			kp := joinPath(path, k)
			if _, dup := m[k]; dup {
				return nil, &FieldError{Path: kp, Problem: "appears twice"}
			}
			if m[k], err = p.value(kp, depth+1); err != nil {
				return nil, err
			}
		}
		if _, err := p.token(); err != nil { // the closing brace
			return nil, err
		}
		return m, nil
	case '[':
		var a []any
		for p.dec.More() {
			v, err := p.value(fmt.Sprintf("%s[%d]", path, len(a)), depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := p.token(); err != nil { // the closing bracket
			return nil, err
		}
		if a == nil {
			a = []any{}
		}
		return a, nil
	default:
		// The decoder reports a stray closing delimiter as a syntax
		// error, so this is not reached; it is an error all the same.
		return nil, fmt.Errorf("invalid JSON at byte %d: unexpected %q", p.dec.InputOffset(), d)
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// object reads the fields of one JSON object and remembers which it read,
// so done can refuse the rest.
type object struct {
	path   string
	fields map[string]any
	read   map[string]bool
}

func asObject(v any, path string) (*object, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if path == "" {
			return nil, &FieldError{Problem: "the body is not a JSON object but " + kind(v)}
		}
		return nil, &FieldError{Path: path, Problem: "not an object (got " + kind(v) + ")"}
	}
	return &object{path: path, fields: m, read: make(map[string]bool)}, nil
}

func (o *object) child(name string) string { return joinPath(o.path, name) }

// get returns a field; null counts as absent.
func (o *object) get(name string, required bool) (any, bool, error) {
	o.read[name] = true
	v, ok := o.fields[name]
	if !ok || v == nil {
		if required {
			return nil, false, &FieldError{Path: o.child(name), Problem: "missing"}
		}
		return nil, false, nil
	}
	return v, true, nil
}

func (o *object) str(name string, required bool) (string, bool, error) {
	v, ok, err := o.get(name, required)
	if !ok || err != nil {
		return "", false, err
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, &FieldError{Path: o.child(name), Problem: "not a string (got " + kind(v) + ")"}
	}
	if len(s) > MaxStringBytes {
		return "", false, &FieldError{Path: o.child(name), Problem: fmt.Sprintf("longer than %d bytes", MaxStringBytes)}
	}
	return s, true, nil
}

func (o *object) num(name string, required bool, lo, hi float64, unit string) (float64, bool, error) {
	v, ok, err := o.get(name, required)
	if !ok || err != nil {
		return 0, false, err
	}
	f, err := number(v, o.child(name), lo, hi, unit)
	return f, err == nil, err
}

func (o *object) watts(name string, required bool) (float64, bool, error) {
	return o.num(name, required, 0, MaxWatts, " W")
}

func (o *object) integer(name string, required bool, lo, hi int) (int, bool, error) {
	v, ok, err := o.get(name, required)
	if !ok || err != nil {
		return 0, false, err
	}
	f, err := number(v, o.child(name), float64(lo), float64(hi), "")
	if err != nil {
		return 0, false, err
	}
	if f != math.Trunc(f) {
		return 0, false, &FieldError{Path: o.child(name), Problem: fmt.Sprintf("not a whole number: %g", f)}
	}
	return int(f), true, nil
}

func (o *object) array(name string, required bool, maxLen int) ([]any, bool, error) {
	v, ok, err := o.get(name, required)
	if !ok || err != nil {
		return nil, false, err
	}
	a, isArr := v.([]any)
	if !isArr {
		return nil, false, &FieldError{Path: o.child(name), Problem: "not an array (got " + kind(v) + ")"}
	}
	if len(a) > maxLen {
		return nil, false, &FieldError{Path: o.child(name), Problem: fmt.Sprintf("%d entries, at most %d allowed", len(a), maxLen)}
	}
	return a, true, nil
}

func (o *object) object(name string, required bool) (*object, bool, error) {
	v, ok, err := o.get(name, required)
	if !ok || err != nil {
		return nil, false, err
	}
	c, err := asObject(v, o.child(name))
	return c, err == nil, err
}

func (o *object) apiVersion() (string, error) {
	v, _, err := o.str("apiVersion", true)
	if err != nil {
		return "", err
	}
	if v != APIVersion {
		return "", &FieldError{Path: "apiVersion", Problem: fmt.Sprintf("%q is not supported, this agent speaks %s", v, APIVersion)}
	}
	return v, nil
}

// done refuses the fields nobody read: in a strict contract a misspelt
// optional field must not pass as absent.
func (o *object) done() error {
	var unknown []string
	for k := range o.fields {
		if !o.read[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return &FieldError{Path: o.child(unknown[0]), Problem: "unknown field in " + APIVersion}
}

func number(v any, path string, lo, hi float64, unit string) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, &FieldError{Path: path, Problem: "not a number (got " + kind(v) + ")"}
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, &FieldError{Path: path, Problem: fmt.Sprintf("number %s is out of range", n)}
	}
	if f < lo || f > hi {
		return 0, &FieldError{Path: path, Problem: fmt.Sprintf("%g%s is outside %g..%g%s", f, unit, lo, hi, unit)}
	}
	return f, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
