package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fairsched/fairsched/loadgen"
)

// server is a fairsched server started by --serve.
type server struct {
	cmd  *exec.Cmd
	addr string
	log  *tailWriter
	done chan error
}

// startServer runs "bin serve --listen 127.0.0.1:0 args..." and waits for the
// address it prints ("listening on http://ADDR"); the address must be
// loopback. Its output goes to logPath (or is kept only as a tail).
func startServer(ctx context.Context, bin string, args []string, logPath string, stderr io.Writer) (*server, error) {
	tail := &tailWriter{max: 8 << 10}
	var out io.Writer = tail
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("cannot create the server log: %w", err)
		}
		out = io.MultiWriter(f, tail)
		tail.closer = f
	}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = out
	addrc := make(chan string, 1)
	cmd.Stdout = &addrWatcher{out: out, found: addrc}
	// Its own process group, so that a Ctrl-C of make reaches it only
	// through us (and it is stopped gracefully, after the report); on
	// Linux it is also sent SIGTERM if we die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, log: tail, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	select {
	case a := <-addrc:
		if _, err := loadgen.CheckTarget("http://" + a); err != nil {
			_ = s.stop()
			return nil, err
		}
		s.addr = a
		return s, nil
	case err := <-s.done:
		s.done <- err
		return nil, fmt.Errorf("%s serve exited before listening: %v\n%s", bin, err, tail.String())
	case <-time.After(30 * time.Second):
		_ = s.stop()
		return nil, fmt.Errorf("%s serve did not print its address within 30 s:\n%s", bin, tail.String())
	case <-ctx.Done():
		_ = s.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM and waits up to 15 s for a graceful exit, then kills.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		err = <-s.done
		err = fmt.Errorf("the server did not stop within 15 s of SIGTERM and was killed (%v)", err)
	}
	s.log.close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("the server exited with %v:\n%s", err, s.log.String())
	}
	return err
}

// addrWatcher forwards the server's standard output and sends the address
// of its "listening on http://ADDR" line to found, once.
type addrWatcher struct {
	out   io.Writer
	found chan string
	line  []byte
	sent  bool
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	_, _ = w.out.Write(p)
	if w.sent {
		return len(p), nil
	}
	w.line = append(w.line, p...)
	const marker = "listening on http://"
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		line := string(w.line[:i])
		w.line = w.line[i+1:]
		if j := strings.Index(line, marker); j >= 0 {
			a := line[j+len(marker):]
			if k := strings.IndexByte(a, ' '); k >= 0 {
				a = a[:k]
			}
			w.found <- a
			w.sent, w.line = true, nil
			break
		}
	}
	return len(p), nil
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	mu     sync.Mutex
	buf    []byte
	max    int
	closer io.Closer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *tailWriter) close() {
	if t.closer != nil {
		_ = t.closer.Close()
	}
}
