package wire

import (
	"strconv"
	"unicode/utf8"
)

// AppendFilterResult appends the ExtenderFilterResult for a, where
// reasons[i] is "" when the i-th node passes and the rejection's message
// otherwise. It answers in the form it was asked: node names for names,
// the scheduler's own Node objects, byte for byte, for Nodes.
//
// Rejections go to FailedAndUnresolvableNodes: evicting pods cannot turn
// an eco node into a performance node, so the scheduler should not try
// preemption there.
func AppendFilterResult(dst []byte, a *Args, reasons []string) []byte {
	if a.HasNodeNames {
		dst = append(dst, `{"NodeNames":[`...)
		first := true
		for i := range a.NodeNames {
			if reasons[i] != "" {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendRaw(dst, a.rawNames[i])
		}
		dst = append(dst, "]"...)
	} else {
		dst = append(dst, `{"Nodes":{"metadata":{},"items":[`...)
		first := true
		for i := range a.Nodes {
			if reasons[i] != "" {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, a.Nodes[i].Raw...)
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, `,"FailedNodes":{},"FailedAndUnresolvableNodes":{`...)
	first := true
	for i, reason := range reasons {
		if reason == "" {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendRaw(dst, a.rawName(i))
		dst = append(dst, ':')
		dst = appendText(dst, reason)
	}
	return append(dst, `},"Error":""}`...)
}

// FilterResultSize is the length AppendFilterResult adds for a and
// reasons (a bound, when a reason needs escaping), so that the caller can
// set the memory aside before it writes.
func FilterResultSize(a *Args, reasons []string) int {
	n := len(`{"NodeNames":[` + `]`)
	if !a.HasNodeNames {
		n = len(`{"Nodes":{"metadata":{},"items":[` + `]}`)
	}
	n += len(`,"FailedNodes":{},"FailedAndUnresolvableNodes":{` + `},"Error":""}`)
	var kept, failed int
	for i, reason := range reasons {
		switch {
		case reason != "":
			failed++
			n += len(`"":`) + len(a.rawName(i)) + textSize(reason)
		case a.HasNodeNames:
			kept++
			n += len(`""`) + len(a.rawNames[i])
		default:
			kept++
			n += len(a.Nodes[i].Raw)
		}
	}
	return n + commas(kept) + commas(failed)
}

// commas is the number of commas between n elements.
func commas(n int) int { return max(n-1, 0) }

// textSize is the length appendText writes for s, or a bound when s needs
// escaping: no byte takes more than six (a control character as \u00XX,
// an invalid byte as \ufffd).
func textSize(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return 6*len(s) + 2
		}
	}
	return len(s) + 2
}

// name is the i-th candidate's name in whichever form the request had.
func (a *Args) name(i int) []byte {
	if a.HasNodeNames {
		return a.NodeNames[i]
	}
	return a.Nodes[i].Name
}

// rawName is the i-th name as the request spelled it.
func (a *Args) rawName(i int) []byte {
	if a.HasNodeNames {
		return a.rawNames[i]
	}
	return a.Nodes[i].rawName
}

// appendRaw appends a string whose content is already valid JSON: a name
// as the request spelled it. Copying it back, rather than escaping the
// decoded name again, gives the scheduler exactly the string it sent.
func appendRaw(dst, raw []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, raw...)
	return append(dst, '"')
}

// Len is the number of candidate nodes.
func (a *Args) Len() int {
	if a.HasNodeNames {
		return len(a.NodeNames)
	}
	return len(a.Nodes)
}

// Name is the i-th candidate's name, 0 <= i < Len().
func (a *Args) Name(i int) []byte { return a.name(i) }

// AppendHostPriorities appends a HostPriorityList of names[i] with
// scores[i].
func AppendHostPriorities(dst []byte, a *Args, scores []int64) []byte {
	dst = append(dst, '[')
	for i, score := range scores {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"Host":`...)
		dst = appendRaw(dst, a.rawName(i))
		dst = append(dst, `,"Score":`...)
		dst = strconv.AppendInt(dst, score, 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// HostPrioritiesSize is the length AppendHostPriorities adds for a and
// scores.
func HostPrioritiesSize(a *Args, scores []int64) int {
	n := len(`[]`) + commas(len(scores))
	var digits [20]byte
	for i, score := range scores {
		n += len(`{"Host":"","Score":}`) + len(a.rawName(i)) + len(strconv.AppendInt(digits[:0], score, 10))
	}
	return n
}

// AppendError appends the JSON body of a refused request.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendText(dst, msg)
	return append(dst, '}')
}

// appendString appends s as a JSON string: quote, backslash and control
// characters escaped, invalid UTF-8 replaced by U+FFFD as encoding/json
// does.
func appendString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(s[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				const hex = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				dst = append(dst, `\ufffd`...)
			}
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendText is appendString for a string. The reasons and messages it
// writes are plain ASCII, which it copies without converting.
func appendText(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return appendString(dst, []byte(s))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
