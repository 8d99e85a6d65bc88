package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditPolicy records metadata of every write and nothing else. Only the
// RequestReceived and ResponseComplete stages are kept: the first is
// written before the server handles the request, the second carries the
// status code.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted", "Panic"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// Write is one write request as the API server's audit log recorded it.
type Write struct {
	User        string
	Groups      []string
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Code is the HTTP status the server answered with, 0 while the
	// request is still being handled.
	Code int32
	// DryRun is true for requests made with dryRun=All.
	DryRun bool
}

func (w Write) String() string {
	res := w.Resource
	if w.Subresource != "" {
		res += "/" + w.Subresource
	}
	obj := w.Name
	if w.Namespace != "" {
		obj = w.Namespace + "/" + w.Name
	}
	return fmt.Sprintf("%s %s %s %s -> %d", w.User, w.Verb, res, obj, w.Code)
}

// writeLog follows the audit log file and indexes the writes in it.
type writeLog struct {
	path string

	mu      sync.Mutex
	offset  int64
	partial []byte
	writes  []*Write
	byID    map[types.UID]*Write
}

func newWriteLog(path string) *writeLog {
	return &writeLog{path: path, byID: map[types.UID]*Write{}}
}

// refresh reads what the API server appended since the last call.
func (l *writeLog) refresh() error {
	f, err := os.Open(l.path)
	if os.IsNotExist(err) {
		return nil // nothing audited yet
	}
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek audit log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	l.offset += int64(len(data))
	data = append(l.partial, data...)
	// The last line may still be being written; keep it for next time.
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		l.partial = data
		return nil
	}
	l.partial = slices.Clone(data[end+1:])
	for line := range bytes.SplitSeq(data[:end], []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("decode audit event %q: %w", line, err)
		}
		l.record(&ev)
	}
	return nil
}

func (l *writeLog) record(ev *auditv1.Event) {
	switch ev.Stage {
	case auditv1.StageRequestReceived:
		w := &Write{
			User:   ev.User.Username,
			Groups: ev.User.Groups,
			Verb:   ev.Verb,
			DryRun: bytes.Contains([]byte(ev.RequestURI), []byte("dryRun=All")),
		}
		if ref := ev.ObjectRef; ref != nil {
			w.APIGroup = ref.APIGroup
			w.Resource = ref.Resource
			w.Subresource = ref.Subresource
			w.Namespace = ref.Namespace
			w.Name = ref.Name
		}
		l.writes = append(l.writes, w)
		l.byID[ev.AuditID] = w
	case auditv1.StageResponseComplete:
		w, ok := l.byID[ev.AuditID]
		if !ok {
			return
		}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		// A create names its object in the body, which the server has
		// decoded by now unless it refused the request before that.
		if ref := ev.ObjectRef; ref != nil && w.Name == "" {
			w.Name = ref.Name
			w.Namespace = ref.Namespace
		}
		if w.Code == 0 {
			// The audit filter fills in 200 when a handler wrote no
			// status; keep a completed write distinguishable from a
			// pending one regardless.
			w.Code = 200
		}
		delete(l.byID, ev.AuditID)
	}
}

// forUser returns copies of user's writes in the order the server
// received them. It waits up to wait for their outcomes, which the server
// writes just after it answers.
func (l *writeLog) forUser(user string, wait time.Duration) ([]Write, error) {
	deadline := time.Now().Add(wait)
	for {
		l.mu.Lock()
		err := l.refresh()
		var out []Write
		pending := false
		for _, w := range l.writes {
			if w.User != user {
				continue
			}
			if w.Code == 0 {
				pending = true
			}
			out = append(out, *w)
		}
		l.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if !pending || time.Now().After(deadline) {
			return out, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
