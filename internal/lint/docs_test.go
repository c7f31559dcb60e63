package lint

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairsched/fairsched/core/schedule"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the generated parts of docs/ instead of comparing them")

// Markers around the generated settings table in docs/configuration.md.
const (
	settingsBegin = "<!-- settings table: written by go test ./internal/lint -run TestConfigurationDoc -rewrite -->\n"
	settingsEnd   = "<!-- end of settings table -->\n"
)

// TestConfigurationDoc: the configuration reference in docs/configuration.md
// is the settings table of core/schedule, so that the docs say what the code
// does. -rewrite regenerates it.
func TestConfigurationDoc(t *testing.T) {
	path := filepath.Join(repoRoot(t), "docs", "configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(settingsBegin)), bytes.Index(doc, []byte(settingsEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: cannot find the markers %q and %q", path, settingsBegin, settingsEnd)
	}
	i += len(settingsBegin)
	want := schedule.AppendSettingsDoc(nil)
	if bytes.Equal(doc[i:j], want) {
		return
	}
	if !*rewrite {
		t.Fatalf("%s: the settings table differs from core/schedule's; run go test ./internal/lint -run TestConfigurationDoc -rewrite", path)
	}
	out := append(append(append([]byte{}, doc[:i]...), want...), doc[j:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
