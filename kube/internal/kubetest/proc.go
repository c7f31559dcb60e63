package kubetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one component the cluster runs: its own process group, its
// output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // its exit error, once done is closed

	mu       sync.Mutex
	lines    func(string) // when set, sees each line of output (start-up parsing)
	stopOnce sync.Once
}

// startProc runs bin with args, its output appended to dir/name.log.
func startProc(dir, name, bin string, args []string, env []string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", logPath, err)
	}
	fmt.Fprintf(f, "# %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{name: name, cmd: cmd, logPath: logPath, log: f, done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot make a pipe for %s: %w", name, err)
	}
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		f.Close()
		return nil, fmt.Errorf("cannot start %s (%s): %w", name, bin, err)
	}
	pw.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			f.WriteString(line + "\n")
			p.mu.Lock()
			fn := p.lines
			p.mu.Unlock()
			if fn != nil {
				fn(line)
			}
		}
		// drain what a line too long for the scanner left behind
		io.Copy(f, pr)
		pr.Close()
	}()
	go func() {
		err := cmd.Wait()
		<-copied
		p.err = err
		fmt.Fprintf(f, "# exited: %v\n", err)
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// watchLines calls fn for each line the process writes from now on.
func (p *proc) watchLines(fn func(string)) {
	p.mu.Lock()
	p.lines = fn
	p.mu.Unlock()
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, and SIGKILL (to what it may
// have left behind, too) after grace. Only the first call signals: later
// ones wait for the first's end.
func (p *proc) stop(grace time.Duration) { p.stopWith(grace, false) }

// stopWith is stop; hard skips SIGTERM (kill -9).
func (p *proc) stopWith(grace time.Duration, hard bool) {
	p.stopOnce.Do(func() {
		if ok, _ := p.exited(); !ok && !hard {
			killGroup(p.cmd, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(grace):
			}
		}
		killGroup(p.cmd, syscall.SIGKILL)
	})
	<-p.done
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	data = bytes.TrimRight(data, "\n")
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// exitError describes a component that ended before it was ready.
func (p *proc) exitError() error {
	_, err := p.exited()
	if err == nil {
		err = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited before it was ready (%v); the end of %s:\n%s", p.name, err, p.logPath, p.tail(40))
}

// Process is a program the cluster runs beside its components (fairsched
// serve, fairsched-kube, a benchmark's scheduler): in a process group of its
// own, its output in Dir/<name>.log, stopped by Close if not before.
type Process struct{ p *proc }

// Run starts bin with args as a process of the cluster. When ready is not
// nil, Run waits (up to Options.StartTimeout) until it returns true for a
// line of the process's output, and fails if the process exits first.
func (c *Cluster) Run(name, bin string, args []string, ready func(line string) bool) (*Process, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("kubetest: the cluster is closed")
	}
	p, err := startProc(c.Dir, name, bin, args, nil)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	if ready == nil {
		return &Process{p}, nil
	}
	seen := make(chan struct{})
	var once sync.Once
	p.watchLines(func(line string) {
		if ready(line) {
			once.Do(func() { close(seen) })
		}
	})
	defer p.watchLines(nil)
	select {
	case <-seen:
		return &Process{p}, nil
	case <-p.done:
		// the line may have come just before the exit
		select {
		case <-seen:
			return &Process{p}, nil
		default:
		}
		return nil, p.exitError()
	case <-time.After(c.opts.StartTimeout):
		p.stop(5 * time.Second)
		return nil, fmt.Errorf("%s did not get ready within %v; the end of %s:\n%s", name, c.opts.StartTimeout, p.logPath, p.tail(40))
	}
}

// Stop sends SIGTERM to the process group and SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) { p.p.stop(grace) }

// Kill sends SIGKILL to the process group and waits until the process has
// exited (kill -9).
func (p *Process) Kill() { p.p.stopWith(0, true) }

// Exited reports whether the process has ended, and its exit error.
func (p *Process) Exited() (bool, error) { return p.p.exited() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// LogPath is the file of the process's output.
func (p *Process) LogPath() string { return p.p.logPath }

// Tail returns the last n lines of the process's output.
func (p *Process) Tail(n int) string { return p.p.tail(n) }

// Pid is the process's id (and its process group's).
func (p *Process) Pid() int { return p.p.cmd.Process.Pid }
