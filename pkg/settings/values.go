package settings

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kind is how a field's value is written: the parsers and the strictness
// of the file depend on it.
type kind int

const (
	kindString kind = iota
	kindText        // encoding.TextUnmarshaler, written as a string
	kindDuration
	kindBool
	kindFloat
	kindOptFloat // *float64: unset is "no value"
	kindInt
)

// kindOf classifies the field dst points to; it panics on a type no key
// may have, which the tests of every table catch.
func kindOf(dst any) kind {
	switch dst.(type) {
	case *time.Duration, *metav1.Duration:
		return kindDuration
	case encoding.TextUnmarshaler:
		return kindText
	case **float64:
		return kindOptFloat
	}
	switch reflect.TypeOf(dst).Elem().Kind() {
	case reflect.String:
		return kindString
	case reflect.Bool:
		return kindBool
	case reflect.Float64:
		return kindFloat
	case reflect.Int, reflect.Int64:
		return kindInt
	}
	panic(fmt.Sprintf("settings: no parser for %T", dst))
}

// isBool reports whether the field dst points to is a switch.
func isBool(dst any) bool { return kindOf(dst) == kindBool }

// setString parses s, from a flag or a variable, into the field dst
// points to. An empty string unsets an optional number and is an empty
// string field; other kinds refuse it.
func setString(dst any, s string) error {
	k := kindOf(dst)
	if k == kindText {
		if err := dst.(encoding.TextUnmarshaler).UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		return nil
	}
	v := reflect.ValueOf(dst).Elem()
	switch k {
	case kindString:
		v.SetString(s)
	case kindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a duration (such as \"5s\" or \"1m30s\")", s)
		}
		if p, ok := dst.(*metav1.Duration); ok {
			p.Duration = d
		} else {
			*dst.(*time.Duration) = d
		}
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case kindFloat:
		f, err := parseFloat(s)
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case kindOptFloat:
		p := dst.(**float64)
		if strings.TrimSpace(s) == "" {
			*p = nil
			return nil
		}
		f, err := parseFloat(s)
		if err != nil {
			return err
		}
		*p = &f
	case kindInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	}
	return nil
}

// parseFloat refuses NaN and infinities, which strconv accepts but no
// setting means.
func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

// setYAML stores v, a value of the file as encoding/json decodes it with
// UseNumber, in the field dst points to. Null leaves the field as it is
// (the default), except that it unsets an optional number. Types are
// strict: a quoted number is not a number and a bare number is not a
// duration, since either is more often a slip than an intent.
func setYAML(dst any, v any) error {
	k := kindOf(dst)
	if v == nil {
		if k == kindOptFloat {
			*dst.(**float64) = nil
		}
		return nil
	}
	switch k {
	case kindString, kindText:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a string (quote it)", describe(v))
		}
		return setString(dst, s)
	case kindDuration:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a duration: give a unit, such as \"5s\"", describe(v))
		}
		return setString(dst, s)
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s is not true or false", describe(v))
		}
		reflect.ValueOf(dst).Elem().SetBool(b)
		return nil
	case kindFloat, kindOptFloat:
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s is not a number", describe(v))
		}
		return setString(dst, n.String())
	default: // kindInt
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s is not a whole number", describe(v))
		}
		return setString(dst, n.String())
	}
}

// describe renders a decoded YAML value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "a block of keys"
	case []any:
		return "a list"
	case float64:
		// Only the non-finite ones get here (parseYAML); shown as written
		// in YAML, which is where they came from.
		switch {
		case math.IsNaN(v):
			return ".nan"
		case math.IsInf(v, 1):
			return ".inf"
		case math.IsInf(v, -1):
			return "-.inf"
		}
		return FormatFloat(v)
	default:
		return fmt.Sprint(v)
	}
}

// FormatFloat writes f in the shortest form that reads back the same.
func FormatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// format renders the field dst points to as setString takes it; ok is
// false for an unset optional number.
func format(dst any) (s string, ok bool) {
	k := kindOf(dst)
	if k == kindText {
		if m, ok := dst.(encoding.TextMarshaler); ok {
			if b, err := m.MarshalText(); err == nil {
				return string(b), true
			}
		}
		return fmt.Sprint(dst), true
	}
	v := reflect.ValueOf(dst).Elem()
	switch k {
	case kindString:
		return v.String(), true
	case kindDuration:
		if p, ok := dst.(*metav1.Duration); ok {
			return p.Duration.String(), true
		}
		return dst.(*time.Duration).String(), true
	case kindBool:
		return strconv.FormatBool(v.Bool()), true
	case kindFloat:
		return FormatFloat(v.Float()), true
	case kindOptFloat:
		p := dst.(**float64)
		if *p == nil {
			return "", false
		}
		return FormatFloat(**p), true
	default: // kindInt
		return strconv.FormatInt(v.Int(), 10), true
	}
}
