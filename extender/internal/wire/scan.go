package wire

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of skipped values, as encoding/json does, so
// that a body of ten million '[' is refused rather than tracked.
const maxDepth = 10000

// SyntaxError is a request body that is not the JSON the protocol
// expects: bad syntax, truncation, or a wrong type where the decoder
// looks.
type SyntaxError struct {
	// Offset is the byte of the body where reading stopped.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg) }

// ErrDuplicateKey is wrapped by errors about a key the decoder reads that
// appears twice in one object. encoding/json would merge the two values in
// ways no scheduler intends, so the request is refused instead.
var ErrDuplicateKey = errors.New("duplicate key")

// scanner walks a JSON text. Its methods leave pos after what they read.
type scanner struct {
	data []byte
	pos  int
	// stack holds the open containers while skipping: true for an
	// object, false for an array. It lives as long as the Args that owns
	// the scanner, so its storage is reused from request to request.
	stack []bool
	// values counts the values skipValue has passed, nested ones included:
	// what encoding/json would build from them is roughly proportional.
	values int
}

// reset points the scanner at data.
func (s *scanner) reset(data []byte) {
	s.data = data
	s.pos = 0
	s.stack = s.stack[:0]
	s.values = 0
}

func (s *scanner) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) errUnexpected(want string) error {
	if s.pos >= len(s.data) {
		return &SyntaxError{Offset: s.pos, Msg: "unexpected end of input, want " + want}
	}
	return s.errorf("unexpected %s, want %s", quoteByte(s.data[s.pos]), want)
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// skipSpace skips JSON whitespace, which is only these four bytes.
func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at the
// end of the input.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// consume consumes c if it is the next non-space byte.
func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.pos++
		return true
	}
	return false
}

func (s *scanner) expect(c byte) error {
	if !s.consume(c) {
		return s.errUnexpected(fmt.Sprintf("%q", rune(c)))
	}
	return nil
}

// strStop marks the bytes that end the fast run of a string: the quote,
// the backslash, the control characters JSON forbids unescaped, and the
// bytes of multi-byte UTF-8, which only need noting.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// readString reads a string at pos and returns its raw content between the
// quotes, validated. special is true when the content holds escapes or
// non-ASCII bytes: only then does unquote have work to do.
func (s *scanner) readString() (raw []byte, special bool, err error) {
	if s.peek() != '"' {
		return nil, false, s.errUnexpected("a string")
	}
	s.pos++
	start := s.pos
	data := s.data
	i := s.pos
	for {
		for i < len(data) && !strStop[data[i]] {
			i++
		}
		if i >= len(data) {
			s.pos = i
			return nil, false, s.errorf("unexpected end of input in a string")
		}
		switch c := data[i]; {
		case c == '"':
			s.pos = i + 1
			return data[start:i], special, nil
		case c >= utf8.RuneSelf:
			special = true
			i++
		case c == '\\':
			special = true
			if i+1 >= len(data) {
				s.pos = i + 1
				return nil, false, s.errorf("unexpected end of input in a string escape")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					s.pos = len(data)
					return nil, false, s.errorf("unexpected end of input in a \\u escape")
				}
				for _, h := range data[i+2 : i+6] {
					if hexVal(h) < 0 {
						s.pos = i
						return nil, false, s.errorf("invalid \\u escape")
					}
				}
				i += 6
			default:
				s.pos = i
				return nil, false, s.errorf("invalid escape %s", quoteByte(data[i+1]))
			}
		default:
			s.pos = i
			return nil, false, s.errorf("control character %s in a string", quoteByte(c))
		}
	}
}

func hexVal(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// unquote appends the text of a validated raw string to dst, resolving
// escapes as encoding/json does: invalid UTF-8 and lone surrogates become
// U+FFFD. Raw strings without escapes that are valid UTF-8 are returned as
// they are, without copying; special is readString's hint.
func unquote(raw []byte, special bool, dst []byte) (text, newDst []byte) {
	if !special || (bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)) {
		return raw, dst
	}
	start := len(dst)
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == '\\' {
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is a
					// pair; anything else leaves a lone surrogate.
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if pair := utf16.DecodeRune(r, hex4(raw[i+2:])); pair != utf8.RuneError {
							dst = utf8.AppendRune(dst, pair)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, raw[i:i+size]...)
		}
		i += size
	}
	return dst[start:], dst
}

