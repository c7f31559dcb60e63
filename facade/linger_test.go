package facade

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
)

// TestOversizedRequestIsAnsweredNotReset: a request that fasthttp cannot
// read whole (a URL or a header over the read buffer, a body over the
// limit) is answered with its status and closed cleanly. The client writes
// the whole request before it reads, as Python's http.client does; a close
// with the request's bytes still unread used to reset the connection, and
// the client saw ECONNRESET instead of the answer.
func TestOversizedRequestIsAnsweredNotReset(t *testing.T) {
	mc := &manualClock{}
	mc.set(clock.Time(1_000_000))
	srv, err := New(Options{Clock: mc, ManualUpdates: true, Logger: quietLogger(t), MaxBodySize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	// Small socket buffers on both ends, so that the client is still
	// writing its request when the server has answered and closes: the
	// kernel's buffers cannot take the request whole.
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) }); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after Shutdown", err)
		}
	})
	addr := ln.Addr().String()
	long := func(n int) string { return strings.Repeat("a", n) }
	body := `{"node_id": "n", "resources": {"cpu": 1}}` + strings.Repeat(" ", 1<<20)
	for _, tc := range []struct {
		name   string
		req    string
		status int
	}{
		{"long heartbeat URL", "POST /api/v1/nodes/" + long(1<<20) + "/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 431},
		{"long batch URL", "POST /api/v1/heartbeats?x=" + long(1<<20) + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 431},
		{"long pool URL", "GET /api/v1/pools/" + long(1<<20) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431},
		{"long header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + long(1<<20) + "\r\n\r\n", 431},
		{"batch body over the limit", "POST /api/v1/heartbeats HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			// The whole request first, then the answer.
			if _, err := io.WriteString(c, tc.req); err != nil {
				t.Fatalf("writing the request: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v (want %d)", err, tc.status)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("reading the answer's body: %v", err)
			}
			if resp.StatusCode != tc.status || !strings.Contains(string(b), `"error"`) || !resp.Close {
				t.Fatalf("answer %d (close %v) %s, want %d with a JSON error and Connection: close", resp.StatusCode, resp.Close, b, tc.status)
			}
		})
	}
	// The server goes on serving.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz after the oversized requests: %d", resp.StatusCode)
	}
}
