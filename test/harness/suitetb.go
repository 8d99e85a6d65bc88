package harness

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// suiteTB stands in for a *testing.T where kube-apiserver's test server
// wants one but the control plane outlives any single test (it is started
// from TestMain). It writes what the server logs through it to the control
// plane's log file and runs the cleanups it was given when Stop calls
// cleanup.
type suiteTB struct {
	out     io.Writer
	tempDir string

	mu       sync.Mutex
	failed   bool
	cleanups []func()
	tempSeq  int
}

// errSuiteFatal is the panic value of suiteTB.FailNow; startAPIServer
// recovers it and turns it into an error.
type errSuiteFatal struct{ msg string }

func (e errSuiteFatal) Error() string { return e.msg }

func newSuiteTB(out io.Writer, tempDir string) *suiteTB {
	return &suiteTB{out: out, tempDir: tempDir}
}

func (s *suiteTB) Attr(key, value string) { s.Logf("attr %s=%s", key, value) }
func (s *suiteTB) Chdir(dir string) {
	s.Fatalf("harness: Chdir(%q) is not supported outside a test", dir)
}
func (s *suiteTB) Helper()      {}
func (s *suiteTB) Name() string { return "harness" }

func (s *suiteTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *suiteTB) Log(args ...any) { fmt.Fprintln(s.out, args...) }
func (s *suiteTB) Logf(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

func (s *suiteTB) Error(args ...any) {
	s.Log(append([]any{"ERROR:"}, args...)...)
	s.Fail()
}

func (s *suiteTB) Errorf(format string, args ...any) {
	s.Logf("ERROR: "+format, args...)
	s.Fail()
}

func (s *suiteTB) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

func (s *suiteTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *suiteTB) FailNow() {
	s.Fail()
	panic(errSuiteFatal{msg: "control plane start aborted, see the log"})
}

func (s *suiteTB) Fatal(args ...any) {
	s.Log(append([]any{"FATAL:"}, args...)...)
	s.Fail()
	panic(errSuiteFatal{msg: fmt.Sprint(args...)})
}

func (s *suiteTB) Fatalf(format string, args ...any) {
	s.Logf("FATAL: "+format, args...)
	s.Fail()
	panic(errSuiteFatal{msg: fmt.Sprintf(format, args...)})
}

func (s *suiteTB) Setenv(key, value string) {
	if err := os.Setenv(key, value); err != nil {
		s.Fatalf("set %s: %v", key, err)
	}
}

// A control plane has no test to skip; a missing prerequisite must fail.
func (s *suiteTB) Skip(args ...any)                 { s.Fatal(append([]any{"skip requested:"}, args...)...) }
func (s *suiteTB) Skipf(format string, args ...any) { s.Fatalf("skip requested: "+format, args...) }
func (s *suiteTB) SkipNow()                         { s.Fatal("skip requested") }
func (s *suiteTB) Skipped() bool                    { return false }

func (s *suiteTB) TempDir() string {
	s.mu.Lock()
	s.tempSeq++
	seq := s.tempSeq
	s.mu.Unlock()
	dir := fmt.Sprintf("%s/tmp-%03d", s.tempDir, seq)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.Fatalf("create temp dir: %v", err)
	}
	return dir
}

// cleanup runs the registered functions, last registered first, as the
// testing package does.
func (s *suiteTB) cleanup() {
	s.mu.Lock()
	fns := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}
