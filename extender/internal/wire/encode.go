package wire

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// AppendFilterResult appends the ExtenderFilterResult for a, where
// reasons[i] is "" when the i-th node passes and the rejection's message
// otherwise. It answers in the form it was asked: node names for names,
// the scheduler's own Node objects, byte for byte, for Nodes.
//
// The Nodes go back whole because kube-scheduler reads more than their
// names. In k8s.io/kubernetes v1.37.1, without nodeCacheCapable,
// HTTPExtender.Filter builds a fresh NodeInfo from each Node returned
// (pkg/scheduler/extender.go:306-312), and those NodeInfos are the
// feasible nodes from then on (schedule_one.go:700, 608): the score
// plugins read them (framework/runtime/framework.go:1436-1445), such as
// NodeAffinity.Score the labels (plugins/nodeaffinity/node_affinity.go:
// 269-294), TaintToleration.Score the taints
// (plugins/tainttoleration/taint_toleration.go:197-207) and
// NodeResourcesFit the allocatable NodeInfo.SetNode takes from the Node
// (framework/types.go:510-512), and a next extender is sent them
// (extender.go:275-279). A Node cut to its name would drop preferred node
// affinity, PreferNoSchedule taints and resource scoring for every pod
// the extender filters. The server writes the kept Nodes straight from the
// request body instead (WriteKeptNodes), so they are not copied.
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
		w := appender{dst}
		_ = WriteKeptNodes(&w, a, reasons) // appending cannot fail
		dst = w.b
	}
	return AppendFilterFailures(dst, a, reasons)
}

// WriteKeptNodes writes to w the start of the filter reply to a request
// that carried Nodes: the kept Nodes, byte for byte from the request body.
// AppendFilterFailures gives the rest. Written this way, a reply to 5,000
// Nodes costs no second copy of them. Kept Nodes that the body lists side
// by side, with a bare comma between as encoding/json writes a list, go
// out in one write, so a reply keeping most Nodes is a few large writes
// rather than thousands of small ones.
func WriteKeptNodes(w io.Writer, a *Args, reasons []string) error {
	if _, err := io.WriteString(w, keptNodesHead); err != nil {
		return err
	}
	var run []byte // kept Nodes not written yet: one stretch of the body
	have, sep := false, ""
	for i := range a.Nodes {
		if reasons[i] != "" {
			continue
		}
		raw := a.Nodes[i].Raw
		if have {
			if joined, ok := commaJoined(run, raw); ok {
				run = joined
				continue
			}
			if err := writeRun(w, sep, run); err != nil {
				return err
			}
			sep = ","
		}
		run, have = raw, true
	}
	if have {
		if err := writeRun(w, sep, run); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, keptNodesFoot)
	return err
}

// commaJoined is run and next as one slice of the body they both point
// into, when a single comma is all that lies between them.
func commaJoined(run, next []byte) ([]byte, bool) {
	n := len(run) + 1 + len(next)
	if len(run) == 0 || len(next) == 0 || cap(run) < n {
		return nil, false
	}
	joined := run[:n]
	if joined[len(run)] != ',' || &joined[len(run)+1] != &next[0] {
		return nil, false
	}
	return joined, true
}

func writeRun(w io.Writer, sep string, run []byte) error {
	if sep != "" {
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
	}
	_, err := w.Write(run)
	return err
}

const (
	keptNodesHead = `{"Nodes":{"metadata":{},"items":[`
	keptNodesFoot = `]}`
)

// KeptNodesSize is the length WriteKeptNodes writes for a and reasons.
func KeptNodesSize(a *Args, reasons []string) int {
	n, kept := len(keptNodesHead+keptNodesFoot), 0
	for i, reason := range reasons {
		if reason == "" {
			kept++
			n += len(a.Nodes[i].Raw)
		}
	}
	return n + commas(kept)
}

// appender is an io.Writer appending to b.
type appender struct{ b []byte }

func (w *appender) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// AppendFilterFailures appends the end of the filter reply, after the
// kept nodes: the rejected ones with their reasons, and the empty error.
func AppendFilterFailures(dst []byte, a *Args, reasons []string) []byte {
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
	if !a.HasNodeNames {
		return KeptNodesSize(a, reasons) + FilterFailuresSize(a, reasons)
	}
	n, kept := len(`{"NodeNames":[`+`]`), 0
	for i, reason := range reasons {
		if reason == "" {
			kept++
			n += len(`""`) + len(a.rawNames[i])
		}
	}
	return n + commas(kept) + FilterFailuresSize(a, reasons)
}

// FilterFailuresSize is the length AppendFilterFailures adds for a and
// reasons (a bound, when a reason needs escaping).
func FilterFailuresSize(a *Args, reasons []string) int {
	n := len(`,"FailedNodes":{},"FailedAndUnresolvableNodes":{` + `},"Error":""}`)
	failed := 0
	for i, reason := range reasons {
		if reason != "" {
			failed++
			n += len(`"":`) + len(a.rawName(i)) + textSize(reason)
		}
	}
	return n + commas(failed)
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
// scores[i], leaving out the names that score 0. kube-scheduler adds an
// extender's score only to the hosts its reply lists, so a host left out
// ranks exactly as one listed at 0; each one left out is a list entry
// fewer for the scheduler to decode on every cycle.
func AppendHostPriorities(dst []byte, a *Args, scores []int64) []byte {
	dst = append(dst, '[')
	first := true
	for i, score := range scores {
		if score == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
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
	n, listed := len(`[]`), 0
	var digits [20]byte
	for i, score := range scores {
		if score == 0 {
			continue
		}
		listed++
		n += len(`{"Host":"","Score":}`) + len(a.rawName(i)) + len(strconv.AppendInt(digits[:0], score, 10))
	}
	return n + commas(listed)
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
