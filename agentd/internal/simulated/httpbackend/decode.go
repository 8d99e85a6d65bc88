package httpbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bodies are decoded by encoding/json into the contract's types, refusing
// unknown fields, and then validated. Each object is decoded on its own,
// its arrays element by element, so that an error names the field with
// its index: an operator looking at a broken simulator needs
// "gpus[2].powerWatts: not a number (got a string)", where encoding/json
// alone would say "gpus.powerWatts". A field that is present is told from
// one that is absent by the object's keys; null counts as absent.

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
// right type and range, no unknown field, and nothing after it. GPUs come
// back sorted by index.
func DecodeTelemetry(data []byte) (*Telemetry, error) {
	o, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{}
	var body struct {
		*Telemetry
		// Decoded separately: time by RFC 3339 as the contract says,
		// cpu and gpus so that their errors carry their path.
		Time string          `json:"time"`
		CPU  json.RawMessage `json:"cpu"`
		GPUs json.RawMessage `json:"gpus"`
	}
	body.Telemetry = t
	if err := o.decode(&body); err != nil {
		return nil, err
	}
	if err := first(o.require("node"), nonEmpty("node", t.Node), o.require("time"), short("time", body.Time)); err != nil {
		return nil, err
	}
	if t.Time, err = time.Parse(time.RFC3339, body.Time); err != nil {
		return nil, &FieldError{Path: "time", Problem: fmt.Sprintf("not an RFC 3339 time: %q", body.Time)}
	}
	if err := optional(watts, "nodePowerWatts", t.NodePowerWatts); err != nil {
		return nil, err
	}
	if o.has("cpu") {
		if t.CPU, err = decodeCPU(o.fields["cpu"], "cpu"); err != nil {
			return nil, err
		}
	}
	gpus, err := o.array("gpus", MaxGPUs)
	if err != nil {
		return nil, err
	}
	for i, raw := range gpus {
		path := fmt.Sprintf("gpus[%d]", i)
		g, err := decodeGPU(raw, path)
		if err != nil {
			return nil, err
		}
		for _, prev := range t.GPUs {
			if prev.Index == g.Index {
				return nil, &FieldError{Path: path + ".index", Problem: fmt.Sprintf("index %d appears twice", g.Index)}
			}
			if prev.UUID == g.UUID {
				return nil, &FieldError{Path: path + ".uuid", Problem: fmt.Sprintf("uuid %q appears twice", g.UUID)}
			}
		}
		t.GPUs = append(t.GPUs, g)
	}
	slices.SortFunc(t.GPUs, func(a, b GPUTelemetry) int { return a.Index - b.Index })
	return t, nil
}

func decodeCPU(raw json.RawMessage, path string) (*CPUTelemetry, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return nil, err
	}
	c := &CPUTelemetry{}
	var body struct {
		*CPUTelemetry
		Packages json.RawMessage `json:"packagePowerWatts"` // read by index below
	}
	body.CPUTelemetry = c
	if err := o.decode(&body); err != nil {
		return nil, err
	}
	pkgs, err := o.array("packagePowerWatts", MaxPackages)
	if err == nil && len(pkgs) == 0 {
		err = &FieldError{Path: o.child("packagePowerWatts"), Problem: "empty, expected one reading per CPU package"}
	}
	if err = first(o.require("packagePowerWatts", "capWatts", "minWattsPerPackage", "maxWattsPerPackage", "throttlePct"), err); err != nil {
		return nil, err
	}
	for i, v := range pkgs {
		var w float64
		p := fmt.Sprintf("%s[%d]", o.child("packagePowerWatts"), i)
		if err := first(decodeValue(v, p, &w), watts(p, w)); err != nil {
			return nil, err
		}
		c.PackagePowerWatts = append(c.PackagePowerWatts, w)
	}
	return c, first(watts(o.child("capWatts"), c.CapWatts),
		watts(o.child("minWattsPerPackage"), c.MinWattsPerPackage), watts(o.child("maxWattsPerPackage"), c.MaxWattsPerPackage),
		atMost(o.child("minWattsPerPackage"), c.MinWattsPerPackage, "maxWattsPerPackage", c.MaxWattsPerPackage),
		pct(o.child("throttlePct"), c.ThrottlePct))
}