func hex4(b []byte) rune {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// readLiteral reads true, false or null.
func (s *scanner) readLiteral() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
			s.pos += len(lit)
			return nil
		}
	}
	return s.errUnexpected("a value")
}

// consumeNull consumes a null literal if it is next.
func (s *scanner) consumeNull() bool {
	if s.peek() == 'n' && len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// readNumber reads a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) readNumber() error {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		s.pos = i
		return s.errUnexpected("a digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			s.pos = i
			return s.errUnexpected("a digit after the decimal point")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			s.pos = i
			return s.errUnexpected("a digit in the exponent")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	s.pos = i
	return nil
}

// readKey reads an object key and the colon after it.
func (s *scanner) readKey() (raw []byte, escaped bool, err error) {
	raw, escaped, err = s.readString()
	if err != nil {
		return nil, false, err
	}
	if err := s.expect(':'); err != nil {
		return nil, false, err
	}
	return raw, escaped, nil
}

// skipValue skips one value of any kind, validating its syntax. It loops
// instead of recursing, so that depth costs a bit per level, not a stack
// frame.
func (s *scanner) skipValue() error {
	s.stack = s.stack[:0]
	for {
		// A value is expected here.
		s.values++
		switch s.peek() {
		case '{':
			s.pos++
			if s.consume('}') {
				break
			}
			if err := s.push(true); err != nil {
				return err
			}
			if _, _, err := s.readKey(); err != nil {
				return err
			}
			continue
		case '[':
			s.pos++
			if s.consume(']') {
				break
			}
			if err := s.push(false); err != nil {
				return err
			}
			continue
		case '"':
			if _, _, err := s.readString(); err != nil {
				return err
			}
		case 't', 'f', 'n':
			if err := s.readLiteral(); err != nil {
				return err
			}
		case 0:
			return s.errUnexpected("a value")
		default:
			if err := s.readNumber(); err != nil {
				return err
			}
		}
		// A value ended: close containers until one continues.
		for {
			if len(s.stack) == 0 {
				return nil
			}
			inObject := s.stack[len(s.stack)-1]
			if s.consume(',') {
				if inObject {
					if _, _, err := s.readKey(); err != nil {
						return err
					}
				}
				break
			}
			closer := byte(']')
			if inObject {
				closer = '}'
			}
			if !s.consume(closer) {
				if inObject {
					return s.errUnexpected(`"," or "}"`)
				}
				return s.errUnexpected(`"," or "]"`)
			}
			s.stack = s.stack[:len(s.stack)-1]
		}
	}
}

func (s *scanner) push(object bool) error {
	if len(s.stack) >= maxDepth {
		return s.errorf("nested deeper than %d levels", maxDepth)
	}
	s.stack = append(s.stack, object)
	return nil
}

// objectLoop calls member for each key of the object at pos, which the
// member function must read the value of. A null instead of the object
// is reported by ok false and calls nothing.
func (s *scanner) objectLoop(member func(key []byte, escaped bool) error) (ok bool, err error) {
	if s.consumeNull() {
		return false, nil
	}
	if err := s.expect('{'); err != nil {
		return false, err
	}
	if s.consume('}') {
		return true, nil
	}
	for {
		key, escaped, err := s.readKey()
		if err != nil {
			return false, err
		}
		if err := member(key, escaped); err != nil {
			return false, err
		}
		if s.consume(',') {
			continue
		}
		if err := s.expect('}'); err != nil {
			return false, s.errUnexpected(`"," or "}"`)
		}
		return true, nil
	}
}

// arrayLoop calls elem for each element of the array at pos; null instead
// of the array gives ok false.
func (s *scanner) arrayLoop(elem func() error) (ok bool, err error) {
	if s.consumeNull() {
		return false, nil
	}
	if err := s.expect('['); err != nil {
		return false, err
	}
	if s.consume(']') {
		return true, nil
	}
	for {
		if err := elem(); err != nil {
			return false, err
		}
		if s.consume(',') {
			continue
		}
		if err := s.expect(']'); err != nil {
			return false, s.errUnexpected(`"," or "]"`)
		}
		return true, nil
	}
}
