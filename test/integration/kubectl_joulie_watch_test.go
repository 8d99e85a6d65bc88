package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// kubectl joulie status -w, to a pipe, writes a status with a time line
// when it changes and nothing while it holds; on a terminal it redraws
// the screen at every refresh. Ctrl-C ends it with status 0.
func TestKubectlJoulieStatusWatch(t *testing.T) {
	setUpKJCluster(t)
	bindViewer(t, "kj-watchers")
	viewer := newKubectlJoulie(t, "kj-watcher", "kj-watchers")
	args := []string{"--kubeconfig", viewer.kubeconfig, "status", "-w", "--interval", "200ms", "-l", "joulie.test/group=" + kjGroup}

	t.Run("pipe", func(t *testing.T) {
		cmd := exec.Command(viewer.bin, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1000)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The first status, then several refreshes that change nothing.
		blocks := countBlocks(t, lines, 2*time.Second)
		if blocks != 1 {
			t.Fatalf("%d statuses in 2 s of an unchanged cluster, want 1", blocks)
		}
		// A change is written once.
		cp.CreatePod(t, kjPod("watched", "performance", "1", ""))
		cp.BindPod(t, kjNamespace, "watched", "kj-eco")
		if blocks := countBlocks(t, lines, 2*time.Second); blocks != 1 {
			t.Fatalf("%d statuses in 2 s after one change, want 1", blocks)
		}
		interrupt(t, cmd)
	})

	t.Run("terminal", func(t *testing.T) {
		master, slave := openPTY(t)
		cmd := exec.Command(viewer.bin, args...)
		cmd.Stdout, cmd.Stderr = slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		got := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(master) // ends with EIO once the command exits
			got <- string(b)
		}()
		time.Sleep(1500 * time.Millisecond)
		interrupt(t, cmd)
		screen := <-got
		// At 200 ms, about seven refreshes; each clears the screen and
		// draws the whole table, changed or not.
		if n := strings.Count(screen, "\x1b[H\x1b[2J"); n < 3 || strings.Count(screen, "NODE") != n {
			t.Errorf("%d screen clears and %d tables in 1.5 s on a terminal, want at least 3 and as many tables:\n%q", n, strings.Count(screen, "NODE"), screen)
		}
	})
}

// countBlocks counts the statuses ("--- <time>" lines) written within d.
func countBlocks(t *testing.T, lines <-chan string, d time.Duration) int {
	t.Helper()
	n := 0
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("kubectl joulie status -w ended")
			}
			if strings.HasPrefix(l, "--- ") {
				n++
			}
		case <-deadline:
			return n
		}
	}
}

// interrupt sends cmd Ctrl-C's signal and wants it to end with status 0.
func interrupt(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("kubectl joulie status -w after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("kubectl joulie status -w did not end on Ctrl-C")
	}
}

// openPTY opens a pseudo-terminal: the master to read what the program
// draws, the slave to give it as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal (/dev/ptmx): %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal's slave: %v", err)
	}
	return m, s
}