func decodeGPU(raw json.RawMessage, path string) (GPUTelemetry, error) {
	var g GPUTelemetry
	o, err := asObject(raw, path)
	if err != nil {
		return g, err
	}
	var body struct {
		*GPUTelemetry
		Index        float64  `json:"index"`        // a whole number, 1.0 included
		DefaultWatts *float64 `json:"defaultWatts"` // absent means maxWatts
	}
	body.GPUTelemetry = &g
	if err := o.decode(&body); err != nil {
		return g, err
	}
	if err := o.require("index", "uuid", "powerWatts", "capWatts", "minWatts", "maxWatts"); err != nil {
		return g, err
	}
	if g.Index, err = deviceIndex(o.child("index"), body.Index); err != nil {
		return g, err
	}
	g.DefaultWatts = g.MaxWatts
	if body.DefaultWatts != nil {
		g.DefaultWatts = *body.DefaultWatts
	}
	return g, first(nonEmpty(o.child("uuid"), g.UUID), short(o.child("name"), g.Name), short(o.child("pciBusId"), g.PCIBusID),
		watts(o.child("powerWatts"), g.PowerWatts), optional(joules, o.child("energyJoules"), g.EnergyJoules),
		watts(o.child("capWatts"), g.CapWatts), watts(o.child("minWatts"), g.MinWatts), watts(o.child("maxWatts"), g.MaxWatts),
		atMost(o.child("minWatts"), g.MinWatts, "maxWatts", g.MaxWatts), optional(watts, o.child("defaultWatts"), body.DefaultWatts))
}

// actionFields lists the optional fields each action takes.
var actionFields = map[Action][]string{
	ActionSetPackageCap: {"watts"},
	ActionSetThrottle:   {"pct"},
	ActionSetGPUCap:     {"gpu", "watts"},
	ActionPowerOff:      {},
}

// DecodeControlRequest reads a control body as strictly as
// DecodeTelemetry reads telemetry. A well-formed request naming an action
// this version does not define fails with an error wrapping
// ErrUnknownAction; a field the action does not take is an error.
func DecodeControlRequest(data []byte) (*ControlRequest, error) {
	o, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	// The action first: a newer action may come with fields this
	// version does not know, and the simulator should answer "unknown
	// action" (501), not "unknown field".
	action, err := o.str("action")
	if err != nil {
		return nil, err
	}
	takes, known := actionFields[Action(action)]
	if !known {
		return nil, &FieldError{Path: "action", Problem: fmt.Sprintf("%q is not an action of %s", action, APIVersion), Err: ErrUnknownAction}
	}
	for _, name := range []string{"gpu", "pct", "watts"} {
		if _, present := o.fields[name]; present && !slices.Contains(takes, name) {
			return nil, &FieldError{Path: name, Problem: "not taken by action " + action}
		}
	}
	r := &ControlRequest{}
	body := struct {
		*ControlRequest
		GPU *float64 `json:"gpu"` // a whole number, 1.0 included
	}{ControlRequest: r}
	if err := o.decode(&body); err != nil {
		return nil, err
	}
	if err := first(o.require("node"), nonEmpty("node", r.Node), o.require(takes...)); err != nil {
		return nil, err
	}
	if body.GPU != nil {
		i, err := deviceIndex("gpu", *body.GPU)
		if err != nil {
			return nil, err
		}
		r.GPU = &i
	}
	if err := first(optional(watts, "watts", r.Watts), optional(pct, "pct", r.Pct)); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeControlResponse reads the answer to a control strictly. Whether
// the applied value is present is checked by the caller, which knows the
// action.
func DecodeControlResponse(data []byte) (*ControlResponse, error) {
	o, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	r := &ControlResponse{}
	if err := o.decode(r); err != nil {
		return nil, err
	}
	var result error
	switch r.Result {
	case ResultApplied, ResultBlocked, ResultError:
	default:
		result = &FieldError{Path: "result", Problem: fmt.Sprintf("%q is none of applied, blocked, error", r.Result)}
	}
	err = first(o.require("result"), result, short("message", r.Message),
		optional(watts, "appliedWatts", r.AppliedWatts), optional(pct, "appliedPct", r.AppliedPct))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// parseBody reads data as exactly one JSON object of this APIVersion. The
// version is checked before anything else, so that a body of another
// version is refused as such rather than for a field it adds.
func parseBody(data []byte) (*object, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty body, expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("invalid JSON: truncated, the body ends after %d bytes inside a value", len(data))
		case errors.As(err, &se):
			return nil, fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, se.Error())
		default:
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid JSON: more data after the value, at byte %d", dec.InputOffset())
	}
	o, err := asObject(raw, "")
	if err != nil {
		return nil, err
	}
	v, err := o.str("apiVersion")
	if err != nil {
		return nil, err
	}
	if v != APIVersion {
		return nil, &FieldError{Path: "apiVersion", Problem: fmt.Sprintf("%q is not supported, this agent speaks %s", v, APIVersion)}
	}
	return o, nil
}

// object is one JSON object of a body, kept raw until decoded.
type object struct {
	path   string
	raw    json.RawMessage
	fields map[string]json.RawMessage
}

func asObject(raw json.RawMessage, path string) (*object, error) {
	if k := kind(raw); k != "an object" {
		if path == "" {
			return nil, &FieldError{Problem: "the body is not a JSON object but " + k}
		}
		return nil, &FieldError{Path: path, Problem: "not an object (got " + k + ")"}
	}
	o := &object{path: path, raw: raw}
	if err := json.Unmarshal(raw, &o.fields); err != nil {
		return nil, &FieldError{Path: path, Problem: err.Error()} // not reached: raw is a valid object
	}
	return o, nil
}

