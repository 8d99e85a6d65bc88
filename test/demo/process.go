package demo

// The processes of the programs the demo runs: started with the chart's
// arguments and environment (chart.go), watched, stopped, their logs read.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is a Joulie program the demo runs.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startProcess runs bin with args and exactly env (nothing of the demo's own
// environment but PATH and HOME leaks in, so a KUBECONFIG of the user's
// cannot point it elsewhere), its output in logPath.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Should the demo itself be killed, the kernel ends the program too:
	// nothing may outlive the demo.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// exited says whether the program has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// stop ends the program with SIGTERM, as Kubernetes does, and kills it if
// it has not exited within grace.
func (p *process) stop(grace time.Duration) error {
	if p == nil {
		return nil
	}
	if done, _ := p.exited(); !done {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case err := <-p.done:
		p.done <- err
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s exited with %v (log %s)", p.name, err, p.log)
		}
		return err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		p.done <- <-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed (log %s)", p.name, grace, p.log)
	}
}

// tailLog is the end of a program's log, for error messages.
func tailLog(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// freeAddr is a free loopback address for a program to listen on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// binDir is where the product's binaries are: --bin-dir, else the
// directory of this executable (make demo builds all into bin/).
func binDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Dir(exe), nil
}
