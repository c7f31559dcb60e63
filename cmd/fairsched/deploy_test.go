package main

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDeployFiles keeps deploy/ in step with the binary: the container's
// command and the systemd unit's ExecStart are serve command lines that
// parse, the image runs as a non-root user and builds a static binary of
// this command, and the unit reloads with SIGHUP.
func TestDeployFiles(t *testing.T) {
	docker := readDeploy(t, "Dockerfile")
	m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindStringSubmatch(docker)
	if m == nil {
		t.Fatal("Dockerfile: no CMD [...] line")
	}
	var cmd []string
	if err := json.Unmarshal([]byte(m[1]), &cmd); err != nil || len(cmd) == 0 || cmd[0] != "serve" {
		t.Fatalf("Dockerfile: CMD %s: want [\"serve\", flags…] (%v)", m[1], err)
	}
	checkServeArgs(t, "Dockerfile CMD", cmd[1:])
	for _, want := range []string{"USER nonroot", "CGO_ENABLED=0", "./cmd/fairsched", "internal/buildinfo.version=", "internal/buildinfo.commit="} {
		if !strings.Contains(docker, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if last := docker[strings.LastIndex(docker, "\nFROM "):]; !strings.Contains(last, "USER nonroot") {
		t.Error("Dockerfile: the final stage does not switch to a non-root user")
	}

	unit := readDeploy(t, "fairsched.service")
	m = regexp.MustCompile(`(?m)^ExecStart=(\S+) (.*)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("fairsched.service: no ExecStart=")
	}
	args := strings.Fields(m[2])
	if args[0] != "serve" {
		t.Fatalf("fairsched.service: ExecStart runs %q, want serve", args[0])
	}
	checkServeArgs(t, "fairsched.service ExecStart", args[1:])
	for _, want := range []string{"ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes", "NoNewPrivileges=yes"} {
		if !strings.Contains(unit, want) {
			t.Errorf("fairsched.service lacks %q", want)
		}
	}
}

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkServeArgs(t *testing.T, where string, args []string) {
	t.Helper()
	fs, _ := serveFlags(io.Discard)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		t.Errorf("%s: %q is not a serve command line: %v", where, args, err)
	}
}

// TestGrafanaDashboard: the dashboard is JSON, and every metric its queries
// name is one docs/operations.md documents (the server's families, which
// facade's TestMetricsArePrometheusTrue keeps in step with the doc).
func TestGrafanaDashboard(t *testing.T) {
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(readDeploy(t, "grafana/fairsched.json")), &dash); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile("`(fairsched_[a-z0-9_]+)").FindAllStringSubmatch(string(doc), -1) {
		known[m[1]] = true
	}
	metric := regexp.MustCompile(`\b((?:fairsched|go|process)_[a-z0-9_]+)`)
	n := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metric.FindAllString(tg.Expr, -1) {
				n++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if strings.HasPrefix(base, "fairsched_") && !known[base] {
					t.Errorf("panel %q queries %s, which docs/operations.md does not document", p.Title, m)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no metric in the dashboard")
	}
}
