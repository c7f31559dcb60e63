package lint

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/schedule"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the generated parts of docs/ instead of comparing them")

// generatedTables are the generated tables of docs/configuration.md: the
// Markdown between each pair of markers is the settings table of a core
// package.
var generatedTables = []struct {
	begin, end string
	owner      string // the package whose table it is, for the message
	gen        func(dst []byte) []byte
}{
	{
		begin: "<!-- fair-share settings table: written by go test ./internal/lint -run TestConfigurationDoc -rewrite -->\n",
		end:   "<!-- end of fair-share settings table -->\n",
		owner: "core/fairshare",
		gen:   fairshare.AppendSettingsDoc,
	},
	{
		begin: "<!-- settings table: written by go test ./internal/lint -run TestConfigurationDoc -rewrite -->\n",
		end:   "<!-- end of settings table -->\n",
		owner: "core/schedule",
		gen:   schedule.AppendSettingsDoc,
	},
}

// TestConfigurationDoc: the configuration reference in docs/configuration.md
// is the settings tables of core/fairshare and core/schedule, so that the
// docs say what the code does. -rewrite regenerates them.
func TestConfigurationDoc(t *testing.T) {
	path := filepath.Join(repoRoot(t), "docs", "configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, g := range generatedTables {
		i, j := bytes.Index(doc, []byte(g.begin)), bytes.Index(doc, []byte(g.end))
		if i < 0 || j < i {
			t.Fatalf("%s: cannot find the markers %q and %q", path, g.begin, g.end)
		}
		i += len(g.begin)
		want := g.gen(nil)
		if bytes.Equal(doc[i:j], want) {
			continue
		}
		if !*rewrite {
			t.Errorf("%s: the settings table differs from %s's; run go test ./internal/lint -run TestConfigurationDoc -rewrite", path, g.owner)
			continue
		}
		doc = append(append(append([]byte{}, doc[:i]...), want...), doc[j:]...)
		changed = true
	}
	if changed {
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