func (o *object) child(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

// has says whether the field is present and not null.
func (o *object) has(name string) bool {
	v, ok := o.fields[name]
	return ok && kind(v) != "null"
}

// require names the first of the fields that is absent.
func (o *object) require(names ...string) error {
	for _, name := range names {
		if !o.has(name) {
			return &FieldError{Path: o.child(name), Problem: "missing"}
		}
	}
	return nil
}

// decode decodes the whole object into v, refusing fields v does not
// have.
func (o *object) decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(o.raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Field is the Go path to the field; its last element is the
		// JSON name, since every object is decoded on its own.
		return typeError(o.child(te.Field[strings.LastIndex(te.Field, ".")+1:]), te)
	}
	// encoding/json reports an unknown field by message only.
	if q, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, err := strconv.Unquote(q); err == nil {
			return &FieldError{Path: o.child(name), Problem: "unknown field in " + APIVersion}
		}
	}
	return &FieldError{Path: o.path, Problem: err.Error()}
}

// str reads one required string field ahead of decode.
func (o *object) str(name string) (string, error) {
	if !o.has(name) {
		return "", &FieldError{Path: o.child(name), Problem: "missing"}
	}
	var s string
	if err := decodeValue(o.fields[name], o.child(name), &s); err != nil {
		return "", err
	}
	return s, short(o.child(name), s)
}

// array returns the elements of an optional array field, at most maxLen.
func (o *object) array(name string, maxLen int) ([]json.RawMessage, error) {
	if !o.has(name) {
		return nil, nil
	}
	var a []json.RawMessage
	if err := decodeValue(o.fields[name], o.child(name), &a); err != nil {
		return nil, err
	}
	if len(a) > maxLen {
		return nil, &FieldError{Path: o.child(name), Problem: fmt.Sprintf("%d entries, at most %d allowed", len(a), maxLen)}
	}
	return a, nil
}

// decodeValue decodes one non-object value at path into v; null is not a
// value.
func decodeValue(raw json.RawMessage, path string, v any) error {
	if kind(raw) == "null" {
		return &FieldError{Path: path, Problem: "not " + typeName(reflect.TypeOf(v).Elem()) + " (got null)"}
	}
	err := json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeError(path, te)
	}
	return err
}

// typeError says what a value of the wrong type is. Every number of the
// contract is decoded as a float64, so a number that does not fit is one
// beyond its range (1e400).
func typeError(path string, te *json.UnmarshalTypeError) error {
	if lit, ok := strings.CutPrefix(te.Value, "number "); ok {
		return &FieldError{Path: path, Problem: fmt.Sprintf("number %s is out of range", lit)}
	}
	return &FieldError{Path: path, Problem: "not " + typeName(te.Type) + " (got " + article(te.Value) + ")"}
}

func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	default:
		return "a number"
	}
}

// article turns encoding/json's name of a JSON type into the contract's
// error wording.
func article(jsonType string) string {
	switch jsonType {
	case "bool":
		return "a boolean"
	case "array", "object":
		return "an " + jsonType
	default:
		return "a " + jsonType
	}
}

// kind names the JSON type of raw by its first byte.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// first returns the first error of checks made in order of importance.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func watts(path string, w float64) error  { return inRange(path, w, 0, MaxWatts, " W") }
func pct(path string, p float64) error    { return inRange(path, p, 0, 100, "%") }
func joules(path string, j float64) error { return inRange(path, j, 0, math.MaxFloat64, " J") }

// optional checks an optional number when it is present.
func optional(check func(string, float64) error, path string, v *float64) error {
	if v == nil {
		return nil
	}
	return check(path, *v)
}

// atMost refuses a range whose minimum is above its maximum.
func atMost(minPath string, lo float64, maxName string, hi float64) error {
	if lo > hi {
		return &FieldError{Path: minPath, Problem: fmt.Sprintf("%g W is above %s %g W", lo, maxName, hi)}
	}
	return nil
}

// deviceIndex is a GPU index: a whole number in 0..MaxGPUs-1.
func deviceIndex(path string, f float64) (int, error) {
	if err := inRange(path, f, 0, MaxGPUs-1, ""); err != nil {
		return 0, err
	}
	if f != math.Trunc(f) {
		return 0, &FieldError{Path: path, Problem: fmt.Sprintf("not a whole number: %g", f)}
	}
	return int(f), nil
}

func inRange(path string, f, lo, hi float64, unit string) error {
	if f < lo || f > hi {
		return &FieldError{Path: path, Problem: fmt.Sprintf("%g%s is outside %g..%g%s", f, unit, lo, hi, unit)}
	}
	return nil
}

// short holds a string to MaxStringBytes.
func short(path, s string) error {
	if len(s) > MaxStringBytes {
		return &FieldError{Path: path, Problem: fmt.Sprintf("longer than %d bytes", MaxStringBytes)}
	}
	return nil
}

func nonEmpty(path, s string) error {
	if s == "" {
		return &FieldError{Path: path, Problem: "empty"}
	}
	return short(path, s)
}
