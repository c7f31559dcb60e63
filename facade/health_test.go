package facade

import (
	"strings"
	"testing"
)

func TestHealthAndReadiness(t *testing.T) {
	ts := startServer(t, "", nil)
	if a := inProcess(ts.srv, "GET", "/healthz", nil); a.status != 200 || !strings.Contains(string(a.body), `"status":"ok","role":"standalone","store":"memory"`) {
		t.Fatalf("/healthz: %d %s", a.status, a.body)
	}
	if a := inProcess(ts.srv, "GET", "/readyz", nil); a.status != 200 || string(a.body) != "{\"status\":\"ready\"}\n" {
		t.Fatalf("/readyz: %d %s", a.status, a.body)
	}
	// Once a shutdown began: not ready, still alive.
	ts.srv.stopping.Store(true)
	if a := inProcess(ts.srv, "GET", "/readyz", nil); a.status != 503 || !strings.Contains(string(a.body), `"code":"shutting_down"`) {
		t.Fatalf("/readyz while stopping: %d %s", a.status, a.body)
	}
	if a := inProcess(ts.srv, "GET", "/healthz", nil); a.status != 200 || !strings.Contains(string(a.body), `"status":"stopping"`) {
		t.Fatalf("/healthz while stopping: %d %s", a.status, a.body)
	}
	ts.srv.stopping.Store(false)
}
