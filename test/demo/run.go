package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Run runs the demo o describes, drawing its live view on stdout, until
// its runs are over or ctx ends; either way it writes the report (into
// o.Out) and stops everything it started. The cluster's own noise on the
// process's stderr goes to a file when stderr is fd 2, so that the live
// view stays readable.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	began := time.Now()
	work, err := os.MkdirTemp("", "joulie-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// The embedded etcd's client logs to the process's stderr at shutdown
	// whatever the harness configures; send fd 2 to a file so the live
	// view stays clean. The demo's own errors still reach the terminal.
	if f, ok := stderr.(*os.File); ok && f.Fd() == 2 {
		restore, err := strayOutput(filepath.Join(work, "stray.log"))
		if err != nil {
			return err
		}
		defer restore()
	}

	terminal := !o.Plain
	if f, ok := stdout.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		terminal = false
	}
	d := &demo{opts: &o, work: work, out: stdout, began: began,
		view: &liveView{w: stdout, terminal: terminal, plainEvery: 10 * time.Second}}
	err = d.run(ctx)
	if d.reportDir != "" {
		fmt.Fprintf(stdout, "\nreport: %s (open %s in a browser; the data is in %s)\n",
			d.reportDir, filepath.Join(d.reportDir, "report.html"), filepath.Join(d.reportDir, "report.json"))
	}
	return err
}

// strayOutput points fd 2 at path until restore is called.
func strayOutput(path string) (restore func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		f.Close()
		syscall.Close(saved)
		return nil, fmt.Errorf("redirect stderr: %w", err)
	}
	return func() {
		_ = syscall.Dup3(saved, 2, 0)
		syscall.Close(saved)
		f.Close()
	}, nil
}
